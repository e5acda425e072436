#include "cli/launch_file.hpp"

#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "cli/kernel_symbols.hpp"
#include "device/input_file.hpp"
#include "engine/symbols.hpp"

namespace vx::cli {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Thrown inside the parser; becomes "NAME: PATH: MESSAGE".
struct LaunchError {
  std::string path, message;
};

[[noreturn]] void fail(const std::string& path, const std::string& message) { throw LaunchError{path, message}; }

std::string json_quote(const std::string& s) { return json(s).dump(); }

const char* type_name(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a non-integer number";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    default: return "an unexpected value";
  }
}

// Unknown keys are errors: a typo must not pass silently.
void check_keys(const json& obj, const std::string& path, std::initializer_list<const char*> allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || it.key() == a;
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      fail(path.empty() ? it.key() : path + "." + it.key(), "unknown key (expected one of: " + list + ")");
    }
  }
}

const json& require_object(const json& j, const std::string& path) {
  if (!j.is_object()) fail(path, std::string("must be an object, not ") + type_name(j));
  return j;
}

uint64_t get_unsigned(const json& j, const std::string& path, uint64_t max) {
  if (j.is_number_integer() && !j.is_number_unsigned()) fail(path, "must not be negative");
  if (!j.is_number_unsigned()) fail(path, std::string("must be an unsigned integer, not ") + type_name(j));
  uint64_t v = j.get<uint64_t>();
  if (v > max) fail(path, std::to_string(v) + " is larger than " + std::to_string(max));
  return v;
}

uint32_t get_u32(const json& j, const std::string& path) { return uint32_t(get_unsigned(j, path, UINT32_MAX)); }

std::string get_string(const json& j, const std::string& path) {
  if (!j.is_string()) fail(path, std::string("must be a string, not ") + type_name(j));
  std::string s = j.get<std::string>();
  if (s.empty()) fail(path, "must not be empty");
  return s;
}

std::array<uint32_t, 3> get_dims(const json& j, const std::string& path) {
  if (!j.is_array() || j.empty() || j.size() > 3)
    fail(path, "must be an array of 1 to 3 positive integers [X, Y, Z] (missing dimensions are 1)");
  std::array<uint32_t, 3> d{1, 1, 1};
  for (size_t i = 0; i < j.size(); ++i) {
    std::string p = path + "[" + std::to_string(i) + "]";
    d[i] = get_u32(j[i], p);
    if (d[i] == 0) fail(p, "dimensions must be at least 1");
  }
  return d;
}

std::string resolve_path(const std::string& base_dir, const std::string& p) {
  fs::path fp(p);
  if (fp.is_absolute() || base_dir.empty()) return fp.lexically_normal().string();
  return (fs::path(base_dir) / fp).lexically_normal().string();
}

// Reads a whole file (device/input_file.hpp: regular files only, size capped before reading).
Result<std::vector<uint8_t>> read_file(const std::string& path, uint64_t max_bytes = kMaxDataInputBytes) {
  auto bytes = read_input_file(path, max_bytes);
  if (!bytes) return make_error("cannot read " + bytes.error().message);
  return bytes;
}

// "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error ..." -> (3, 5, "syntax
// error ..."). A plain scan: a regex over a message holding a long token can exhaust the stack.
std::optional<std::tuple<std::string, std::string, std::string>> split_json_error(const std::string& what) {
  const size_t at = what.find("at line ");
  if (at == std::string::npos) return std::nullopt;
  size_t i = at + 8, j = i;
  while (j < what.size() && std::isdigit(static_cast<unsigned char>(what[j]))) ++j;
  if (j == i || what.compare(j, 9, ", column ") != 0) return std::nullopt;
  const std::string line = what.substr(i, j - i);
  i = j + 9;
  j = i;
  while (j < what.size() && std::isdigit(static_cast<unsigned char>(what[j]))) ++j;
  if (j == i || what.compare(j, 2, ": ") != 0) return std::nullopt;
  std::string rest = what.substr(j + 2);
  if (rest.size() > 200) rest = rest.substr(0, 200) + "...";
  return std::tuple{line, what.substr(i, j - i), rest};
}

