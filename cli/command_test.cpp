// The command-line grammar of the debugger session (cli/command.hpp).
#include "cli/command.hpp"

#include <catch2/catch.hpp>
#include <set>

using namespace vx::cli;

namespace {

template <class T>
T val(vx::Result<T> r) {
  INFO((r ? "" : r.error().message));
  REQUIRE(r.ok());
  return std::move(r).value();
}

CommandLine parse_ok(const std::string& line) {
  auto c = parse_command_line(line);
  INFO(line << ": " << (c ? "" : c.error().message));
  REQUIRE(c.ok());
  return *c;
}

std::string parse_fail(const std::string& line) {
  auto c = parse_command_line(line);
  REQUIRE_FALSE(c.ok());
  return c.error().message;
}

}  // namespace

TEST_CASE("commands: aliases, names and prefixes", "[command]") {
  CHECK(parse_ok("c").name == "continue");
  CHECK(parse_ok("cont").name == "continue");
  CHECK(parse_ok("continue").name == "continue");
  CHECK(parse_ok("r").name == "continue");
  CHECK(parse_ok("si").name == "stepi");
  CHECK(parse_ok("ni").name == "nexti");
  CHECK(parse_ok("s").name == "step");
  CHECK(parse_ok("n").name == "next");
  CHECK(parse_ok("b reduce").name == "break");
  CHECK(parse_ok("tb reduce").name == "tbreak");
  CHECK(parse_ok("bt").name == "backtrace");
  CHECK(parse_ok("where").name == "backtrace");
  CHECK(parse_ok("p $a0").name == "print");
  CHECK(parse_ok("disas").name == "disassemble");
  CHECK(parse_ok("fin").name == "finish");
  CHECK(parse_ok("q").name == "quit");
  CHECK(parse_ok("i r").name == "info");
  CHECK(parse_ok("backt").name == "backtrace");  // unique prefix
  CHECK(parse_ok("tbr x").name == "tbreak");
  // gdb's abbreviations for the commands of issue 25.
  CHECK(parse_ok("f 1").name == "frame");
  CHECK(parse_ok("u").name == "until");
  CHECK(parse_ok("adv foo").name == "advance");
  CHECK(parse_ok("i locals").name == "info");
  CHECK(parse_ok("pt lm").name == "ptype");
}

TEST_CASE("commands: new commands leave every earlier word's meaning alone", "[command]") {
  // Words that resolved before ptype, whatis, display, frame, up, down, set, until, advance,
  // commands, dprintf, ignore, source, echo, define and skip were added.
  CHECK(parse_ok("w 1").name == "warp");
  CHECK(parse_ok("wa 1").name == "warp");
  CHECK(parse_ok("wh").name == "when");
  CHECK(parse_ok("a 0x10").name == "awatch");
  CHECK(parse_ok("e").name == "enable");
  CHECK(parse_ok("de 1").name == "delete");
  CHECK(parse_ok("pr 1").name == "print");
  CHECK(parse_ok("pri 1").name == "print");
  CHECK(parse_ok("prin 1").name == "print");
  CHECK(parse_ok("printf \"%d\", 1").name == "printf");
  CHECK(parse_ok("ec hi").name == "echo");
  CHECK(parse_ok("def x").name == "define");
  CHECK(parse_ok("so f").name == "source");
  CHECK(parse_ok("ig 1 2").name == "ignore");
  CHECK(parse_ok("dp x").name == "dprintf");
  CHECK(val(parse_info_subcommand("s")) == "session");
  CHECK(val(parse_info_subcommand("li")) == "line");
  CHECK(val(parse_info_subcommand("sy")) == "symbol");
  CHECK(val(parse_info_subcommand("sk")) == "skip");
  CHECK(parse_ok("g 1").name == "goto");
  CHECK(val(parse_info_subcommand("l")) == "lanes");
  CHECK(val(parse_info_subcommand("la")) == "lanes");
  CHECK(val(parse_info_subcommand("w")) == "warps");
  CHECK(val(parse_info_subcommand("lo")) == "locals");
  CHECK(val(parse_info_subcommand("ar")) == "args");
  CHECK(val(parse_info_subcommand("ad")) == "address");
  CHECK(val(parse_info_subcommand("f")) == "frame");
}

