// vxreplay: the command-line front end. main() wires the parts together.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <sstream>

#include "cli/run_command.hpp"

namespace {

// Parses "X", "X,Y" or "X,Y,Z" (missing dimensions are 1).
bool parse_dims(const std::string& text, std::array<uint32_t, 3>* out, std::string* error) {
  std::array<uint32_t, 3> d{1, 1, 1};
  std::stringstream ss(text);
  std::string part;
  int i = 0;
  while (std::getline(ss, part, ',')) {
    if (i == 3 || part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 9) {
      *error = "'" + text + "' is not X[,Y[,Z]] with positive integers";
      return false;
    }
    d[i++] = uint32_t(std::stoul(part));
    if (d[i - 1] == 0) {
      *error = "'" + text + "': dimensions must be at least 1";
      return false;
    }
  }
  if (i == 0) {
    *error = "'" + text + "' is not X[,Y[,Z]]";
    return false;
  }
  *out = d;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vxreplay: a re-launch record/replay debugger for Vortex GPGPU kernels"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "vxreplay 0.1.0");

  vx::cli::RunArgs run;
  std::string config_text = "1x1x4x4", grid_text, block_text;
  auto* run_cmd = app.add_subcommand("run", "Run a kernel image (ELF or .vxbin) to completion on the Vortex model");
  run_cmd->add_option("kernel", run.kernel, "Kernel image: an ELF built for riscv32, or a .vxbin")->required();
  run_cmd->add_option("--config", config_text, "Device shape CLUSTERSxCORESxWARPSxTHREADS or CORESxWARPSxTHREADS")
      ->capture_default_str();
  run_cmd->add_option("--seed", run.options.seed, "Warp scheduler seed (same seed, same run)")->capture_default_str();
  run_cmd->add_option("--watchdog", run.options.watchdog_instructions,
                      "Stop a run after this many warp instructions (0: never)")
      ->capture_default_str();
  run_cmd->add_option("--grid", grid_text, "Grid dimensions X[,Y[,Z]] (default: from the image)");
  run_cmd->add_option("--block", block_text, "Block dimensions X[,Y[,Z]] (default: from the image)");
  run_cmd->add_option("--lmem", run.lmem, "Local memory bytes per CTA (default: from the image)");
  run_cmd->add_flag("--quiet", run.quiet, "Print only the kernel's console output");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : vx::cli::kExitUsage;
  }

  if (run_cmd->parsed()) {
    std::string error;
    auto cfg = vx::DeviceConfig::parse(config_text, &error);
    if (!cfg) {
      std::fprintf(stderr, "vxreplay: --config: %s\n", error.c_str());
      return vx::cli::kExitUsage;
    }
    run.config = *cfg;
    std::array<uint32_t, 3> dims;
    if (!grid_text.empty()) {
      if (!parse_dims(grid_text, &dims, &error)) {
        std::fprintf(stderr, "vxreplay: --grid: %s\n", error.c_str());
        return vx::cli::kExitUsage;
      }
      run.grid = dims;
    }
    if (!block_text.empty()) {
      if (!parse_dims(block_text, &dims, &error)) {
        std::fprintf(stderr, "vxreplay: --block: %s\n", error.c_str());
        return vx::cli::kExitUsage;
      }
      run.block = dims;
    }
    return vx::cli::run_command(run);
  }
  return vx::cli::kExitUsage;
}
