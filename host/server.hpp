// vxreplay's end of the host channel: performs a host program's vortex.h calls on a Driver (the
// debugger's Session::host()) through the same HostDevice the library runs in-process.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "device/driver.hpp"
#include "host/channel.hpp"
#include "host/host_device.hpp"

namespace vx::host {

class HostServer {
 public:
  // `rings`: the shared rings the program may take at the handshake (SharedRings); null: the
  // socket carries everything.
  HostServer(Driver& driver, int fd, std::string config_text, SharedRings* rings = nullptr)
      : fd_(fd), in_(fd), rings_(rings), config_(std::move(config_text)), dev_(driver) {
    in_.set_stall_limit_ms(kStallMs);
  }
  // How long a program may stop in the middle of a message before the channel is closed.
  static constexpr int kStallMs = 3000;

  enum class Pump { Waiting, Ended };
  // Serves calls until the host waits in vx_ready_wait for work it started (Waiting: the reply
  // is held until answer_wait) or closes the channel (Ended). A vx_ready_wait with nothing
  // started is answered at once.
  Result<Pump> pump();
  // Answers the held vx_ready_wait: "" ok, else the error the host's call returns. `console`:
  // kernel output for the library to print (the debugger prints it itself in a session).
  Result<void> answer_wait(const std::string& error, const std::vector<ConsoleChunk>& console = {});
  bool waiting() const { return waiting_; }
  // The held vx_ready_wait's timeout (ms, as the program gave it).
  uint64_t wait_timeout_ms() const { return wait_timeout_ms_; }
  // The held vx_ready_wait timed out: its call returns `error` while the work it waited for goes
  // on (a later vx_ready_wait waits for it again).
  Result<void> expire_wait(const std::string& error);
  // After the debugger is done with the device: serves the host to its end, failing its
  // vx_start and vx_ready_wait calls with `why` (the device cannot run more work).
  Result<void> drain(const std::string& why);

  HostDevice& device() { return dev_; }
  uint64_t calls() const { return calls_; }
  // The program broke the protocol (a malformed stream, a call before the handshake): the server
  // answered with the error where it could and shut the channel, so that the program's pending
  // call returns an error instead of waiting forever. Every later pump ends at once.
  bool broken() const { return broken_; }

 private:
  // Performs one request; false: the request was a vx_ready_wait held for later.
  Result<bool> serve(uint32_t op, std::span<const uint8_t> payload, const std::string& refuse_runs);
  Result<void> reply(int32_t status, std::span<const uint8_t> payload);
  // The next request; a protocol violation closes the channel (broken()) and is the error.
  Result<std::optional<std::pair<uint32_t, std::vector<uint8_t>>>> next();
  Error violation(const std::string& what);
  int fd_;
  Receiver in_;
  SharedRings* rings_;
  bool on_rings_ = false;  // the handshake moved the channel to the rings
  std::string config_;
  HostDevice dev_;
  uint64_t started_ = 0;  // launches started since the last answered wait
  bool waiting_ = false;
  uint64_t wait_timeout_ms_ = 0;
  bool hello_ = false;  // the handshake (vx_dev_open's Hello) was made
  bool broken_ = false;
  uint64_t calls_ = 0;
};

// The console chunks a wait reply carries: u32 count, then (u32 slot, u32 lost, str bytes) each.
void put_console(class Writer& w, const std::vector<ConsoleChunk>& chunks);

}  // namespace vx::host
