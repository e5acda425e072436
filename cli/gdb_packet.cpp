#include "cli/gdb_packet.hpp"

#include <algorithm>
#include <charconv>

namespace vx::cli::gdb {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A whole string of hex digits as an unsigned number no larger than max.
std::optional<uint64_t> parse_hex(std::string_view s, uint64_t max = UINT32_MAX) {
  if (s.empty() || s.size() > 16) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || end != s.data() + s.size() || v > max) return std::nullopt;
  return v;
}

std::optional<ThreadRef> parse_thread(std::string_view s) {
  if (s == "-1") return ThreadRef{-1};
  auto v = parse_hex(s, INT64_MAX);
  if (!v) return std::nullopt;
  return ThreadRef{int64_t(*v)};
}

bool starts(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// "ADDR,LEN" into two numbers.
bool parse_addr_len(std::string_view s, uint32_t* addr, uint32_t* len) {
  size_t comma = s.find(',');
  if (comma == std::string_view::npos) return false;
  auto a = parse_hex(s.substr(0, comma)), l = parse_hex(s.substr(comma + 1));
  if (!a || !l) return false;
  *addr = uint32_t(*a);
  *len = uint32_t(*l);
  return true;
}

Request parse_vcont(std::string_view p) {
  // vCont;ACTION[:TID];ACTION[:TID]...
  VCont v;
  std::string_view rest = p.substr(5);
  if (rest.empty()) return Malformed{"vCont without actions"};
  while (!rest.empty()) {
    if (rest[0] != ';') return Malformed{"vCont: expected ';'"};
    rest.remove_prefix(1);
    size_t end = rest.find(';');
    std::string_view item = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
    if (item.empty()) return Malformed{"vCont: an empty action"};
    VContAction a;
    a.action = item[0];
    size_t colon = item.find(':');
    std::string_view head = item.substr(0, colon);
    switch (a.action) {
      case 'c':
      case 's':
      case 't':
        if (head.size() != 1) return Malformed{"vCont: bad action '" + std::string(head) + "'"};
        break;
      case 'C':
      case 'S':
        // The signal is ignored: a kernel has no handlers to deliver it to.
        if (head.size() != 3 || !parse_hex(head.substr(1), 255)) return Malformed{"vCont: bad signal action"};
        a.action = char(a.action - 'A' + 'a');
        break;
      case 'r': {
        uint32_t lo = 0, hi = 0;
        if (!parse_addr_len(head.substr(1), &lo, &hi)) return Malformed{"vCont: bad range-step action"};
        break;
      }
      default: return Malformed{"vCont: unknown action '" + std::string(head) + "'"};
    }
    if (colon != std::string_view::npos) {
      auto t = parse_thread(item.substr(colon + 1));
      if (!t) return Malformed{"vCont: bad thread id"};
      a.thread = t;
    }
    v.actions.push_back(a);
  }
  return v;
}

}  // namespace

uint8_t checksum(std::string_view bytes) {
  uint8_t s = 0;
  for (char c : bytes) s = uint8_t(s + uint8_t(c));
  return s;
}

std::string to_hex(std::string_view bytes) {
  static const char* d = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    out += d[uint8_t(c) >> 4];
    out += d[uint8_t(c) & 15];
  }
  return out;
}

std::string to_hex(const std::vector<uint8_t>& bytes) {
  return to_hex(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2) return std::nullopt;
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = hex_digit(hex[i]), lo = hex_digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += char(hi << 4 | lo);
  }
  return out;
}

std::string hex_u32_le(uint32_t v) {
  const char b[4] = {char(v), char(v >> 8), char(v >> 16), char(v >> 24)};
  return to_hex(std::string_view(b, 4));
}

std::string escape_binary(std::string_view data) {
  std::string out;
  out.reserve(data.size());
  for (char c : data) {
    if (c == '$' || c == '#' || c == '}' || c == '*') {
      out += '}';
      out += char(c ^ 0x20);
    } else {
      out += c;
    }
  }
  return out;
}

std::string frame(std::string_view payload, bool escape) {
  std::string body = escape ? escape_binary(payload) : std::string(payload);
  char tail[4];
  static const char* d = "0123456789abcdef";
  uint8_t s = checksum(body);
  tail[0] = '#';
  tail[1] = d[s >> 4];
  tail[2] = d[s & 15];
  return "$" + body + std::string(tail, 3);
}