// max_bytes: the buffer's size when it has one (a larger file is an error, refused before it is read).
void parse_init(const json& j, const std::string& path, const std::string& base_dir, uint64_t max_bytes,
                LaunchBuffer& b) {
  if (j.is_string()) {
    if (j.get<std::string>() != "zeros")
      fail(path, "unknown initializer " + j.dump() + " (expected \"zeros\" or an object with pattern, random or file)");
    b.init = LaunchBuffer::Init::Zeros;
    return;
  }
  if (!j.is_object() || j.size() != 1)
    fail(path, "must be \"zeros\" or an object with exactly one of pattern, random, file");
  check_keys(j, path, {"pattern", "random", "file"});
  if (j.contains("pattern")) {
    const json& p = j["pattern"];
    std::string pp = path + ".pattern";
    if (!p.is_array() || p.empty()) fail(pp, "must be a non-empty array of u32 words");
    for (size_t i = 0; i < p.size(); ++i) b.pattern.push_back(get_u32(p[i], pp + "[" + std::to_string(i) + "]"));
    b.init = LaunchBuffer::Init::Pattern;
  } else if (j.contains("random")) {
    b.seed = get_unsigned(j["random"], path + ".random", UINT64_MAX);
    b.init = LaunchBuffer::Init::Random;
  } else {
    std::string name = get_string(j["file"], path + ".file");
    b.file = resolve_path(base_dir, name);
    auto bytes = read_file(b.file, max_bytes);
    if (!bytes) fail(path + ".file", bytes.error().message);
    b.file_bytes = std::move(bytes).value();
    b.init = LaunchBuffer::Init::File;
  }
}

