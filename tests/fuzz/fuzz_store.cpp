// libFuzzer target: a checkpoint store's data.mdb as an attacker could hand it over: the input is
// written as data.mdb into a scratch directory, then opened, listed, read and verified, and its kept
// history read.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "checkpoint/store.hpp"

namespace {

namespace fs = std::filesystem;

// The scratch directory, removed when the fuzzer exits normally (libFuzzer ends with exit(), which
// runs static destructors; a crash leaves it, next to the reproducer it explains).
struct Scratch {
  std::string dir = (fs::temp_directory_path() / ("vxreplay-fuzz-store-" + std::to_string(::getpid()))).string();
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Scratch scratch;
  const std::string& dir = scratch.dir;
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream out(dir + "/data.mdb", std::ios::binary);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  auto store = vx::checkpoint::Store::open_existing(dir, vx::checkpoint::OpenMode::ReadOnly);
  if (store) {
    if (auto keys = store->list())
      for (const auto& k : *keys) (void)store->verify(k);
    (void)store->marks();
    (void)store->ops();
    // The questions' kept history (docs/store.md "History"): launches 1 to 4.
    for (uint32_t launch = 1; launch <= 4; ++launch) (void)store->history(launch);
  }
  return 0;
}