std::string encode_runs(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    size_t run = 1;
    while (i + run < text.size() && text[i + run] == c) ++run;
    out += c;
    size_t more = run - 1;  // copies after the first
    i += run;
    if (c == '$' || c == '#' || c == '}' || c == '*') {
      out.append(more, c);
      continue;
    }
    while (more >= 3) {
      // The count character is n + 29, at most '~' (97 copies), never '#' (6) or '$' (7).
      size_t n = std::min<size_t>(more, 97);
      if (n == 6 || n == 7) n = 5;
      out += '*';
      out += char(n + 29);
      more -= n;
      if (more) {
        out += c;  // the next run starts from a copy of its own
        --more;
      }
    }
    out.append(more, c);
  }
  return out;
}

std::string frame_reply(std::string_view payload, bool binary) {
  return binary ? frame(payload, true) : frame(encode_runs(payload));
}

std::string reply_text(std::string_view message) {
  std::string out(message);
  for (char& c : out)
    if (c == '$' || c == '#' || c == '}' || c == '*') c = '?';
  return out;
}

std::optional<std::string> decode_payload(std::string_view raw, std::string* error) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '}') {
      if (i + 1 == raw.size()) {
        *error = "an escape character (0x7d) ends the packet";
        return std::nullopt;
      }
      out += char(raw[++i] ^ 0x20);
    } else if (c == '*') {
      if (out.empty() || i + 1 == raw.size()) {
        *error = "a run-length marker (0x2a) with nothing to repeat";
        return std::nullopt;
      }
      int n = int(uint8_t(raw[++i])) - 29;
      // gdb's encoder never emits counts that would read as '#' or '$', and at most 97 repeats.
      if (n < 3 || n > 97) {
        *error = "a run length count out of range";
        return std::nullopt;
      }
      out.append(size_t(n), out.back());
    } else {
      out += c;
    }
  }
  return out;
}

void PacketReader::feed(std::string_view bytes, std::vector<PacketEvent>* out) {
  for (char c : bytes) {
    switch (state_) {
      case State::Idle:
        if (c == '$') {
          state_ = State::Body;
          raw_.clear();
          sum_ = 0;
          overflow_ = false;
        } else if (c == '\x03') {
          out->push_back({PacketEvent::Interrupt, {}});
        } else if (c == '+') {
          out->push_back({PacketEvent::Ack, {}});
        } else if (c == '-') {
          out->push_back({PacketEvent::Nack, {}});
        }
        break;
      case State::Body:
        if (c == '#') {
          state_ = State::Check1;
        } else {
          sum_ = uint8_t(sum_ + uint8_t(c));
          if (raw_.size() < kMaxPacket)
            raw_ += c;
          else
            overflow_ = true;
        }
        break;
      case State::Check1:
        check_ = hex_digit(c);
        state_ = State::Check2;
        if (check_ < 0) {
          state_ = State::Idle;
          out->push_back({PacketEvent::BadPacket, "a checksum that is not hex"});
        }
        break;
      case State::Check2: {
        state_ = State::Idle;
        int lo = hex_digit(c);
        if (lo < 0) {
          out->push_back({PacketEvent::BadPacket, "a checksum that is not hex"});
          break;
        }
        if (uint8_t(check_ << 4 | lo) != sum_) {
          out->push_back({PacketEvent::BadPacket, "a wrong checksum"});
          break;
        }
        if (overflow_) {
          out->push_back({PacketEvent::BadPacket, "a packet longer than " + std::to_string(kMaxPacket) + " bytes"});
          break;
        }
        std::string error;
        auto p = decode_payload(raw_, &error);
        if (!p)
          out->push_back({PacketEvent::BadPacket, error});
        else
          out->push_back({PacketEvent::Packet, std::move(*p)});
        break;
      }
    }
  }
}