TEST_CASE("commands: arguments and formats", "[command]") {
  auto c = parse_ok("  break   reduce.c:31   if threadIdx.x == 3  ");
  CHECK(c.name == "break");
  CHECK(c.args == "reduce.c:31   if threadIdx.x == 3");
  auto x = parse_ok("x/4xw $sp");
  CHECK(x.name == "x");
  CHECK(x.format == "4xw");
  CHECK(x.args == "$sp");
  auto p = parse_ok("p/x $a0");
  CHECK(p.name == "print");
  CHECK(p.format == "x");
  CHECK(p.args == "$a0");
  CHECK(parse_ok("").name.empty());
  CHECK(parse_ok("   # a comment").name.empty());
}

TEST_CASE("commands: errors", "[command]") {
  CHECK_THAT(parse_fail("frobnicate"), Catch::Contains("unknown command \"frobnicate\""));
  CHECK_THAT(parse_fail("di"), Catch::Contains("ambiguous command \"di\": disable, display, disassemble"));
  CHECK_THAT(parse_fail("x/"), Catch::Contains("missing format"));
  CHECK_THAT(parse_fail("break/x foo"), Catch::Contains("takes no /FORMAT"));
}

TEST_CASE("info subcommands", "[command]") {
  CHECK(val(parse_info_subcommand("b")) == "breakpoints");
  CHECK(val(parse_info_subcommand("break")) == "breakpoints");
  CHECK(val(parse_info_subcommand("r")) == "registers");
  CHECK(val(parse_info_subcommand("warps")) == "warps");
  CHECK(val(parse_info_subcommand("w")) == "warps");
  CHECK(val(parse_info_subcommand("ct")) == "ctas");
  // "info l" and "info la" stay lanes now that launches exists; "lau" is launches.
  CHECK(val(parse_info_subcommand("l")) == "lanes");
  CHECK(val(parse_info_subcommand("la")) == "lanes");
  CHECK(val(parse_info_subcommand("lan")) == "lanes");
  CHECK(val(parse_info_subcommand("lau")) == "launches");
  CHECK(val(parse_info_subcommand("launches")) == "launches");
  CHECK_THAT(parse_info_subcommand("c").error().message, Catch::Contains("ambiguous"));
  CHECK_THAT(parse_info_subcommand("bogus").error().message, Catch::Contains("unknown info command"));
  CHECK_FALSE(parse_info_subcommand("").ok());
}

TEST_CASE("x/NFU formats", "[command]") {
  auto f = parse_memory_format("4xw");
  REQUIRE(f.ok());
  CHECK(f->count == 4);
  CHECK(f->format == 'x');
  CHECK(f->unit == 'w');
  auto g = parse_memory_format("8db");
  REQUIRE(g.ok());
  CHECK(g->count == 8);
  CHECK(g->format == 'd');
  CHECK(g->unit_bytes() == 1);
  auto h = parse_memory_format("hu");  // letters in any order, count defaults to 1
  REQUIRE(h.ok());
  CHECK(h->count == 1);
  CHECK(h->format == 'u');
  CHECK(h->unit_bytes() == 2);
  auto c = parse_memory_format("16c");  // characters default to bytes
  REQUIRE(c.ok());
  CHECK(c->unit == 'b');
  CHECK_FALSE(parse_memory_format("4q").ok());
  CHECK_FALSE(parse_memory_format("0x").ok());
  CHECK_FALSE(parse_memory_format("4xd").ok());
  CHECK_FALSE(parse_memory_format("4bw").ok());
  CHECK(val(parse_print_format("")) == 0);
  CHECK(val(parse_print_format("x")) == 'x');
  CHECK_FALSE(parse_print_format("q").ok());
}