std::string hex_addr(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

LaunchBuffer parse_buffer(const json& j, const std::string& path, const std::string& base_dir) {
  require_object(j, path);
  check_keys(j, path, {"name", "size", "address", "init", "dump", "compare"});
  LaunchBuffer b;
  if (!j.contains("name")) fail(path, "missing \"name\"");
  b.name = get_string(j["name"], path + ".name");
  // The size first: it caps the files the buffer names.
  if (j.contains("size")) {
    b.size = get_u32(j["size"], path + ".size");
    if (b.size == 0) fail(path + ".size", "must be greater than 0");
  }
  if (j.contains("init"))
    parse_init(j["init"], path + ".init", base_dir, j.contains("size") ? b.size : kMaxDataInputBytes, b);
  if (j.contains("size")) {
    // A file larger than the size was refused above, before it was read.
  } else if (b.init == LaunchBuffer::Init::File) {
    if (b.file_bytes.empty()) fail(path + ".init.file", b.file + " is empty: give the buffer a size");
    if (b.file_bytes.size() > UINT32_MAX) fail(path + ".init.file", b.file + " is larger than 4 GiB");
    b.size = uint32_t(b.file_bytes.size());
  } else {
    fail(path, "missing \"size\" (only a buffer initialized from a file may omit it)");
  }
  bool words = b.init == LaunchBuffer::Init::Pattern || b.init == LaunchBuffer::Init::Random;
  if (words && b.size % 4 != 0)
    fail(path + ".size", std::to_string(b.size) + " is not a multiple of 4 (the initializer writes u32 words)");
  if (j.contains("address")) {
    // A number, or a string in hex ("0x20000"): JSON has no hex literals.
    const json& a = j["address"];
    const std::string ap = path + ".address";
    uint64_t addr = 0;
    if (a.is_string()) {
      const std::string t = a.get<std::string>();
      size_t used = 0;
      bool ok = t.size() > 2 && (t.rfind("0x", 0) == 0 || t.rfind("0X", 0) == 0) && t.size() <= 10;
      if (ok) {
        try {
          addr = std::stoull(t.substr(2), &used, 16);
        } catch (const std::exception&) {
          ok = false;
        }
      }
      if (!ok || used != t.size() - 2) fail(ap, json_quote(t) + " is not a 32-bit hex address such as \"0x20000\"");
    } else {
      addr = get_u32(a, ap);
    }
    if (addr < 0x10000) fail(ap, hex_addr(addr) + " lies in the I/O region (below 0x10000)");
    if (addr % 4 != 0) fail(ap, hex_addr(addr) + " is not a multiple of 4");
    if (addr + b.size > 0x100000000ull)
      fail(ap, hex_addr(addr) + " + " + std::to_string(b.size) + " bytes runs past the 32-bit address space");
    b.address = uint32_t(addr);
  }
  if (j.contains("dump")) b.dump = resolve_path(base_dir, get_string(j["dump"], path + ".dump"));
  if (j.contains("compare")) {
    b.compare = resolve_path(base_dir, get_string(j["compare"], path + ".compare"));
    auto bytes = read_file(b.compare, b.size);
    if (!bytes) fail(path + ".compare", bytes.error().message);
    if (bytes->size() != b.size)  // smaller (a larger one was refused before it was read)
      fail(path + ".compare",
           b.compare + " has " + std::to_string(bytes->size()) + " bytes, the buffer " + std::to_string(b.size));
    b.expected = std::move(bytes).value();
  }
  return b;
}

LaunchArg parse_arg(const json& j, const std::string& path, const std::vector<LaunchBuffer>& buffers) {
  if (!j.is_object() || j.size() != 1)
    fail(path, "must be an object with exactly one of buffer, u32, i32, f32 (e.g. {\"u32\": 1024})");
  check_keys(j, path, {"buffer", "u32", "i32", "f32"});
  LaunchArg a;
  if (j.contains("buffer")) {
    std::string name = get_string(j["buffer"], path + ".buffer");
    for (size_t i = 0; i < buffers.size(); ++i)
      if (buffers[i].name == name) {
        a.kind = LaunchArg::Kind::Buffer;
        a.buffer = i;
        return a;
      }
    fail(path + ".buffer", "no buffer named " + json_quote(name));
  }
  a.kind = LaunchArg::Kind::Word;
  if (j.contains("u32")) {
    a.word = get_u32(j["u32"], path + ".u32");
  } else if (j.contains("i32")) {
    const json& v = j["i32"];
    if (!v.is_number_integer()) fail(path + ".i32", std::string("must be an integer, not ") + type_name(v));
    bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(INT32_MAX)
                                       : v.get<int64_t>() >= INT32_MIN && v.get<int64_t>() <= INT32_MAX;
    if (!fits) fail(path + ".i32", v.dump() + " does not fit in 32 bits");
    a.word = uint32_t(int32_t(v.get<int64_t>()));
  } else {
    const json& v = j["f32"];
    if (!v.is_number()) fail(path + ".f32", std::string("must be a number, not ") + type_name(v));
    a.word = std::bit_cast<uint32_t>(float(v.get<double>()));
  }
  return a;
}

LaunchFile parse_document(const json& doc, const std::string& base_dir) {
  LaunchFile lf;
  if (!doc.is_object()) fail("(top level)", std::string("must be an object, not ") + type_name(doc));
  check_keys(doc, "", {"grid", "block", "lmem", "entry", "buffers", "args"});
  if (doc.contains("grid")) lf.grid = get_dims(doc["grid"], "grid");
  if (doc.contains("block")) lf.block = get_dims(doc["block"], "block");
  if (doc.contains("lmem")) lf.lmem = get_u32(doc["lmem"], "lmem");
  if (doc.contains("entry")) lf.entry = get_string(doc["entry"], "entry");
  if (doc.contains("buffers")) {
    const json& bs = doc["buffers"];
    if (!bs.is_array()) fail("buffers", std::string("must be an array, not ") + type_name(bs));
    std::map<std::string, size_t> seen;
    for (size_t i = 0; i < bs.size(); ++i) {
      std::string p = "buffers[" + std::to_string(i) + "]";
      LaunchBuffer b = parse_buffer(bs[i], p, base_dir);
      if (auto it = seen.find(b.name); it != seen.end())
        fail(p + ".name", json_quote(b.name) + " is already the name of buffers[" + std::to_string(it->second) + "]");
      seen[b.name] = i;
      if (b.address)
        for (size_t k = 0; k < lf.buffers.size(); ++k) {
          const LaunchBuffer& o = lf.buffers[k];
          if (o.address && *b.address < uint64_t(*o.address) + o.size && *o.address < uint64_t(*b.address) + b.size)
            fail(p + ".address", hex_addr(*b.address) + ".." + hex_addr(uint64_t(*b.address) + b.size) +
                                     " overlaps buffers[" + std::to_string(k) + "] (" + json_quote(o.name) + ") at " +
                                     hex_addr(*o.address));
        }
      lf.buffers.push_back(std::move(b));
    }
  }
  if (doc.contains("args")) {
    const json& as = doc["args"];
    if (!as.is_array()) fail("args", std::string("must be an array, not ") + type_name(as));
    lf.args.emplace();
    for (size_t i = 0; i < as.size(); ++i)
      lf.args->push_back(parse_arg(as[i], "args[" + std::to_string(i) + "]", lf.buffers));
  }
  return lf;
}

}  // namespace

