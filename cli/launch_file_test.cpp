#include "cli/launch_file.hpp"

#include <bit>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace vx;
using namespace vx::cli;

namespace {

// A scratch directory with a few files for init.file / compare.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/vx_launch_test_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::vector<uint8_t>& bytes) const {
    std::ofstream out(path / name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return (path / name).string();
  }
};

std::string error_of(const std::string& text, const std::string& base = "") {
  auto r = parse_launch_file(text, "launch.json", base);
  REQUIRE_FALSE(r);
  return r.error().message;
}

}  // namespace

TEST_CASE("a full launch file parses", "[launch]") {
  TempDir dir;
  dir.write("in.bin", {1, 2, 3, 4, 5});
  dir.write("expected.bin", std::vector<uint8_t>(8, 0));
  auto r = parse_launch_file(R"({
    // comments are allowed
    "grid": [8], "block": [16, 2, 1], "lmem": 64, "entry": "saxpy",
    "buffers": [
      {"name": "a", "size": 16, "init": {"pattern": [1, 2, 3]}},
      {"name": "b", "size": 8, "init": {"random": 42}},
      {"name": "c", "size": 6, "init": "zeros"},
      {"name": "d", "init": {"file": "in.bin"}},
      {"name": "e", "size": 8, "init": {"file": "in.bin"}, "dump": "out.bin", "compare": "expected.bin"},
      {"name": "f", "size": 4}
    ],
    "args": [{"buffer": "b"}, {"u32": 1024}, {"i32": -1}, {"f32": 0.5}]
  })",
                             "launch.json", dir.path.string());
  REQUIRE(r);
  const LaunchFile& lf = *r;
  CHECK(lf.grid == std::array<uint32_t, 3>{8, 1, 1});
  CHECK(lf.block == std::array<uint32_t, 3>{16, 2, 1});
  CHECK(lf.lmem == 64u);
  CHECK(lf.entry == "saxpy");
  REQUIRE(lf.buffers.size() == 6);
  CHECK(initial_contents(lf.buffers[0]) == std::vector<uint8_t>{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0});
  auto words = splitmix64_words(42, 2);
  auto b = initial_contents(lf.buffers[1]);
  CHECK(b[0] == uint8_t(words[0]));
  CHECK(b[4] == uint8_t(words[1]));
  CHECK(initial_contents(lf.buffers[2]) == std::vector<uint8_t>(6, 0));
  CHECK(lf.buffers[3].size == 5);
  CHECK(initial_contents(lf.buffers[3]) == std::vector<uint8_t>{1, 2, 3, 4, 5});
  CHECK(initial_contents(lf.buffers[4]) == std::vector<uint8_t>{1, 2, 3, 4, 5, 0, 0, 0});
  CHECK(lf.buffers[4].dump == (dir.path / "out.bin").string());
  CHECK(lf.buffers[4].expected.size() == 8);
  CHECK(lf.buffers[5].init == LaunchBuffer::Init::Zeros);
  REQUIRE(lf.args);
  REQUIRE(lf.args->size() == 4);
  CHECK((*lf.args)[0].kind == LaunchArg::Kind::Buffer);
  CHECK((*lf.args)[0].buffer == 1);
  CHECK((*lf.args)[1].word == 1024u);
  CHECK((*lf.args)[2].word == 0xffffffffu);
  CHECK((*lf.args)[3].word == std::bit_cast<uint32_t>(0.5f));
}

TEST_CASE("splitmix64 gives the reference sequence", "[launch]") {
  // Reference: splitmix64 with state 0 (Vigna): first output 0xe220a8397b1dcdaf.
  auto w = splitmix64_words(0, 2);
  CHECK(w[0] == 0x7b1dcdafu);
  CHECK(w[1] == uint32_t(0x6e789e6aa1b965f4ull));
  CHECK(splitmix64_words(42, 8) == splitmix64_words(42, 8));
}

TEST_CASE("an empty document and absent args keep the image's defaults", "[launch]") {
  auto r = parse_launch_file("{}", "launch.json", "");
  REQUIRE(r);
  CHECK_FALSE(r->grid);
  CHECK_FALSE(r->entry);
  CHECK_FALSE(r->args);
  CHECK(r->buffers.empty());
}

