#include "cli/session_options.hpp"

namespace vx::cli {

engine::SessionMode session_mode_of(const std::string& flag) {
  return engine::parse_session_mode(flag.empty() ? "relaunch" : flag).value_or(engine::SessionMode::Relaunch);
}

engine::SessionOptions session_options(const DebugArgs& a, const std::string& store_dir, const std::string& workload,
                                       uint64_t kernel_hash) {
  engine::SessionOptions so;
  so.store_dir = store_dir;
  so.kernel_hash = kernel_hash;
  so.seed = a.run.options.seed;
  so.schedule = uint8_t(a.run.options.schedule);
  so.watchdog = a.run.options.watchdog_instructions;
  if (a.checkpoint_interval) so.checkpoint_interval = *a.checkpoint_interval;
  if (a.timeline_interval) so.timeline_interval = *a.timeline_interval;
  so.store_map_size = a.db_map_size;
  so.workload = workload;
  so.mode = session_mode_of(a.mode);
  so.attach_after = a.attach_after;
  so.reset_halt = a.reset_halt;
  return so;
}

engine::SessionOptions replay_session_options(const checkpoint::StoreHeader& header, const std::string& dir,
                                              const std::string& mode) {
  engine::SessionOptions so;
  so.store_dir = dir;
  so.replay = true;
  so.seed = header.seed;
  so.watchdog = header.watchdog;
  so.mode = session_mode_of(mode);
  return so;
}

}  // namespace vx::cli