Result<LaunchFile> parse_launch_file(const std::string& text, const std::string& name, const std::string& base_dir) {
  json doc;
  // Duplicate keys would silently keep the last value: they are errors, like unknown keys.
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  // Where the parser is, as the errors name it (buffers[0].size): an error the parser throws
  // itself (a number too large) says where it happened.
  struct Level {
    bool array = false;
    std::string key;
    size_t index = 0;
  };
  std::vector<Level> at;
  auto path = [&]() {
    std::string p;
    for (const Level& l : at) p += l.array ? "[" + std::to_string(l.index) + "]" : (p.empty() ? "" : ".") + l.key;
    return p.empty() ? std::string("(top level)") : p;
  };
  auto element_done = [&]() {
    if (!at.empty() && at.back().array) ++at.back().index;
  };
  auto cb = [&](int, json::parse_event_t ev, json& parsed) {
    using E = json::parse_event_t;
    if (ev == E::object_start) keys.emplace_back();
    if (ev == E::object_end && !keys.empty()) keys.pop_back();
    if (ev == E::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    if (ev == E::object_start || ev == E::array_start) at.push_back(Level{ev == E::array_start, "", 0});
    if (ev == E::key && !at.empty()) at.back().key = parsed.get<std::string>();
    if (ev == E::object_end || ev == E::array_end) {
      if (!at.empty()) at.pop_back();
      element_done();
    }
    if (ev == E::value) element_done();
    return true;
  };
  try {
    doc = json::parse(text, cb, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    if (auto parts = split_json_error(what))
      return make_error(name + ":" + std::get<0>(*parts) + ":" + std::get<1>(*parts) + ": " + std::get<2>(*parts));
    return make_error(name + ": byte " + std::to_string(e.byte) + ": " + what.substr(0, 300));
  } catch (const json::exception& e) {
    // Every other JSON error (a number too large for a double, ...) in one place, without the
    // library's "[json.exception.NAME.ID] " prefix.
    std::string what = e.what();
    if (what.rfind("[json.exception.", 0) == 0)
      if (size_t close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
    return make_error(name + ": " + path() + ": " + what.substr(0, 300));
  }
  if (!duplicate.empty()) return make_error(name + ": duplicate key " + json_quote(duplicate));
  try {
    LaunchFile lf = parse_document(doc, base_dir);
    lf.name = name;
    return lf;
  } catch (const LaunchError& e) {
    return make_error(name + ": " + e.path + ": " + e.message);
  } catch (const json::exception& e) {
    return make_error(name + ": " + std::string(e.what()).substr(0, 300));
  }
}

Result<LaunchFile> load_launch_file(const std::string& path) {
  auto bytes = read_file(path, kMaxTextInputBytes);
  if (!bytes) return make_error("--launch: " + bytes.error().message);
  std::string text(bytes->begin(), bytes->end());
  return parse_launch_file(text, path, fs::path(path).parent_path().string());
}

std::vector<uint32_t> splitmix64_words(uint64_t seed, size_t count) {
  std::vector<uint32_t> out(count);
  uint64_t state = seed;
  for (size_t i = 0; i < count; ++i) {
    state += 0x9e3779b97f4a7c15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    out[i] = uint32_t(z);
  }
  return out;
}

std::vector<uint8_t> initial_contents(const LaunchBuffer& b) {
  std::vector<uint8_t> bytes(b.size, 0);
  auto put_words = [&](const std::vector<uint32_t>& words, bool repeat) {
    for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
      size_t k = i / 4;
      uint32_t w = repeat ? words[k % words.size()] : words[k];
      for (int s = 0; s < 4; ++s) bytes[i + s] = uint8_t(w >> (8 * s));
    }
  };
  switch (b.init) {
    case LaunchBuffer::Init::Zeros: break;
    case LaunchBuffer::Init::Pattern: put_words(b.pattern, true); break;
    case LaunchBuffer::Init::Random: put_words(splitmix64_words(b.seed, b.size / 4), false); break;
    case LaunchBuffer::Init::File: std::copy(b.file_bytes.begin(), b.file_bytes.end(), bytes.begin()); break;
  }
  return bytes;
}

Result<void> apply_launch_file(const LaunchFile& lf, const KernelImage& image, const engine::Symbols* symbols,
                               LaunchOverrides& ov) {
  if (!ov.grid) ov.grid = lf.grid;
  if (!ov.block) ov.block = lf.block;
  if (!ov.lmem) ov.lmem = lf.lmem;
  if (lf.entry && !ov.entry) {
    auto addr = resolve_entry(image, symbols, *lf.entry, lf.name + ": entry");
    if (!addr) return addr.error();
    ov.entry = *addr;
  }
  return {};
}

Result<PlacedLaunch> place_launch(HostRuntime& rt, const LaunchFile& lf) {
  PlacedLaunch p;
  p.buffer_addrs.resize(lf.buffers.size());
  // Buffers at fixed addresses are reserved first, so no allocation takes their place.
  for (bool fixed : {true, false}) {
    for (size_t i = 0; i < lf.buffers.size(); ++i) {
      const LaunchBuffer& b = lf.buffers[i];
      if (b.address.has_value() != fixed) continue;
      std::string where = lf.name + ": buffers[" + std::to_string(i) + "] (" + json_quote(b.name) + "): ";
      Result<uint32_t> addr = make_error("");
      if (fixed) {
        if (auto r = rt.driver().mem_reserve(*b.address, b.size); !r) return make_error(where + r.error().message);
        addr = *b.address;
      } else {
        addr = rt.alloc(b.size);
      }
      if (!addr) return make_error(where + addr.error().message);
      std::vector<uint8_t> bytes = initial_contents(b);
      if (auto r = rt.write(*addr, bytes); !r) return make_error(where + r.error().message);
      p.buffer_addrs[i] = *addr;
    }
  }
  if (lf.args) {
    if (lf.args->empty()) {
      p.arg_ptr = 0;
    } else {
      std::vector<uint8_t> block;
      for (const LaunchArg& a : *lf.args) {
        uint32_t w = a.kind == LaunchArg::Kind::Buffer ? p.buffer_addrs[a.buffer] : a.word;
        for (int s = 0; s < 4; ++s) block.push_back(uint8_t(w >> (8 * s)));
      }
      auto addr = rt.alloc(block.size());
      if (!addr) return make_error(lf.name + ": args: " + addr.error().message);
      if (auto r = rt.write(*addr, block); !r) return make_error(lf.name + ": args: " + r.error().message);
      p.arg_ptr = *addr;
    }
  }
  return p;
}

LaunchCheck finish_launch(const LaunchFile& lf, const PlacedLaunch& placed, const MemoryReader& read,
                          const std::function<void(const std::string&)>& report) {
  LaunchCheck result = LaunchCheck::Ok;
  for (size_t i = 0; i < lf.buffers.size(); ++i) {
    const LaunchBuffer& b = lf.buffers[i];
    if (b.dump.empty() && b.compare.empty()) continue;
    std::string where = lf.name + ": buffers[" + std::to_string(i) + "] (" + json_quote(b.name) + "): ";
    auto bytes = read(placed.buffer_addrs[i], b.size);
    if (!bytes) {
      report(where + "cannot read the buffer back: " + bytes.error().message);
      result = LaunchCheck::Failed;
      continue;
    }
    if (!b.dump.empty()) {
      FILE* f = std::fopen(b.dump.c_str(), "wb");
      bool ok = f && std::fwrite(bytes->data(), 1, bytes->size(), f) == bytes->size();
      int err = errno;
      if (f && std::fclose(f) != 0) ok = false;
      if (!ok) {
        report(where + "dump: cannot write " + b.dump + ": " + std::strerror(err));
        result = LaunchCheck::Failed;
      }
    }
    if (!b.compare.empty()) {
      for (size_t k = 0; k < b.size; ++k) {
        if ((*bytes)[k] == b.expected[k]) continue;
        char buf[128];
        std::snprintf(buf, sizeof buf, " at byte offset %zu (0x%zx): got 0x%02x, expected 0x%02x", k, k, (*bytes)[k],
                      b.expected[k]);
        report(where + "compare: differs from " + b.compare + buf);
        if (result == LaunchCheck::Ok) result = LaunchCheck::Mismatch;
        break;
      }
    }
  }
  return result;
}

bool has_checks(const LaunchFile& lf) {
  for (const LaunchBuffer& b : lf.buffers)
    if (!b.dump.empty() || !b.compare.empty()) return true;
  return false;
}

}  // namespace vx::cli
