// The difference between two runs of one workload (docs/nondeterminism.md): schedules differ from
// the first instruction, so runs are compared per logical thread: each thread's sequence of
// observations (replay/observe.hpp) in run A against the same thread's in run B. The first
// divergence is the earliest differing observation in run A's time.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "replay/observe.hpp"

namespace vx::replay {

// How a run ended, for the final comparison.
struct RunEnd {
  std::string outcome;                                            // "exit 0", or the stop ("device exception: ...")
  std::map<uint32_t, std::string> console;                        // per hart ring
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> memory;  // ranges at the end
};

enum class DivergenceKind : uint8_t {
  Value,  // the same instruction read another value
  Path,   // the thread observed at another instruction (it went another way)
  OnlyA,  // run B's thread ended (or never ran) before this observation
  OnlyB,  // run A's thread ended before run B's made this observation
};
const char* divergence_kind_name(DivergenceKind k);

struct Divergence {
  DivergenceKind kind = DivergenceKind::Value;
  ThreadKey thread;
  uint64_t index = 0;  // the observation's number in the thread (0-based, compared ones only)
  std::optional<ThreadObs> a, b;
  // The writers' threads (ObservationLog::threads() of each run); meaningful when obs.writer.valid.
  std::optional<ThreadKey> writer_a, writer_b;
};

struct MemoryDifference {
  uint32_t addr = 0;
  uint32_t len = 0;           // differing bytes from addr (a run of them, gaps under 16 bytes joined)
  std::vector<uint8_t> a, b;  // the first bytes of each (at most 16)
};

struct DiffReport {
  std::optional<Divergence> first;
  uint64_t threads_compared = 0;
  uint64_t threads_diverged = 0;
  uint64_t observations_a = 0, observations_b = 0;
  bool outcome_differs = false;
  std::vector<uint32_t> console_differs;  // hart rings whose text differs
  std::vector<MemoryDifference> memory;   // at most 32
  uint64_t memory_bytes_differ = 0;
  bool same() const { return !first && !outcome_differs && console_differs.empty() && memory_bytes_differ == 0; }
};

// b may have been observed with compare_with(&a) (its equal prefixes then counted, not kept).
DiffReport diff_runs(const ObservationLog& a, const RunEnd& end_a, const ObservationLog& b, const RunEnd& end_b);

}  // namespace vx::replay
