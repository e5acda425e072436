#include "cli/kernel_symbols.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <filesystem>
#include <map>

namespace vx::cli {

namespace {

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::string base(const std::string& path) { return std::filesystem::path(path).filename().string(); }

}  // namespace

Result<KernelSymbols> find_kernel_symbols(const KernelImage& image, const std::string& symbols_file) {
  KernelSymbols ks;
  if (!symbols_file.empty()) {
    auto elf = load_kernel_image(symbols_file);
    if (!elf) return make_error("--symbols: " + elf.error().message);
    if (!elf->is_elf) return make_error("--symbols: " + symbols_file + " is not an ELF file");
    if (auto at = first_loadable_difference(image, *elf))
      return make_error("--symbols: " + symbols_file + " is not the ELF of " + image.path +
                        ": their loadable bytes differ at " + hex32(*at));
    auto s = engine::Symbols::load(symbols_file);
    if (!s) return make_error("--symbols: " + s.error().message);
    ks.symbols.emplace(std::move(s).value());
    ks.path = symbols_file;
    ks.elf = std::move(elf).value();
    ks.note = "symbols for " + base(image.path) + " from " + symbols_file + " (--symbols)";
    return ks;
  }
  if (image.is_elf) {
    auto s = engine::Symbols::load(image.path);
    if (!s) {
      ks.note = "warning: no symbols: " + s.error().message;
      ks.warning = true;
      return ks;
    }
    ks.symbols.emplace(std::move(s).value());
    ks.path = image.path;
    return ks;
  }
  const std::string beside = std::filesystem::path(image.path).replace_extension(".elf").string();
  std::error_code ec;
  if (!std::filesystem::exists(beside, ec)) {
    ks.note = "no symbols for " + base(image.path) + " (no " + base(beside) +
              " beside it; give one with --symbols FILE): debugging by address";
    return ks;
  }
  auto elf = load_kernel_image(beside);
  std::string why;
  if (!elf) {
    why = elf.error().message;
  } else if (!elf->is_elf) {
    why = beside + " is not an ELF file";
  } else if (auto at = first_loadable_difference(image, *elf)) {
    why = beside + " is not its ELF: their loadable bytes differ at " + hex32(*at);
  } else if (auto s = engine::Symbols::load(beside); !s) {
    why = s.error().message;
  } else {
    ks.symbols.emplace(std::move(s).value());
    ks.path = beside;
    ks.elf = std::move(elf).value();
    ks.note = "symbols for " + base(image.path) + " from " + beside + " beside it (its loadable bytes match)";
    return ks;
  }
  ks.note = "no symbols for " + base(image.path) + ": " + why + "; debugging by address";
  return ks;
}

void adopt_tls(KernelImage& image, const KernelSymbols& symbols) {
  if (image.is_elf || !symbols.elf) return;
  image.tls_bytes = symbols.elf->tls_bytes;
  image.tls_stride = symbols.elf->tls_stride;
  image.end_symbol = symbols.elf->end_symbol;
}

Result<uint32_t> resolve_entry(const KernelImage& image, const engine::Symbols* symbols, const std::string& name,
                               const std::string& what) {
  if (!image.is_elf) {
    // The footer's names first (or "main" of a footer-less .vxbin), then the matching ELF's symbols.
    auto e = vxbin_entry(image, name);
    if (e) return e;
    if (!symbols) return make_error(what + ": " + e.error().message);
  }
  if (!symbols) return make_error(what + ": cannot resolve \"" + name + "\": " + image.path + " has no symbols");
  auto addr = symbols->symbol_address(name);
  if (!addr) return make_error(what + ": no symbol \"" + name + "\" in " + image.path);
  auto fn = symbols->function_at(*addr);
  if (!fn || fn->lo != *addr) return make_error(what + ": \"" + name + "\" at " + hex32(*addr) + " is not a function");
  return *addr;
}

std::string describe_divergent_branch(const DivergentBranch& d, const engine::Symbols* symbols, bool with_count) {
  auto lanes = [](uint32_t mask) {
    std::string s;
    for (unsigned l = 0; l < 32; ++l)
      if (mask >> l & 1) s += (s.empty() ? "" : ",") + std::to_string(l);
    return s;
  };
  std::string where;
  if (symbols) {
    if (auto loc = symbols->locate(d.pc); loc && loc->line != 0) {
      where = base(loc->file) + ":" + std::to_string(loc->line);
      if (!loc->function.empty()) where += ", in " + loc->function;
    } else if (auto fn = symbols->function_at(d.pc)) {
      where = "in " + fn->name;
    }
  }
  // The highest active lane decided for the warp (the spec's scalar-operand rule).
  const uint32_t active = d.taken | d.not_taken;
  const unsigned last = 31u - unsigned(std::countl_zero(active));
  std::string s = "divergent branch at pc " + hex32(d.pc) + (where.empty() ? "" : " (" + where + ")") +
                  ": taken by lanes " + lanes(d.taken) + ", not taken by lanes " + lanes(d.not_taken) +
                  "; the warp followed lane " + std::to_string(last) + " (" +
                  ((d.taken >> last & 1) ? "taken" : "not taken") + "); first on core " + std::to_string(d.core) +
                  " warp " + std::to_string(d.warp);
  if (with_count) s += "; " + std::to_string(d.count) + (d.count == 1 ? " time" : " times");
  return s;
}

}  // namespace vx::cli
