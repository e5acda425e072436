// Inside libvortex only (not exported): what vortex2.cpp needs from vortex.cpp.
#pragma once

namespace vx::host {

// While alive, an error a synchronous call reports names `caller` first ("vortex:
// vx_enqueue_read: vx_copy_from_dev: ..."): vortex2.h's commands are written over those calls,
// and the user called the command.
class CallerScope {
 public:
  explicit CallerScope(const char* caller);
  ~CallerScope();
  CallerScope(const CallerScope&) = delete;
  CallerScope& operator=(const CallerScope&) = delete;

 private:
  const char* prev_;
};

}  // namespace vx::host
