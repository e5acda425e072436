#include "device/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vx {

Result<std::vector<uint8_t>> read_input_file(const std::string& path, uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return make_error(path + ": cannot open: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return make_error(path + ": cannot read its size: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return make_error(path + ": is a directory, not a file");
  if (!S_ISREG(st.st_mode)) return make_error(path + ": is not a regular file (a device, a FIFO or a socket)");
  if (uint64_t(st.st_size) > max_bytes)
    return make_error(path + ": is " + std::to_string(st.st_size) + " bytes, more than the " +
                      std::to_string(max_bytes) + " this input may have");
  std::vector<uint8_t> bytes(size_t(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error(path + ": read error: " + std::strerror(errno));
    if (n == 0) break;  // shrank while being read
    done += size_t(n);
  }
  bytes.resize(done);
  return bytes;
}

}  // namespace vx