TEST_CASE("launch file errors name the file and the JSON path", "[launch]") {
  CHECK(error_of("{\n  \"grid\": [1,\n}").rfind("launch.json:3:1: ", 0) == 0);
  CHECK(error_of("[1]") == "launch.json: (top level): must be an object, not an array");
  CHECK(error_of(R"({"gird": [1]})") ==
        "launch.json: gird: unknown key (expected one of: grid, block, lmem, entry, "
        "buffers, args)");
  CHECK(error_of(R"({"grid": [1], "grid": [2]})") == "launch.json: duplicate key \"grid\"");
  CHECK(error_of(R"({"grid": [0]})") == "launch.json: grid[0]: dimensions must be at least 1");
  CHECK(error_of(R"({"grid": [1, 2, 3, 4]})").find("grid: must be an array of 1 to 3") != std::string::npos);
  CHECK(error_of(R"({"lmem": -1})") == "launch.json: lmem: must not be negative");
  CHECK(error_of(R"({"lmem": 1.5})") == "launch.json: lmem: must be an unsigned integer, not a non-integer number");
  CHECK(error_of(R"({"lmem": 4294967296})") == "launch.json: lmem: 4294967296 is larger than 4294967295");
  CHECK(error_of(R"({"entry": ""})") == "launch.json: entry: must not be empty");
  CHECK(error_of(R"({"buffers": [{"size": 4}]})") == "launch.json: buffers[0]: missing \"name\"");
  CHECK(error_of(R"({"buffers": [{"name": "a"}]})") ==
        "launch.json: buffers[0]: missing \"size\" (only a buffer initialized from a file may omit it)");
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 0}]})") ==
        "launch.json: buffers[0].size: must be greater than 0");
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 6, "init": {"pattern": [1]}}]})") ==
        "launch.json: buffers[0].size: 6 is not a multiple of 4 (the initializer writes u32 words)");
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 8, "init": {"random": 1, "pattern": [1]}}]})") ==
        "launch.json: buffers[0].init: must be \"zeros\" or an object with exactly one of pattern, random, file");
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 8, "init": {"patern": [1]}}]})") ==
        "launch.json: buffers[0].init.patern: unknown key (expected one of: pattern, random, file)");
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 8, "init": "zero"}]})")
            .find("buffers[0].init: unknown "
                  "initializer \"zero\"") != std::string::npos);
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 8, "init": {"pattern": []}}]})") ==
        "launch.json: buffers[0].init.pattern: must be a non-empty array of u32 words");
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 8, "init": {"pattern": [1, "x"]}}]})") ==
        "launch.json: buffers[0].init.pattern[1]: must be an unsigned integer, not a string");
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 8, "colour": 1}]})") ==
        "launch.json: buffers[0].colour: unknown key (expected one of: name, size, address, init, dump, compare)");
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 8}, {"name": "a", "size": 4}]})") ==
        "launch.json: buffers[1].name: \"a\" is already the name of buffers[0]");
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 4}], "args": [{"buffer": "b"}]})") ==
        "launch.json: args[0].buffer: no buffer named \"b\"");
  CHECK(error_of(R"({"args": [{"u32": 1, "f32": 2}]})") ==
        "launch.json: args[0]: must be an object with exactly one of buffer, u32, i32, f32 (e.g. {\"u32\": 1024})");
  CHECK(error_of(R"({"args": [{"u64": 1}]})") ==
        "launch.json: args[0].u64: unknown key (expected one of: buffer, u32, i32, f32)");
  CHECK(error_of(R"({"args": [{"i32": 2147483648}]})") ==
        "launch.json: args[0].i32: 2147483648 does not fit in 32 bits");
  CHECK(error_of(R"({"args": [{"f32": "x"}]})") == "launch.json: args[0].f32: must be a number, not a string");
  CHECK(error_of(R"({"args": {}})") == "launch.json: args: must be an array, not an object");
}

TEST_CASE("launch file file errors", "[launch]") {
  TempDir dir;
  dir.write("big.bin", std::vector<uint8_t>(12, 7));
  dir.write("empty.bin", {});
  std::string base = dir.path.string();
  std::string missing = (dir.path / "input.bin").string();
  CHECK(error_of(R"({"buffers": [{"name": "d", "init": {"file": "input.bin"}}]})", base) ==
        "launch.json: buffers[0].init.file: cannot read " + missing + ": cannot open: No such file or directory");
  CHECK(error_of(R"({"buffers": [{"name": "d", "size": 8, "init": {"file": "big.bin"}}]})", base) ==
        "launch.json: buffers[0].init.file: cannot read " + (dir.path / "big.bin").string() +
            ": is 12 bytes, more than the 8 this input may have");
  CHECK(error_of(R"({"buffers": [{"name": "d", "init": {"file": "empty.bin"}}]})", base) ==
        "launch.json: buffers[0].init.file: " + (dir.path / "empty.bin").string() +
            " is empty: give the buffer a size");
  CHECK(error_of(R"({"buffers": [{"name": "d", "size": 8, "compare": "big.bin"}]})", base) ==
        "launch.json: buffers[0].compare: cannot read " + (dir.path / "big.bin").string() +
            ": is 12 bytes, more than the 8 this input may have");
  CHECK(error_of(R"({"buffers": [{"name": "d", "size": 16, "compare": "big.bin"}]})", base) ==
        "launch.json: buffers[0].compare: " + (dir.path / "big.bin").string() + " has 12 bytes, the buffer 16");
  // A huge file (sparse here) named by a small buffer is refused by its size, before it is read.
  dir.write("huge.bin", {});
  std::filesystem::resize_file(dir.path / "huge.bin", 512u << 20);
  for (const std::string json : {R"({"buffers": [{"name": "d", "size": 8, "init": {"file": "huge.bin"}}]})",
                                 R"({"buffers": [{"name": "d", "size": 8, "compare": "huge.bin"}]})"}) {
    INFO(json);
    CHECK_THAT(error_of(json, base), Catch::Matchers::Contains("is 536870912 bytes, more than the 8 "));
  }
  CHECK(error_of(R"({"buffers": [{"name": "d", "size": 8, "compare": "nope.bin"}]})", base)
            .find("buffers[0].compare: cannot read") != std::string::npos);
}

