// Launch files: `vxreplay run KERNEL --launch FILE.json` (docs/cli.md, "Launch files").
//
// A launch file names the launch's dimensions, its entry symbol, the device
// buffers to allocate and fill, and the argument block whose address becomes
// the launch's arg pointer (every warp's mscratch). After the run, buffers can
// be dumped to a file or compared against one.
//
// Every error is one line naming the file and the JSON path, e.g.
//   launch.json: buffers[2].init.file: cannot read input.bin: No such file or directory
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "device/host_runtime.hpp"
#include "device/image.hpp"
#include "engine/symbols.hpp"

namespace vx::cli {

struct LaunchBuffer {
  enum class Init { Zeros, Pattern, Random, File };
  std::string name;
  uint32_t size = 0;                // bytes, > 0
  std::optional<uint32_t> address;  // "address": reserved there (Driver::mem_reserve) instead of allocated
  Init init = Init::Zeros;
  std::vector<uint32_t> pattern;    // Init::Pattern: words repeated
  uint64_t seed = 0;                // Init::Random
  std::string file;                 // Init::File: the path (resolved against the launch file's directory)
  std::vector<uint8_t> file_bytes;  // Init::File: its contents (at most `size` bytes; the rest is zero)
  std::string dump;                 // "" or the path to write the contents to after the run
  std::string compare;              // "" or the path of the expected contents
  std::vector<uint8_t> expected;    // the compare file's contents (exactly `size` bytes)
};

struct LaunchArg {
  enum class Kind { Buffer, Word };
  Kind kind = Kind::Word;
  size_t buffer = 0;  // Kind::Buffer: index into LaunchFile::buffers
  uint32_t word = 0;  // Kind::Word: the little-endian word (u32, i32 or f32 bits)
};

struct LaunchFile {
  std::string name;  // the path as given, used in messages
  std::optional<std::array<uint32_t, 3>> grid, block;
  std::optional<uint32_t> lmem;
  std::optional<std::string> entry;
  std::vector<LaunchBuffer> buffers;
  std::optional<std::vector<LaunchArg>> args;  // absent: the image's own arg pointer stays
};

// Parses launch-file text. `name` prefixes every message; relative paths in the
// file resolve against `base_dir` (files named by init.file and compare are read now).
Result<LaunchFile> parse_launch_file(const std::string& text, const std::string& name, const std::string& base_dir);
// Reads and parses the file at `path` (relative paths resolve against its directory).
Result<LaunchFile> load_launch_file(const std::string& path);

// The splitmix64 generator behind "init": {"random": SEED}: word k is the low 32 bits of the
// (k+1)-th splitmix64 output for state SEED.
std::vector<uint32_t> splitmix64_words(uint64_t seed, size_t count);
// A buffer's initial contents (`size` bytes).
std::vector<uint8_t> initial_contents(const LaunchBuffer& b);

// The device side of a launch file: buffer addresses and the argument block's address.
struct PlacedLaunch {
  std::vector<uint32_t> buffer_addrs;
  std::optional<uint32_t> arg_ptr;
};

// Reserves the buffers with an address, allocates the others, fills them, then the argument block,
// through the runtime (before the launch).
Result<PlacedLaunch> place_launch(HostRuntime& rt, const LaunchFile& lf);
// Applies the file to the resolved launch overrides: the file's grid/block/lmem where no flag set
// them, and its entry where --entry did not (a function of `symbols`, or a .vxbin footer's name).
Result<void> apply_launch_file(const LaunchFile& lf, const KernelImage& image, const engine::Symbols* symbols,
                               LaunchOverrides& ov);

// After a run that completed: writes the dump files and compares with the compare files, reading
// device memory through `read`. Every problem is reported as one line through `report`.
enum class LaunchCheck {
  Ok,
  Mismatch,  // a buffer differs from its compare file (the first differing byte is reported)
  Failed,    // a dump could not be written or a buffer could not be read back
};
using MemoryReader = std::function<Result<std::vector<uint8_t>>(uint32_t addr, uint32_t size)>;
LaunchCheck finish_launch(const LaunchFile& lf, const PlacedLaunch& placed, const MemoryReader& read,
                          const std::function<void(const std::string&)>& report);
// True when some buffer has a dump or compare.
bool has_checks(const LaunchFile& lf);

}  // namespace vx::cli
