// A temporary file holding a kernel image for libdw, which reads files: the recorded image of a
// replay, or the image a host program uploaded. Removed when the object goes.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace vx::cli {

class TempFile {
 public:
  TempFile() = default;
  TempFile(const TempFile&) = delete;  // one owner removes the file
  TempFile& operator=(const TempFile&) = delete;
  Result<std::string> write(const std::vector<uint8_t>& bytes, const std::string& name) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/vxreplay-symbols-XXXXXX";
    std::vector<char> path(pattern.begin(), pattern.end());
    path.push_back('\0');
    int fd = mkstemp(path.data());
    if (fd < 0) return make_error("cannot create a temporary file for the symbols of " + name);
    path_ = path.data();
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) {
        ::close(fd);
        return make_error("cannot write the symbols of " + name + " to " + path_);
      }
      done += size_t(n);
    }
    ::close(fd);
    return path_;
  }
  ~TempFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }

 private:
  std::string path_;
};

}  // namespace vx::cli
