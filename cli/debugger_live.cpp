// info session: which method the session debugs with and why (docs/live.md).
#include "cli/debugger.hpp"

namespace vx::cli {

void Debugger::info_session() {
  const engine::SessionInfo i = s_.info();
  std::string text = std::string("Mode: ") + (i.live ? "live" : "relaunch") +
                     " (requested: " + engine::session_mode_name(i.requested) + "). " + i.why + ".\n";
  if (i.has_dm)
    text += "Debug Module: yes (" + std::to_string(i.platform.clusters) + " x " +
            std::to_string(i.platform.cores_per_cluster) + " x " + std::to_string(i.platform.warps) + " x " +
            std::to_string(i.platform.threads) + ", " + std::to_string(i.dm_accesses) + " accesses so far).\n";
  else
    text += "Debug Module: none on this device.\n";
  text += i.held ? "Device: held (the launch is halted in place until you go on)."
                 : "Device: free (nothing of this session is on it while stopped).";
  out(text, {{"mode", i.live ? "live" : "relaunch"},
             {"requested", engine::session_mode_name(i.requested)},
             {"why", i.why},
             {"debug_module", i.has_dm},
             {"held", i.held},
             {"dm_accesses", i.dm_accesses}});
}

}  // namespace vx::cli
