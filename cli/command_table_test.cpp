// The prompt's command tables (cli/command_table.hpp): the table is the dispatch, so every entry
// has a handler and help, every name resolves to its own entry, and prefixes follow gdb's rules.
#include "cli/command_table.hpp"

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "cli/debugger.hpp"

using namespace vx::cli;

// An entry cannot be written without its handler.
static_assert(!std::is_constructible_v<CommandEntry<Debugger::Handler>, const char*, std::vector<const char*>,
                                       const char*, const char*>);
static_assert(!std::is_constructible_v<CommandEntry<Debugger::InfoHandler>, const char*, std::vector<const char*>,
                                       const char*, const char*>);

namespace {

// What gdb's rules say a word resolves to in `names`: the entry with that name or alias, else the
// one entry whose name starts with it; otherwise the entries whose names start with it (none:
// unknown, several: ambiguous).
std::vector<size_t> expected(const std::vector<CommandInfo>& names, const std::string& word) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (word == names[i].name) return {i};
    for (const char* a : names[i].aliases)
      if (word == a) return {i};
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < names.size(); ++i)
    if (std::string(names[i].name).rfind(word, 0) == 0) out.push_back(i);
  return out;
}

template <class Run>
void check_entries(const std::vector<CommandEntry<Run>>& table, const std::vector<CommandInfo>& names) {
  REQUIRE(table.size() == names.size());
  for (size_t i = 0; i < table.size(); ++i) {
    INFO("entry " << i << ": " << table[i].name);
    CHECK(table[i].run != nullptr);
    CHECK(std::string(table[i].name) == names[i].name);
    CHECK(table[i].synopsis != nullptr);
    CHECK(std::string(table[i].summary).size() > 0);
  }
}

std::string list_of(const std::vector<CommandInfo>& names, const std::vector<size_t>& entries) {
  std::string s;
  for (size_t e : entries) s += (s.empty() ? "" : ", ") + std::string(names[e].name);
  return s;
}

}  // namespace

TEST_CASE("every command table entry has a handler and help", "[command]") {
  check_entries(Debugger::commands(), command_table());
  check_entries(Debugger::info_commands(), info_table());
}

TEST_CASE("every command name and alias resolves to exactly its entry", "[command]") {
  std::set<std::string> words;
  const auto& names = command_table();
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<std::string> own = {names[i].name};
    for (const char* a : names[i].aliases) own.emplace_back(a);
    for (const std::string& w : own) {
      INFO("command word: " << w);
      CHECK(words.insert(w).second);  // no word names two entries
      auto cl = parse_command_line(w + " 1");
      REQUIRE(cl.ok());
      CHECK(cl->entry == i);
      CHECK(cl->name == names[i].name);
      CHECK(cl->args == "1");
    }
  }
  words.clear();
  const auto& infos = info_table();
  for (size_t i = 0; i < infos.size(); ++i) {
    std::vector<std::string> own = {infos[i].name};
    for (const char* a : infos[i].aliases) own.emplace_back(a);
    for (const std::string& w : own) {
      INFO("info word: " << w);
      CHECK(words.insert(w).second);
      auto e = resolve_info_subcommand(w);
      REQUIRE(e.ok());
      CHECK(*e == i);
      CHECK(parse_info_subcommand(w).value() == infos[i].name);
    }
  }
}

TEST_CASE("every prefix of a command name resolves by gdb's rules, or is reported ambiguous", "[command]") {
  const auto& names = command_table();
  size_t ambiguous = 0;
  for (const CommandInfo& c : names) {
    const std::string name = c.name;
    for (size_t n = 1; n <= name.size(); ++n) {
      const std::string word = name.substr(0, n);
      INFO("command word: " << word);
      const std::vector<size_t> want = expected(names, word);
      REQUIRE_FALSE(want.empty());  // at least the name it was cut from
      auto cl = parse_command_line(word);
      if (want.size() == 1) {
        REQUIRE(cl.ok());
        CHECK(cl->entry == want[0]);
      } else {
        ++ambiguous;
        REQUIRE_FALSE(cl.ok());
        CHECK(cl.error().message == "ambiguous command \"" + word + "\": " + list_of(names, want));
      }
    }
  }
  CHECK(ambiguous > 0);
  const auto& infos = info_table();
  for (const CommandInfo& c : infos) {
    const std::string name = c.name;
    for (size_t n = 1; n <= name.size(); ++n) {
      const std::string word = name.substr(0, n);
      INFO("info word: " << word);
      const std::vector<size_t> want = expected(infos, word);
      auto e = resolve_info_subcommand(word);
      if (want.size() == 1) {
        REQUIRE(e.ok());
        CHECK(*e == want[0]);
      } else {
        REQUIRE_FALSE(e.ok());
        CHECK(e.error().message == "ambiguous info command \"" + word + "\": " + list_of(infos, want));
      }
    }
  }
  CHECK(parse_command_line("di").error().message == "ambiguous command \"di\": disable, display, disassemble");
  CHECK(parse_command_line("reverse-s").error().message ==
        "ambiguous command \"reverse-s\": reverse-stepi, reverse-step");
  CHECK(parse_command_line("bogus").error().message == "unknown command \"bogus\"");
  CHECK(resolve_info_subcommand("c").error().message == "ambiguous info command \"c\": checkpoints, ctas");
}
