// libFuzzer target: the debugger's command language: command lines and their argument grammars,
// and expressions (parsed, printed and evaluated against a fixed environment).
#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/command.hpp"
#include "debug/expr.hpp"

namespace {

class Env final : public vx::debug::ExprEnv {
 public:
  vx::Result<int64_t> value(const vx::debug::Variable& v) const override { return int64_t(v.index) * 7 + 3; }
  vx::Result<int64_t> load_word(uint32_t addr) const override { return int64_t(addr ^ 0x5a5a5a5a); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  using namespace vx::cli;
  if (auto cl = parse_command_line(text)) {
    (void)parse_info_subcommand(cl->args);
    (void)parse_memory_format(cl->format);
    (void)parse_print_format(cl->format);
    (void)parse_break_spec(cl->args);
    (void)parse_coords(cl->args);
    (void)parse_count(cl->args);
  }
  if (auto e = vx::debug::Expr::parse(text)) {
    (void)e->to_string();
    Env env;
    (void)e->eval(env);
  }
  return 0;
}
