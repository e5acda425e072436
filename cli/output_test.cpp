// Rendering of stops and events (cli/output.hpp): the human header and the JSON fields.
#include "cli/output.hpp"

#include <catch2/catch.hpp>

using namespace vx::cli;
using vx::hex32;

namespace {

StopView breakpoint_stop() {
  StopView v;
  v.reason = "breakpoint";
  v.title = "Breakpoint 1";
  v.breakpoints = {1};
  v.launch = 1;
  v.pass = 2;
  v.instructions = 1234;
  v.has_focus = true;
  v.core = 0;
  v.warp = 1;
  v.lane = 0;
  v.lanes = {0, 1, 2, 3};
  v.cta = {2, 0, 0};
  v.thread = {4, 0, 0};
  v.pc = 0x80000104;
  v.function = "reduce_kernel";
  v.file = "/src/examples/reduce.c";
  v.line = 31;
  v.source = "    sum += data[i];";
  v.disassembly = "add a0, a0, a1";
  v.hits = {{0, 1, 0x80000104, {0, 1, 2, 3}}, {0, 2, 0x80000104, {0, 1}}};
  return v;
}

}  // namespace

TEST_CASE("lane lists", "[output]") {
  CHECK(format_lanes({0, 1, 2, 3}) == "0-3");
  CHECK(format_lanes({0, 1, 3}) == "0-1,3");
  CHECK(format_lanes({5}) == "5");
  CHECK(format_lanes({}) == "none");
  CHECK(hex32(0x2a) == "0x0000002a");
}

TEST_CASE("human stop header", "[output]") {
  std::string s = HumanSink::format_stop(breakpoint_stop(), false);
  CHECK(s ==
        "Breakpoint 1, reduce_kernel (reduce.c:31), pass 2, 1234 instructions\n"
        "  core 0 warp 1 lanes 0-3 (cta 2,0,0); focus lane 0 = thread 4,0,0; pc 0x80000104\n"
        "  also here: core 0 warp 2 lanes 0-1\n"
        "31\t    sum += data[i];\n");
  CHECK(s.find("\033[") == std::string::npos);
  CHECK(HumanSink::format_stop(breakpoint_stop(), true).find("\033[1m") != std::string::npos);

  StopView si = breakpoint_stop();
  si.show_disassembly = true;
  CHECK_THAT(HumanSink::format_stop(si, false), Catch::EndsWith("=> 0x80000104:\tadd a0, a0, a1\n"));

  StopView ex;
  ex.reason = "exited";
  ex.exit_code = 3;
  CHECK(HumanSink::format_stop(ex, false) == "[Kernel exited with code 3]\n");
}

TEST_CASE("JSON stop event fields", "[output]") {
  nlohmann::ordered_json j = JsonSink::stop_json(breakpoint_stop());
  CHECK(j["event"] == "stop");
  CHECK(j["reason"] == "breakpoint");
  CHECK(j["breakpoints"] == nlohmann::ordered_json::array({1}));
  CHECK(j["pc"] == 0x80000104u);
  CHECK(j["function"] == "reduce_kernel");
  CHECK(j["file"] == "/src/examples/reduce.c");
  CHECK(j["line"] == 31);
  CHECK(j["core"] == 0);
  CHECK(j["warp"] == 1);
  CHECK(j["lanes"] == nlohmann::ordered_json::array({0, 1, 2, 3}));
  CHECK(j["pass"] == 2);
  CHECK(j["instructions"] == 1234);
  CHECK(j["cta"] == nlohmann::ordered_json::array({2, 0, 0}));
  CHECK(j["hits"].size() == 2);
  CHECK_FALSE(j.contains("exception"));

  StopView f;
  f.reason = "exception";
  f.has_exception = true;
  f.cause = "store to unmapped memory";
  f.exception_address = 0x28;
  nlohmann::ordered_json k = JsonSink::stop_json(f);
  CHECK(k["exception"]["cause"] == "store to unmapped memory");
  CHECK(k["exception"]["address"] == 0x28);
  CHECK_FALSE(k.contains("breakpoints"));
  CHECK_FALSE(k.contains("pc"));
}