TEST_CASE("finish_launch dumps and reports the first differing byte", "[launch]") {
  TempDir dir;
  dir.write("expected.bin", {1, 2, 3, 4});
  auto r =
      parse_launch_file(R"({"buffers": [{"name": "out", "size": 4, "dump": "out.bin", "compare": "expected.bin"}]})",
                        "launch.json", dir.path.string());
  REQUIRE(r);
  PlacedLaunch placed;
  placed.buffer_addrs = {0x1000};
  std::vector<std::string> messages;
  auto report = [&](const std::string& m) { messages.push_back(m); };
  auto same = [](uint32_t, uint32_t) -> Result<std::vector<uint8_t>> { return std::vector<uint8_t>{1, 2, 3, 4}; };
  CHECK(finish_launch(*r, placed, same, report) == LaunchCheck::Ok);
  CHECK(messages.empty());
  CHECK(std::filesystem::file_size(dir.path / "out.bin") == 4);
  auto differ = [](uint32_t, uint32_t) -> Result<std::vector<uint8_t>> { return std::vector<uint8_t>{1, 2, 9, 4}; };
  CHECK(finish_launch(*r, placed, differ, report) == LaunchCheck::Mismatch);
  REQUIRE(messages.size() == 1);
  CHECK(messages[0] == "launch.json: buffers[0] (\"out\"): compare: differs from " +
                           (dir.path / "expected.bin").string() + " at byte offset 2 (0x2): got 0x09, expected 0x03");
}

TEST_CASE("a buffer with an address is reserved there, before the others are allocated", "[launch]") {
  auto r = parse_launch_file(R"({"buffers": [{"name": "a", "size": 8, "init": {"pattern": [7]}},
                                            {"name": "b", "size": 4096, "address": "0x10000", "init": {"pattern": [9]}},
                                            {"name": "c", "size": 4, "address": 1048576}],
                                "args": [{"buffer": "b"}, {"buffer": "a"}]})",
                             "launch.json", ".");
  REQUIRE(r);
  REQUIRE(r->buffers[1].address);
  CHECK(*r->buffers[1].address == 0x10000u);
  CHECK(*r->buffers[2].address == 0x100000u);
  CHECK_FALSE(r->buffers[0].address);
  auto d = open_model_device(DeviceConfig{}, RunOptions{});
  REQUIRE(d);
  HostRuntime rt(**d);
  auto p = place_launch(rt, *r);
  REQUIRE(p);
  // "a" would have been allocated at 0x10000 (the first allocation) had "b" not been reserved first.
  CHECK(p->buffer_addrs[1] == 0x10000u);
  CHECK(p->buffer_addrs[2] == 0x100000u);
  CHECK(p->buffer_addrs[0] != 0x10000u);
  uint32_t w = 0;
  REQUIRE((*d)->copy_from_device(0x10000, {reinterpret_cast<uint8_t*>(&w), 4}));
  CHECK(w == 9u);
  uint32_t args[2] = {0, 0};
  REQUIRE((*d)->copy_from_device(*p->arg_ptr, {reinterpret_cast<uint8_t*>(args), 8}));
  CHECK(args[0] == 0x10000u);
  CHECK(args[1] == p->buffer_addrs[0]);
  // A fixed address that collides with something the device already holds fails at placement.
  auto image = parse_launch_file(R"({"buffers": [{"name": "k", "size": 4, "address": "0x10000"}]})", "l.json", ".");
  REQUIRE(image);
  auto again = place_launch(rt, *image);
  REQUIRE_FALSE(again);
  CHECK(again.error().message.rfind("l.json: buffers[0] (\"k\"): mem_reserve: 0x10000..0x10004 overlaps", 0) == 0);
}

TEST_CASE("buffer addresses are validated where the file gives them", "[launch]") {
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 4, "address": "0x40"}]})") ==
        "launch.json: buffers[0].address: 0x40 lies in the I/O region (below 0x10000)");
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 4, "address": 65538}]})") ==
        "launch.json: buffers[0].address: 0x10002 is not a multiple of 4");
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 8, "address": "0xfffffffc"}]})") ==
        "launch.json: buffers[0].address: 0xfffffffc + 8 bytes runs past the 32-bit address space");
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 4, "address": "12"}]})") ==
        "launch.json: buffers[0].address: \"12\" is not a 32-bit hex address such as \"0x20000\"");
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 4, "address": "0x1000000000"}]})")
            .find("is not a 32-bit hex address") != std::string::npos);
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 4, "address": -4}]})") ==
        "launch.json: buffers[0].address: must not be negative");
  CHECK(error_of(R"({"buffers": [{"name": "a", "size": 64, "address": "0x20000"},
                                 {"name": "b", "size": 4, "address": "0x2003c"}]})") ==
        "launch.json: buffers[1].address: 0x2003c..0x20040 overlaps buffers[0] (\"a\") at 0x20000");
}
