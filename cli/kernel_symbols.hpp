// Where a kernel's symbols come from, and launch entries chosen by name.
//
// An ELF carries its own symbols. A .vxbin carries none: vxreplay uses the ELF given with
// --symbols FILE, else an ELF of the same name beside it (k.vxbin -> k.elf), each only when its
// loadable bytes are the .vxbin's; without one it debugs by address (docs/cli.md, ".vxbin images").
#pragma once

#include <optional>
#include <string>

#include "base/result.hpp"
#include "device/image.hpp"
#include "device/state.hpp"
#include "engine/symbols.hpp"

namespace vx::cli {

struct KernelSymbols {
  std::optional<engine::Symbols> symbols;
  std::string path;      // the ELF they come from ("" without symbols)
  std::string note;      // one line for stderr saying where they come from or why there are none ("" for an ELF)
  bool warning = false;  // the note is a warning (the ELF found could not be read): an error event in --json
  std::optional<KernelImage> elf;  // a .vxbin's matching ELF, parsed (its TLS facts apply to the .vxbin)
};

// A .vxbin carries no TLS facts; its matching ELF does (HostRuntime::load_image maps TLS by them).
void adopt_tls(KernelImage& image, const KernelSymbols& symbols);

// `symbols_file` is --symbols ("" when not given). Errors: a --symbols file that cannot be used
// (unreadable, not an ELF, loadable bytes that differ from the image's).
Result<KernelSymbols> find_kernel_symbols(const KernelImage& image, const std::string& symbols_file);

// first_loadable_difference (two images' loadable bytes) is device/image.hpp's.
using vx::first_loadable_difference;

// The CTA entry a launch names (--entry, a launch file's "entry"): for a .vxbin, an entry of its
// VXSYMTAB footer; else a function of the symbols. `what` prefixes messages ("--entry").
Result<uint32_t> resolve_entry(const KernelImage& image, const engine::Symbols* symbols, const std::string& name,
                               const std::string& what);

// One line for a divergent plain branch (docs/host-kernels.md, "The divergence report"):
//   divergent branch at pc 0x80000128 (branchy.c:21, in kernel_body): taken by lanes 0,2, not taken by
//   lanes 1,3; the warp followed lane 3 (not taken); first on core 0 warp 0
// then, with `with_count`, "; 4 times".
std::string describe_divergent_branch(const DivergentBranch& d, const engine::Symbols* symbols, bool with_count);

}  // namespace vx::cli
