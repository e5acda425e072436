// libFuzzer target: vxreplay's end of the host channel (host/server.hpp) against any byte stream a
// host program can send: the stream goes through a real socket, the server serves it to its end
// (a held vx_ready_wait is answered as the debugger would), and a thread reads and drops the
// replies so that no reply can block the server. Property: every input ends (scripts/fuzz.sh runs
// it with a time limit per input), nothing crashes, nothing leaks.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <thread>

#include "device/driver.hpp"
#include "host/server.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;  // the socket buffer holds the whole input
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return 0;
  size_t done = 0;
  while (done < size) {
    const ssize_t w = ::write(fds[0], data + done, size - done);
    if (w <= 0) break;
    done += size_t(w);
  }
  ::shutdown(fds[0], SHUT_WR);  // the program is done sending
  std::thread drop([fd = fds[0]] {
    char buf[1 << 16];
    while (::read(fd, buf, sizeof buf) > 0) {
    }
  });
  {
    vx::DeviceConfig cfg;
    cfg.cores_per_cluster = 1;
    cfg.warps = 2;
    cfg.threads = 4;
    auto dev = vx::open_model_device(cfg, vx::RunOptions{});
    if (dev) {
      vx::host::HostServer server(**dev, fds[1], cfg.to_string());
      for (int rounds = 0; rounds < 1000; ++rounds) {
        auto p = server.pump();
        if (!p || *p == vx::host::HostServer::Pump::Ended) break;
        (void)server.answer_wait("");  // the work "ran"
      }
    }
  }
  ::shutdown(fds[1], SHUT_RDWR);
  drop.join();
  ::close(fds[0]);
  ::close(fds[1]);
  return 0;
}