TEST_CASE("break LOC if COND", "[command]") {
  auto b = parse_break_spec("reduce.c:31 if threadIdx.x == 3");
  REQUIRE(b.ok());
  CHECK(b->location == "reduce.c:31");
  CHECK(b->condition == "threadIdx.x == 3");
  auto plain = parse_break_spec("reduce");
  REQUIRE(plain.ok());
  CHECK(plain->location == "reduce");
  CHECK(plain->condition.empty());
  auto here = parse_break_spec("if $a0 == 1");
  REQUIRE(here.ok());
  CHECK(here->location.empty());
  CHECK(here->condition == "$a0 == 1");
  auto paren = parse_break_spec("diverge if(threadIdx.x>2)");
  REQUIRE(paren.ok());
  CHECK(paren->location == "diverge");
  CHECK(paren->condition == "(threadIdx.x>2)");
  auto name_with_if = parse_break_spec("verify_if");  // "if" inside a name is not a condition
  REQUIRE(name_with_if.ok());
  CHECK(name_with_if->location == "verify_if");
  CHECK_FALSE(parse_break_spec("reduce if").ok());
  CHECK_FALSE(parse_break_spec("reduce vecadd").ok());
}

TEST_CASE("coordinates and focus", "[command]") {
  CHECK(val(parse_coords("1,2,3")) == std::array<uint32_t, 3>{1, 2, 3});
  CHECK(val(parse_coords("5")) == std::array<uint32_t, 3>{5, 0, 0});
  CHECK(val(parse_coords("(4, 1)")) == std::array<uint32_t, 3>{4, 1, 0});
  CHECK_FALSE(parse_coords("1,2,3,4").ok());
  CHECK_FALSE(parse_coords("a,b").ok());
  CHECK_FALSE(parse_coords("").ok());
  CHECK_FALSE(parse_coords("1,,2").ok());

  auto sw = parse_focus("cta", "2,0,0 thread 3,0,0");
  REQUIRE(sw.ok());
  CHECK(sw->software());
  CHECK(*sw->cta == std::array<uint32_t, 3>{2, 0, 0});
  CHECK(*sw->thread == std::array<uint32_t, 3>{3, 0, 0});
  auto spaced = parse_focus("cta", "2, 0, 0 thread 3, 1");
  REQUIRE(spaced.ok());
  CHECK(*spaced->cta == std::array<uint32_t, 3>{2, 0, 0});
  CHECK(*spaced->thread == std::array<uint32_t, 3>{3, 1, 0});
  auto th = parse_focus("thread", "7");
  REQUIRE(th.ok());
  CHECK_FALSE(th->cta);
  CHECK(*th->thread == std::array<uint32_t, 3>{7, 0, 0});
  auto hw = parse_focus("core", "0 warp 2 lane 3");
  REQUIRE(hw.ok());
  CHECK_FALSE(hw->software());
  CHECK(*hw->core == 0);
  CHECK(*hw->warp == 2);
  CHECK(*hw->lane == 3);
  auto lane = parse_focus("lane", "1");
  REQUIRE(lane.ok());
  CHECK(*lane->lane == 1);
  CHECK_FALSE(lane->core);
  auto show = parse_focus("focus", "");
  REQUIRE(show.ok());
  CHECK(show->empty());
  auto f2 = parse_focus("focus", "core 1 warp 0");
  REQUIRE(f2.ok());
  CHECK(*f2->core == 1);
  CHECK_THAT(parse_focus("cta", "1,0,0 lane 2").error().message, Catch::Contains("not both"));
  CHECK_THAT(parse_focus("core", "").error().message, Catch::Contains("needs a value"));
  CHECK_THAT(parse_focus("core", "1 bogus 2").error().message, Catch::Contains("unexpected \"bogus\""));
  CHECK_FALSE(parse_focus("warp", "x").ok());
  CHECK_FALSE(parse_focus("core", "1 core 2").ok());
}

TEST_CASE("numbers, counts and breakpoint lists", "[command]") {
  CHECK(val(parse_u32("17")) == 17);
  CHECK(val(parse_u32("0x11")) == 17);
  CHECK_FALSE(parse_u32("-1").ok());
  CHECK_FALSE(parse_u32("0x100000000").ok());
  CHECK_FALSE(parse_u32("12abc").ok());
  CHECK(val(parse_count("")) == 1);
  CHECK(val(parse_count("5")) == 5);
  CHECK_FALSE(parse_count("0").ok());
  CHECK(val(parse_id_list("")).empty());
  CHECK(val(parse_id_list("1 3 5-7")) == std::vector<int>{1, 3, 5, 6, 7});
  CHECK_FALSE(parse_id_list("x").ok());
  CHECK_FALSE(parse_id_list("3-1").ok());
  auto r = split_range("0x80000000, +16");
  CHECK(r.first == "0x80000000");
  CHECK(r.second == "+16");
  auto one = split_range("$pc");
  CHECK(one.first == "$pc");
  CHECK(one.second.empty());
  CHECK(split_words("  a  bb\tc ") == std::vector<std::string>{"a", "bb", "c"});
}