Request parse_request(std::string_view p) {
  if (p.empty()) return Unknown{""};
  switch (p[0]) {
    case '?': return p.size() == 1 ? Request(HaltReason{}) : Request(Malformed{"'?' takes no arguments"});
    case 'g': return p.size() == 1 ? Request(ReadRegisters{}) : Request(Malformed{"'g' takes no arguments"});
    case 'G': {
      auto b = from_hex(p.substr(1));
      if (!b) return Malformed{"'G': the register data is not hex"};
      return WriteRegisters{*b};
    }
    case 'p': {
      auto r = parse_hex(p.substr(1));
      if (!r) return Malformed{"'p': bad register number"};
      return ReadRegister{uint32_t(*r)};
    }
    case 'P': {
      size_t eq = p.find('=');
      if (eq == std::string_view::npos) return Malformed{"'P' without '='"};
      auto r = parse_hex(p.substr(1, eq - 1));
      auto b = from_hex(p.substr(eq + 1));
      if (!r || !b) return Malformed{"'P': bad register number or value"};
      return WriteRegister{uint32_t(*r), *b};
    }
    case 'm': {
      ReadMemory m;
      if (!parse_addr_len(p.substr(1), &m.addr, &m.len)) return Malformed{"'m' expects ADDR,LENGTH"};
      return m;
    }
    case 'M':
    case 'X': {
      size_t colon = p.find(':');
      uint32_t addr = 0, len = 0;
      if (colon == std::string_view::npos || !parse_addr_len(p.substr(1, colon - 1), &addr, &len))
        return Malformed{std::string(1, p[0]) + " expects ADDR,LENGTH:DATA"};
      std::string data;
      if (p[0] == 'M') {
        auto b = from_hex(p.substr(colon + 1));
        if (!b) return Malformed{"'M': the data is not hex"};
        data = *b;
      } else {
        data = std::string(p.substr(colon + 1));  // already unescaped by the framing
      }
      if (data.size() != len) return Malformed{"the data's length is not LENGTH"};
      return WriteMemory{addr, data};
    }
    case 'H': {
      if (p.size() < 3 || (p[1] != 'g' && p[1] != 'c')) return Malformed{"'H' expects Hg or Hc and a thread"};
      auto t = parse_thread(p.substr(2));
      if (!t) return Malformed{"'H': bad thread id"};
      return SetThread{p[1], *t};
    }
    case 'T': {
      auto t = parse_thread(p.substr(1));
      if (!t) return Malformed{"'T': bad thread id"};
      return ThreadAlive{*t};
    }
    case 'c': return Continue{};  // "c ADDR" is accepted; the address is ignored (gdb never sends one)
    case 's': return Step{};
    case 'k': return Kill{};
    case 'D': return Detach{};
    case 'b':
      if (p == "bs") return ReverseStep{};
      if (p == "bc") return ReverseContinue{};
      return Unknown{std::string(p)};
    case 'Z':
    case 'z': {
      // Ztype,addr,kind (conditions and commands after ';' are not supported: we do not say so in qSupported)
      Breakpoint b;
      b.insert = p[0] == 'Z';
      if (p.size() < 2 || p[1] < '0' || p[1] > '4' || (p.size() > 2 && p[2] != ',')) return Unknown{std::string(p)};
      b.type = p[1] - '0';
      if (p.size() < 3) return Malformed{"Z/z expects TYPE,ADDR,KIND"};
      std::string_view rest = p.substr(3);
      rest = rest.substr(0, rest.find(';'));
      if (!parse_addr_len(rest, &b.addr, &b.kind)) return Malformed{"Z/z expects TYPE,ADDR,KIND"};
      return b;
    }
    case 'v':
      if (p == "vCont?") return VContQuery{};
      if (starts(p, "vCont;") || p == "vCont") return parse_vcont(p);
      if (starts(p, "vKill")) return VKill{};
      return Unknown{std::string(p)};
    case 'q':
      if (starts(p, "qSupported")) {
        QSupported q;
        if (p.size() > 10) {
          if (p[10] != ':') return Unknown{std::string(p)};
          std::string_view rest = p.substr(11);
          while (!rest.empty()) {
            size_t semi = rest.find(';');
            q.features.emplace_back(rest.substr(0, semi));
            if (semi == std::string_view::npos) break;
            rest.remove_prefix(semi + 1);
          }
        }
        return q;
      }
      if (p == "qfThreadInfo") return ThreadInfoFirst{};
      if (p == "qsThreadInfo") return ThreadInfoNext{};
      if (p == "qC") return CurrentThread{};
      if (starts(p, "qAttached")) return Attached{};
      if (starts(p, "qThreadExtraInfo,")) {
        auto t = parse_thread(p.substr(17));
        if (!t) return Malformed{"qThreadExtraInfo: bad thread id"};
        return ThreadExtraInfo{*t};
      }
      if (starts(p, "qRcmd,")) {
        auto c = from_hex(p.substr(6));
        if (!c) return Malformed{"qRcmd: the command is not hex"};
        return Monitor{*c};
      }
      for (const char* object : {"features", "exec-file"}) {
        const std::string prefix = std::string("qXfer:") + object + ":read:";
        if (!starts(p, prefix)) continue;
        std::string_view rest = p.substr(prefix.size());
        size_t colon = rest.find(':');
        XferRead x;
        x.object = object;
        if (colon == std::string_view::npos || !parse_addr_len(rest.substr(colon + 1), &x.offset, &x.length))
          return Malformed{prefix + " expects ANNEX:OFFSET,LENGTH"};
        x.annex = std::string(rest.substr(0, colon));
        return x;
      }
      return Unknown{std::string(p)};
    case 'Q':
      if (p == "QStartNoAckMode") return StartNoAck{};
      return Unknown{std::string(p)};
    default: return Unknown{std::string(p)};
  }
}

}  // namespace vx::cli::gdb
