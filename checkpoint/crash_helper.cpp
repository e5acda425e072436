// crash_helper DIR SEED [SYNC_INTERVAL_MS]: writes checkpoints into the store at DIR until it is
// killed (SYNC_INTERVAL_MS: group commit, OpenOptions::sync_interval_ms; default 0, a sync per commit).
//
// Checkpoint n (continuing after the highest already stored) has the key of crash_key(n) and the
// content of testing::make_sample(crash_config(), key, SEED, 16). After each put has committed, the
// helper writes "n\n" to stdout with one write(2): a line on the pipe means the checkpoint is
// committed. The crash test in store_test.cpp kills it with SIGKILL and checks the store.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "checkpoint/store.hpp"
#include "checkpoint/test_records.hpp"

using namespace vx::checkpoint;

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: crash_helper DIR SEED [SYNC_INTERVAL_MS]\n");
    return 2;
  }
  OpenOptions options;
  if (argc == 4) options.sync_interval_ms = uint32_t(std::strtoul(argv[3], nullptr, 10));
  const uint64_t seed = std::strtoull(argv[2], nullptr, 10);
  const ConfigRecord cfg{1, 2, 4, 8, 4096};
  StoreHeader header{kFormatVersion, cfg, 0xc0ffee, "crash_helper"};
  auto store = Store::open(argv[1], header, OpenMode::Create, options);
  if (!store) {
    std::fprintf(stderr, "crash_helper: %s\n", store.error().message.c_str());
    return 1;
  }
  auto keys = store->list();
  if (!keys) {
    std::fprintf(stderr, "crash_helper: %s\n", keys.error().message.c_str());
    return 1;
  }
  uint32_t n = keys->empty() ? 0 : uint32_t((keys->back().instret - 7) / 1000 + 1);
  for (;; ++n) {
    TimeKey key{1, uint64_t(n) * 1000 + 7};
    auto sample = testing::make_sample(cfg, key, seed, 16);
    if (auto r = store->put(key, sample.rec, sample.pages); !r) {
      std::fprintf(stderr, "crash_helper: %s\n", r.error().message.c_str());
      return 1;
    }
    std::string line = std::to_string(n) + "\n";
    if (write(1, line.data(), line.size()) != ssize_t(line.size())) return 1;
  }
}