TEST_CASE("every command has a description and distinct names", "[command]") {
  std::set<std::string> names;
  for (const CommandInfo& c : command_table()) {
    CHECK(std::string(c.summary).size() > 0);
    CHECK(names.insert(c.name).second);
    for (const char* a : c.aliases) CHECK(names.insert(a).second);
    CHECK(parse_ok(c.name).name == c.name);
    for (const char* a : c.aliases) CHECK(parse_ok(a).name == c.name);
  }
}

// Every word that resolved to a command (or info subcommand) before the time-travel commands
// arrived, with what it resolved to then (generated from that table): new commands must not
// change any of them.
TEST_CASE("words that resolved before the time-travel commands resolve to the same command", "[command]") {
  // clang-format off
  const std::vector<std::pair<const char*, const char*>> commands = {
      {"b", "break"},
      {"ba", "backtrace"},
      {"bac", "backtrace"},
      {"back", "backtrace"},
      {"backt", "backtrace"},
      {"backtr", "backtrace"},
      {"backtra", "backtrace"},
      {"backtrac", "backtrace"},
      {"backtrace", "backtrace"},
      {"block", "cta"},
      {"br", "break"},
      {"bre", "break"},
      {"brea", "break"},
      {"break", "break"},
      {"bt", "backtrace"},
      {"c", "continue"},
      {"cond", "condition"},
      {"condi", "condition"},
      {"condit", "condition"},
      {"conditi", "condition"},
      {"conditio", "condition"},
      {"condition", "condition"},
      {"cont", "continue"},
      {"conti", "continue"},
      {"contin", "continue"},
      {"continu", "continue"},
      {"continue", "continue"},
      {"cor", "core"},
      {"core", "core"},
      {"ct", "cta"},
      {"cta", "cta"},
      {"d", "delete"},
      {"de", "delete"},
      {"del", "delete"},
      {"dele", "delete"},
      {"delet", "delete"},
      {"delete", "delete"},
      {"disab", "disable"},
      {"disabl", "disable"},
      {"disable", "disable"},
      {"disas", "disassemble"},
      {"disass", "disassemble"},
      {"disasse", "disassemble"},
      {"disassem", "disassemble"},
      {"disassemb", "disassemble"},
      {"disassembl", "disassemble"},
      {"disassemble", "disassemble"},
      {"e", "enable"},
      {"en", "enable"},
      {"ena", "enable"},
      {"enab", "enable"},
      {"enabl", "enable"},
      {"enable", "enable"},
      {"exit", "quit"},
      {"fi", "finish"},
      {"fin", "finish"},
      {"fini", "finish"},
      {"finis", "finish"},
      {"finish", "finish"},
      {"fo", "focus"},
      {"foc", "focus"},
      {"focu", "focus"},
      {"focus", "focus"},
      {"h", "help"},
      {"he", "help"},
      {"hel", "help"},
      {"help", "help"},
      {"i", "info"},
      {"in", "info"},
      {"inf", "info"},
      {"info", "info"},
      {"inspect", "print"},
      {"l", "list"},
      {"la", "lane"},
      {"lan", "lane"},
      {"lane", "lane"},
      {"li", "list"},
      {"lis", "list"},
      {"list", "list"},
      {"n", "next"},
      {"next", "next"},
      {"nexti", "nexti"},
      {"ni", "nexti"},
      {"p", "print"},
      {"pr", "print"},
      {"pri", "print"},
      {"prin", "print"},
      {"print", "print"},
      {"q", "quit"},
      {"qu", "quit"},
      {"qui", "quit"},
      {"quit", "quit"},
      {"r", "continue"},
      {"run", "continue"},
      {"s", "step"},
      {"si", "stepi"},
      {"step", "step"},
      {"stepi", "stepi"},
      {"tb", "tbreak"},
      {"tbr", "tbreak"},
      {"tbre", "tbreak"},
      {"tbrea", "tbreak"},
      {"tbreak", "tbreak"},
      {"th", "thread"},
      {"thr", "thread"},
      {"thre", "thread"},
      {"threa", "thread"},
      {"thread", "thread"},
      {"w", "warp"},
      {"wa", "warp"},
      {"war", "warp"},
      {"warp", "warp"},
      {"where", "backtrace"},
      {"x", "x"}};
  // clang-format on
  for (const auto& [word, name] : commands) {
    INFO("word: " << word);
    auto cl = parse_command_line(word);
    REQUIRE(cl.ok());
    CHECK(cl->name == name);
  }
  const std::vector<std::pair<const char*, const char*>> infos = {{"b", "breakpoints"},
                                                                  {"br", "breakpoints"},
                                                                  {"bre", "breakpoints"},
                                                                  {"brea", "breakpoints"},
                                                                  {"break", "breakpoints"},
                                                                  {"breakp", "breakpoints"},
                                                                  {"breakpo", "breakpoints"},
                                                                  {"breakpoi", "breakpoints"},
                                                                  {"breakpoin", "breakpoints"},
                                                                  {"breakpoint", "breakpoints"},
                                                                  {"breakpoints", "breakpoints"},
                                                                  {"ch", "checkpoints"},
                                                                  {"che", "checkpoints"},
                                                                  {"chec", "checkpoints"},
                                                                  {"check", "checkpoints"},
                                                                  {"checkp", "checkpoints"},
                                                                  {"checkpo", "checkpoints"},
                                                                  {"checkpoi", "checkpoints"},
                                                                  {"checkpoin", "checkpoints"},
                                                                  {"checkpoint", "checkpoints"},
                                                                  {"checkpoints", "checkpoints"},
                                                                  {"ct", "ctas"},
                                                                  {"cta", "ctas"},
                                                                  {"ctas", "ctas"},
                                                                  {"l", "lanes"},
                                                                  {"la", "lanes"},
                                                                  {"lan", "lanes"},
                                                                  {"lane", "lanes"},
                                                                  {"lanes", "lanes"},
                                                                  {"r", "registers"},
                                                                  {"re", "registers"},
                                                                  {"reg", "registers"},
                                                                  {"regi", "registers"},
                                                                  {"regis", "registers"},
                                                                  {"regist", "registers"},
                                                                  {"registe", "registers"},
                                                                  {"register", "registers"},
                                                                  {"registers", "registers"},
                                                                  {"w", "warps"},
                                                                  {"wa", "warps"},
                                                                  {"war", "warps"},
                                                                  {"warp", "warps"},
                                                                  {"warps", "warps"}};
  for (const auto& [word, name] : infos) {
    INFO("info word: " << word);
    auto sub = parse_info_subcommand(word);
    REQUIRE(sub.ok());
    CHECK(*sub == name);
  }
}

