#include "cli/kernel_symbols.hpp"

#include <catch2/catch.hpp>

using namespace vx;
using namespace vx::cli;

namespace {

KernelImage image(std::vector<ImageSegment> segs, bool elf) {
  KernelImage img;
  img.path = elf ? "k.elf" : "k.vxbin";
  img.is_elf = elf;
  img.segments = std::move(segs);
  return img;
}

}  // namespace

TEST_CASE("loadable bytes are compared as segments over zeroes", "[symbols]") {
  // A .vxbin's one segment spans what an ELF holds in two, with the gap and BSS as zeroes.
  auto vxbin = image({ImageSegment{0x80000000, 0x20, {1, 2, 3, 4, 0, 0, 0, 0, 9}}}, false);
  auto elf = image({ImageSegment{0x80000000, 4, {1, 2, 3, 4}}, ImageSegment{0x80000008, 0x18, {9}}}, true);
  CHECK_FALSE(first_loadable_difference(vxbin, elf));
  CHECK_FALSE(first_loadable_difference(elf, vxbin));
  elf.segments[1].bytes[0] = 8;
  CHECK(first_loadable_difference(vxbin, elf) == 0x80000008u);
  // A byte only one side holds, and not zero, is a difference too.
  auto longer = image({ImageSegment{0x80000000, 0x20, {1, 2, 3, 4, 0, 0, 0, 0, 9, 0, 7}}}, true);
  CHECK(first_loadable_difference(vxbin, longer) == 0x8000000au);
}

TEST_CASE("a divergent branch is described with its lanes and the lane that decided", "[symbols]") {
  DivergentBranch d{0x80000040, 0b0110, 0b1001, 1, 2, 5};
  CHECK(describe_divergent_branch(d, nullptr, true) ==
        "divergent branch at pc 0x80000040: taken by lanes 1,2, not taken by lanes 0,3; the warp followed lane 3 "
        "(not taken); first on core 1 warp 2; 5 times");
  d.count = 1;
  d.taken = 0b1000;
  d.not_taken = 0b0001;
  CHECK(describe_divergent_branch(d, nullptr, true) ==
        "divergent branch at pc 0x80000040: taken by lanes 3, not taken by lanes 0; the warp followed lane 3 "
        "(taken); first on core 1 warp 2; 1 time");
  CHECK(describe_divergent_branch(d, nullptr, false).find("times") == std::string::npos);
}

TEST_CASE("entries of a .vxbin resolve through its footer, then its ELF's symbols", "[symbols]") {
  auto img = image({ImageSegment{0x80000000, 0x100, {}}}, false);
  img.min_vma = 0x80000000;
  img.max_vma = 0x80000100;
  CHECK(resolve_entry(img, nullptr, "main", "--entry").value() == 0x80000000u);
  CHECK(resolve_entry(img, nullptr, "k", "--entry").error().message ==
        "--entry: k.vxbin: no kernel \"k\": the .vxbin has no VXSYMTAB footer, so its only kernel is \"main\" (its "
        "min vma)");
  img.has_symtab = true;
  img.entries = {{"k", 0x80000010}, {"j", 0x80000020}};
  CHECK(resolve_entry(img, nullptr, "j", "--entry").value() == 0x80000020u);
  CHECK(resolve_entry(img, nullptr, "main", "e").error().message ==
        "e: k.vxbin: no kernel \"main\" in its VXSYMTAB footer (it names: k, j)");
}