TEST_CASE("time-travel commands take gdb's names and aliases", "[command]") {
  const std::vector<std::pair<const char*, const char*>> words = {{"rs", "reverse-step"},
                                                                  {"rn", "reverse-next"},
                                                                  {"rsi", "reverse-stepi"},
                                                                  {"rni", "reverse-nexti"},
                                                                  {"rc", "reverse-continue"},
                                                                  {"reverse-finish", "reverse-finish"},
                                                                  {"goto", "goto"},
                                                                  {"checkpoint", "checkpoint"},
                                                                  {"when", "when"},
                                                                  {"watch", "watch"},
                                                                  {"rwatch", "rwatch"},
                                                                  {"awatch", "awatch"},
                                                                  {"wat", "watch"},
                                                                  {"reverse-c", "reverse-continue"},
                                                                  {"go", "goto"},
                                                                  {"wh", "when"},
                                                                  {"aw", "awatch"},
                                                                  {"rw", "rwatch"}};
  for (const auto& [word, name] : words) {
    INFO("word: " << word);
    auto cl = parse_command_line(word);
    REQUIRE(cl.ok());
    CHECK(cl->name == name);
  }
  CHECK_THAT(parse_command_line("reverse-s").error().message, Catch::Contains("ambiguous"));
  CHECK(val(parse_info_subcommand("wat")) == "watchpoints");
}
