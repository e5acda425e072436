// libvortex: the C API of vortex.h. A device is either the model in this process (HostDevice on
// open_model_device) or, when vxreplay started the program, a channel to vxreplay (kChannelEnv),
// which performs each call on the device it debugs. Errors print one line on stderr and return -1.
#include "host/vortex.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "device/image.hpp"
#include "device/input_file.hpp"
#include "host/channel.hpp"
#include "host/host_device.hpp"
#include "host/vortex_internal.hpp"

#define VX_API extern "C" __attribute__((visibility("default")))

namespace {

using vx::Result;
using vx::host::Op;

constexpr uint64_t kWaitSlice = 1u << 20;  // instructions between console drains and timeout checks

struct Device {
  int fd = -1;  // the channel to vxreplay; -1: the model in this process
  std::unique_ptr<vx::host::Receiver> in;
  vx::host::SharedRings* rings = nullptr;  // the channel's messages go through these (after the handshake)
  // Under vxreplay, vx_start and vx_dcr_write are checked here (the same checks, on a copy of the
  // DCRs and the uploaded images) and sent without waiting: their replies are read before the next
  // call's, so a launch costs one round trip (vx_ready_wait), not two.
  vx::DeviceConfig config;
  vx::DcrFile dcrs;
  std::map<uint32_t, vx::KernelImage> kernels;  // buffer id -> the image uploaded there
  std::vector<const char*> unanswered;          // calls sent whose replies are not read yet
  std::unique_ptr<vx::Driver> driver;
  std::unique_ptr<vx::host::HostDevice> dev;
  std::map<uint32_t, std::string> partial;  // console lines not finished yet, per hart ring
};

struct Buffer {
  Device* device = nullptr;
  uint32_t id = 0;
  uint64_t addr = 0;
  uint64_t size = 0;
};

// The handles this library gave out and has not taken back: a call with any other pointer is
// refused with an error instead of being dereferenced (the API's misuse checks need the list).
std::mutex g_mutex;
std::set<Device*> g_devices;
std::set<Buffer*> g_buffers;

// The channel's shared rings (kRingsEnv), mapped at the first vx_dev_open under vxreplay; once a
// handshake has moved the channel onto them, it stays there for the process's life (a device
// opened again after vx_dev_close says hello through them).
std::optional<vx::host::SharedRings> g_rings;
bool g_rings_tried = false;
bool g_on_rings = false;

thread_local const char* t_caller = nullptr;  // vx::host::CallerScope

int report(const char* fn, const std::string& message) {
  std::fflush(stdout);
  if (t_caller)
    std::fprintf(stderr, "vortex: %s: %s: %s\n", t_caller, fn, message.c_str());
  else
    std::fprintf(stderr, "vortex: %s: %s\n", fn, message.c_str());
  return -1;
}

Device* device_of(vx_device_h h, const char* fn) {
  if (!h) {
    report(fn, "null device handle");
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_devices.count(static_cast<Device*>(h))) {
    report(fn, "not an open device handle (closed, or never returned by vx_dev_open)");
    return nullptr;
  }
  return static_cast<Device*>(h);
}

Buffer* buffer_of(vx_buffer_h h, const char* fn) {
  if (!h) {
    report(fn, "null buffer handle");
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_buffers.count(static_cast<Buffer*>(h))) {
    report(fn, "not a live buffer handle (freed, or never returned by this library)");
    return nullptr;
  }
  return static_cast<Buffer*>(h);
}

// Sends a call whose reply is read later (before the next call's).
Result<void> post(Device* d, Op op, vx::host::Writer& w) {
  if (auto r = vx::host::send_message(d->fd, uint32_t(op), w.data(), d->rings); !r)
    return vx::make_error("vxreplay is gone (" + r.error().message + ")");
  d->unanswered.push_back(vx::host::op_name(op));
  return {};
}

// One call over the channel: the reply's payload, or its error.
Result<std::vector<uint8_t>> call(Device* d, Op op, vx::host::Writer& w) {
  if (auto r = vx::host::send_message(d->fd, uint32_t(op), w.data(), d->rings); !r)
    return vx::make_error("vxreplay is gone (" + r.error().message + ")");
  for (const char* fn : d->unanswered) {
    // Checked before it was sent, a posted call should not fail; if it did, say so now.
    auto m = d->in->next();
    if (!m || !*m) return vx::make_error("vxreplay is gone (the channel closed)");
    if ((*m)->first != 0) report(fn, std::string((*m)->second.begin(), (*m)->second.end()) + " (reported late)");
  }
  d->unanswered.clear();
  auto m = d->in->next();
  if (!m) return vx::make_error("vxreplay is gone (" + m.error().message + ")");
  if (!*m) return vx::make_error("vxreplay is gone (the channel closed)");
  if ((*m)->first != 0) return vx::make_error(std::string((*m)->second.begin(), (*m)->second.end()));
  return std::move((*m)->second);
}

// Kernel console output, whole lines, to the host's stdout (the same stream as its own printf).
void print_console(Device* d, const std::vector<vx::ConsoleChunk>& chunks, bool flush_partial) {
  for (const vx::ConsoleChunk& c : chunks) {
    std::string& p = d->partial[c.slot];
    p += c.bytes;
    size_t nl;
    while ((nl = p.find('\n')) != std::string::npos) {
      std::fwrite(p.data(), 1, nl + 1, stdout);
      p.erase(0, nl + 1);
    }
  }
  if (flush_partial)
    for (auto& [slot, p] : d->partial)
      if (!p.empty()) {
        std::fwrite(p.data(), 1, p.size(), stdout);
        std::fputc('\n', stdout);
        p.clear();
      }
}

Buffer* new_buffer(Device* d, uint32_t id, uint64_t addr, uint64_t size) {
  auto* b = new Buffer{d, id, addr, size};
  std::lock_guard<std::mutex> lock(g_mutex);
  g_buffers.insert(b);
  return b;
}

void drop_buffer(Buffer* b) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_buffers.erase(b);
  }
  delete b;
}

Result<std::vector<uint8_t>> read_file(const char* filename) {
  if (!filename) return vx::make_error("null file name");
  return vx::read_input_file(filename, vx::kMaxKernelImageBytes);
}

}  // namespace

VX_API int vx_dev_open(vx_device_h* hdevice) {
  const char* fn = "vx_dev_open";
  if (!hdevice) return report(fn, "null output pointer");
  auto d = std::make_unique<Device>();
  if (const char* fd_text = std::getenv(vx::host::kChannelEnv); fd_text && *fd_text) {
    char* end = nullptr;
    long fd = std::strtol(fd_text, &end, 10);
    if (*end != '\0' || fd < 0)
      return report(fn, std::string(vx::host::kChannelEnv) + "='" + fd_text + "' is not a descriptor");
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      for (Device* o : g_devices)
        if (o->fd == int(fd)) return report(fn, "the device is already open (vxreplay debugs one device per program)");
    }
    d->fd = int(fd);
    d->in = std::make_unique<vx::host::Receiver>(d->fd);
    if (!g_rings_tried) {
      g_rings_tried = true;
      if (const char* rings_text = std::getenv(vx::host::kRingsEnv); rings_text && *rings_text) {
        long rfd = std::strtol(rings_text, &end, 10);
        auto rings = *end == '\0' && rfd >= 0 ? vx::host::SharedRings::attach(int(rfd))
                                              : Result<vx::host::SharedRings>(vx::make_error("not a descriptor"));
        if (rings) {
          rings->close_memfd();  // the mapping stays; the program's own children do not inherit it
          // A later process of the program (the channel moved onto the rings before it started).
          g_on_rings = rings->in_use();
          g_rings.emplace(std::move(rings).value());
        } else {
          if (*end == '\0' && rfd >= 0) ::close(int(rfd));
          // The socket carries the messages then, slower but the same.
          report(fn, std::string(vx::host::kRingsEnv) + "='" + rings_text + "': " + rings.error().message +
                         " (using the socket)");
        }
      }
    }
    if (g_on_rings) {
      d->rings = &*g_rings;
      if (auto u = d->in->use_rings(d->rings); !u) return report(fn, u.error().message);
    }
    vx::host::Writer w;
    w.u32(vx::host::kProtocolVersion).u32(g_rings ? 1 : 0);
    auto r = call(d.get(), Op::Hello, w);
    if (!r) return report(fn, r.error().message);
    vx::host::Reader in(*r);
    uint32_t version = 0, rings = 0;
    std::string cfg_text, error;
    if (!in.u32(&version) || !in.str(&cfg_text) || !in.u32(&rings) || (rings == 1 && !g_rings))
      return report(fn, "malformed reply");
    if (rings == 1 && !g_on_rings) {
      g_on_rings = true;
      d->rings = &*g_rings;
      if (auto u = d->in->use_rings(d->rings); !u) return report(fn, u.error().message);
    }
    auto cfg = vx::DeviceConfig::parse(cfg_text, &error);
    if (!cfg) return report(fn, "vxreplay's device shape '" + cfg_text + "': " + error);
    d->config = *cfg;
  } else {
    std::string error;
    const char* cfg_text = std::getenv("VX_CONFIG");
    auto cfg = vx::DeviceConfig::parse(cfg_text && *cfg_text ? cfg_text : "1x1x4x4", &error);
    if (!cfg) return report(fn, std::string("VX_CONFIG: ") + error);
    auto opened = vx::open_model_device(*cfg, vx::RunOptions{});
    if (!opened) return report(fn, opened.error().message);
    d->driver = std::move(opened).value();
    d->dev = std::make_unique<vx::host::HostDevice>(*d->driver);
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_devices.insert(d.get());
  *hdevice = d.release();
  return 0;
}

VX_API int vx_dev_close(vx_device_h hdevice) {
  Device* d = device_of(hdevice, "vx_dev_close");
  if (!d) return -1;
  if (d->fd >= 0) {
    vx::host::Writer w;
    (void)call(d, Op::Close, w);
  }
  std::fflush(stdout);
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto it = g_buffers.begin(); it != g_buffers.end();) {
    if ((*it)->device == d) {
      delete *it;
      it = g_buffers.erase(it);
    } else {
      ++it;
    }
  }
  g_devices.erase(d);
  delete d;
  return 0;
}

VX_API int vx_dev_caps(vx_device_h hdevice, uint32_t caps_id, uint64_t* value) {
  const char* fn = "vx_dev_caps";
  Device* d = device_of(hdevice, fn);
  if (!d) return -1;
  if (!value) return report(fn, "null output pointer");
  if (d->fd < 0) {
    auto v = d->dev->caps(caps_id);
    if (!v) return report(fn, v.error().message);
    *value = *v;
    return 0;
  }
  vx::host::Writer w;
  w.u32(caps_id);
  auto r = call(d, Op::Caps, w);
  if (!r) return report(fn, r.error().message);
  vx::host::Reader in(*r);
  if (!in.u64(value)) return report(fn, "malformed reply");
  return 0;
}

VX_API int vx_mem_alloc(vx_device_h hdevice, uint64_t size, int flags, vx_buffer_h* hbuffer) {
  const char* fn = "vx_mem_alloc";
  Device* d = device_of(hdevice, fn);
  if (!d) return -1;
  if (!hbuffer) return report(fn, "null output pointer");
  uint32_t id = 0;
  uint64_t addr = 0;
  if (d->fd < 0) {
    auto r = d->dev->mem_alloc(size, flags);
    if (!r) return report(fn, r.error().message);
    id = *r;
    addr = d->dev->buffer(id)->addr;
  } else {
    vx::host::Writer w;
    w.u64(size).i32(flags);
    auto r = call(d, Op::Alloc, w);
    if (!r) return report(fn, r.error().message);
    vx::host::Reader in(*r);
    if (!in.u32(&id) || !in.u64(&addr)) return report(fn, "malformed reply");
  }
  *hbuffer = new_buffer(d, id, addr, size);
  return 0;
}

VX_API int vx_mem_reserve(vx_device_h hdevice, uint64_t address, uint64_t size, int flags, vx_buffer_h* hbuffer) {
  const char* fn = "vx_mem_reserve";
  Device* d = device_of(hdevice, fn);
  if (!d) return -1;
  if (!hbuffer) return report(fn, "null output pointer");
  uint32_t id = 0;
  if (d->fd < 0) {
    auto r = d->dev->mem_reserve(address, size, flags);
    if (!r) return report(fn, r.error().message);
    id = *r;
  } else {
    vx::host::Writer w;
    w.u64(address).u64(size).i32(flags);
    auto r = call(d, Op::Reserve, w);
    if (!r) return report(fn, r.error().message);
    vx::host::Reader in(*r);
    if (!in.u32(&id)) return report(fn, "malformed reply");
  }
  *hbuffer = new_buffer(d, id, address, size);
  return 0;
}

VX_API int vx_mem_free(vx_buffer_h hbuffer) {
  const char* fn = "vx_mem_free";
  // As free(NULL): nothing to do.
  if (!hbuffer) return 0;
  Buffer* b = buffer_of(hbuffer, fn);
  if (!b) return -1;
  if (b->device->fd < 0) {
    if (auto r = b->device->dev->mem_free(b->id); !r) return report(fn, r.error().message);
  } else {
    vx::host::Writer w;
    w.u32(b->id);
    if (auto r = call(b->device, Op::Free, w); !r) return report(fn, r.error().message);
    b->device->kernels.erase(b->id);
  }
  drop_buffer(b);
  return 0;
}

VX_API int vx_mem_access(vx_buffer_h hbuffer, uint64_t offset, uint64_t size, int flags) {
  const char* fn = "vx_mem_access";
  Buffer* b = buffer_of(hbuffer, fn);
  if (!b) return -1;
  if (b->device->fd < 0) {
    if (auto r = b->device->dev->mem_access(b->id, offset, size, flags); !r) return report(fn, r.error().message);
    return 0;
  }
  vx::host::Writer w;
  w.u32(b->id).u64(offset).u64(size).i32(flags);
  if (auto r = call(b->device, Op::Access, w); !r) return report(fn, r.error().message);
  return 0;
}

VX_API int vx_mem_address(vx_buffer_h hbuffer, uint64_t* address) {
  const char* fn = "vx_mem_address";
  Buffer* b = buffer_of(hbuffer, fn);
  if (!b) return -1;
  if (!address) return report(fn, "null output pointer");
  *address = b->addr;
  return 0;
}

VX_API int vx_mem_info(vx_device_h hdevice, uint64_t* mem_free, uint64_t* mem_used) {
  const char* fn = "vx_mem_info";
  Device* d = device_of(hdevice, fn);
  if (!d) return -1;
  uint64_t f = 0, u = 0;
  if (d->fd < 0) {
    auto r = d->dev->mem_info();
    if (!r) return report(fn, r.error().message);
    f = r->first;
    u = r->second;
  } else {
    vx::host::Writer w;
    auto r = call(d, Op::Info, w);
    if (!r) return report(fn, r.error().message);
    vx::host::Reader in(*r);
    if (!in.u64(&f) || !in.u64(&u)) return report(fn, "malformed reply");
  }
  if (mem_free) *mem_free = f;
  if (mem_used) *mem_used = u;
  return 0;
}

VX_API int vx_copy_to_dev(vx_buffer_h hbuffer, const void* host_ptr, uint64_t dst_offset, uint64_t size) {
  const char* fn = "vx_copy_to_dev";
  Buffer* b = buffer_of(hbuffer, fn);
  if (!b) return -1;
  if (!host_ptr && size > 0) return report(fn, "null host pointer");
  std::span<const uint8_t> bytes(static_cast<const uint8_t*>(host_ptr), size);
  if (b->device->fd < 0) {
    if (auto r = b->device->dev->copy_to_dev(b->id, dst_offset, bytes); !r) return report(fn, r.error().message);
    return 0;
  }
  if (dst_offset + size > b->size || dst_offset + size < dst_offset)
    return report(fn, "a copy of " + std::to_string(size) + " bytes at offset " + std::to_string(dst_offset) +
                          " runs past the end of the " + std::to_string(b->size) + "-byte buffer");
  vx::host::Writer w;
  w.u32(b->id).u64(dst_offset).bytes(bytes);
  if (auto r = call(b->device, Op::CopyTo, w); !r) return report(fn, r.error().message);
  return 0;
}

VX_API int vx_copy_from_dev(void* host_ptr, vx_buffer_h hbuffer, uint64_t src_offset, uint64_t size) {
  const char* fn = "vx_copy_from_dev";
  Buffer* b = buffer_of(hbuffer, fn);
  if (!b) return -1;
  if (!host_ptr && size > 0) return report(fn, "null host pointer");
  std::span<uint8_t> bytes(static_cast<uint8_t*>(host_ptr), size);
  if (b->device->fd < 0) {
    if (auto r = b->device->dev->copy_from_dev(b->id, src_offset, bytes); !r) return report(fn, r.error().message);
    return 0;
  }
  vx::host::Writer w;
  w.u32(b->id).u64(src_offset).u64(size);
  auto r = call(b->device, Op::CopyFrom, w);
  if (!r) return report(fn, r.error().message);
  if (r->size() != size) return report(fn, "malformed reply");
  if (size > 0) std::memcpy(host_ptr, r->data(), size);
  return 0;
}

VX_API int vx_start(vx_device_h hdevice, vx_buffer_h hkernel, vx_buffer_h harguments) {
  const char* fn = "vx_start";
  Device* d = device_of(hdevice, fn);
  if (!d) return -1;
  Buffer* k = buffer_of(hkernel, fn);
  if (!k) return -1;
  Buffer* a = nullptr;
  if (harguments && !(a = buffer_of(harguments, fn))) return -1;
  if (k->device != d || (a && a->device != d)) return report(fn, "a buffer of another device");
  if (d->fd < 0) {
    if (auto r = d->dev->start(k->id, a ? a->id : 0); !r) return report(fn, r.error().message);
    return 0;
  }
  auto image = d->kernels.find(k->id);
  auto launch =
      vx::host::resolve_start(image == d->kernels.end() ? nullptr : &image->second, k->id, uint32_t(k->addr), d->dcrs,
                              d->config, a ? std::optional<uint32_t>(uint32_t(a->addr)) : std::nullopt);
  if (!launch) return report(fn, launch.error().message);
  vx::host::Writer w;
  w.u32(k->id).u32(a ? a->id : 0);
  if (auto r = post(d, Op::Start, w); !r) return report(fn, r.error().message);
  return 0;
}

VX_API int vx_ready_wait(vx_device_h hdevice, uint64_t timeout) {
  const char* fn = "vx_ready_wait";
  Device* d = device_of(hdevice, fn);
  if (!d) return -1;
  if (d->fd >= 0) {
    // Under vxreplay the timeout counts device time, which stands still while the kernel sits at
    // a breakpoint: vxreplay answers with the timeout's error when it runs out.
    vx::host::Writer w;
    w.u64(timeout);
    auto r = call(d, Op::Wait, w);
    if (!r) return report(fn, r.error().message);
    vx::host::Reader in(*r);
    uint32_t n = 0;
    std::vector<vx::ConsoleChunk> chunks;
    if (!in.u32(&n)) return report(fn, "malformed reply");
    for (uint32_t i = 0; i < n; ++i) {
      vx::ConsoleChunk c;
      if (!in.u32(&c.slot) || !in.u32(&c.lost) || !in.str(&c.bytes)) return report(fn, "malformed reply");
      chunks.push_back(std::move(c));
    }
    print_console(d, chunks, true);
    return 0;
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    vx::DeviceEvent ev = d->driver->wait(kWaitSlice);
    print_console(d, d->driver->read_console(), false);
    switch (ev.kind) {
      case vx::EventKind::Budget: {
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
        if (uint64_t(ms.count()) >= timeout)
          return report(fn, "timed out after " + std::to_string(timeout) + " ms (the kernel is still running)");
        continue;
      }
      case vx::EventKind::Idle:
      case vx::EventKind::Completed:
        // Completed: one buffer finished; wait on until everything queued has.
        if (ev.kind == vx::EventKind::Completed) continue;
        print_console(d, {}, true);
        return 0;
      case vx::EventKind::Exception:
        print_console(d, {}, true);
        d->driver->abort();
        return report(fn, "the kernel stopped on a device exception: " + ev.exception.to_string());
      case vx::EventKind::CommandError:
        print_console(d, {}, true);
        return report(fn, "the launch failed: " + ev.message);
      default:
        d->driver->abort();
        return report(fn, std::string("unexpected device event ") + vx::event_kind_name(ev.kind));
    }
  }
}

VX_API int vx_dcr_read(vx_device_h hdevice, uint32_t addr, uint32_t tag, uint32_t* value) {
  const char* fn = "vx_dcr_read";
  Device* d = device_of(hdevice, fn);
  if (!d) return -1;
  if (!value) return report(fn, "null output pointer");
  // The model's DCRs are the KMU's, one per device: tag 0 only.
  if (tag != 0) return report(fn, "tag " + std::to_string(tag) + ": the model's DCRs answer to tag 0 only");
  if (d->fd < 0) {
    auto r = d->dev->dcr_read(addr);
    if (!r) return report(fn, r.error().message);
    *value = *r;
    return 0;
  }
  // The host's own DCR writes, kept here as in vxreplay.
  auto r = d->dcrs.read(addr);
  if (!r) return report(fn, r.error().message);
  *value = *r;
  return 0;
}

VX_API int vx_dcr_write(vx_device_h hdevice, uint32_t addr, uint32_t value) {
  const char* fn = "vx_dcr_write";
  Device* d = device_of(hdevice, fn);
  if (!d) return -1;
  if (d->fd < 0) {
    if (auto r = d->dev->dcr_write(addr, value); !r) return report(fn, r.error().message);
    return 0;
  }
  if (auto r = d->dcrs.write(addr, value); !r) return report(fn, r.error().message);
  vx::host::Writer w;
  w.u32(addr).u32(value);
  if (auto r = post(d, Op::DcrWrite, w); !r) return report(fn, r.error().message);
  return 0;
}

VX_API int vx_upload_kernel_bytes(vx_device_h hdevice, const void* content, uint64_t size, vx_buffer_h* hbuffer) {
  const char* fn = "vx_upload_kernel_bytes";
  Device* d = device_of(hdevice, fn);
  if (!d) return -1;
  if (!content || !hbuffer) return report(fn, "null pointer");
  if (size > vx::kMaxKernelImageBytes) return report(fn, "an image of " + std::to_string(size) + " bytes is too large");
  std::span<const uint8_t> bytes(static_cast<const uint8_t*>(content), size);
  const std::string name = "kernel";
  uint32_t id = 0;
  uint64_t addr = 0, extent = 0;
  if (d->fd < 0) {
    auto r = d->dev->upload_kernel(bytes, name);
    if (!r) return report(fn, r.error().message);
    id = *r;
    addr = d->dev->buffer(id)->addr;
    extent = d->dev->buffer(id)->size;
  } else {
    vx::host::Writer w;
    w.str(name).bytes(bytes);
    auto r = call(d, Op::Upload, w);
    if (!r) return report(fn, r.error().message);
    vx::host::Reader in(*r);
    if (!in.u32(&id) || !in.u64(&addr) || !in.u64(&extent)) return report(fn, "malformed reply");
    if (auto image = vx::parse_kernel_image(bytes, name)) d->kernels[id] = std::move(image).value();
  }
  *hbuffer = new_buffer(d, id, addr, extent);
  return 0;
}

VX_API int vx_upload_kernel_file(vx_device_h hdevice, const char* filename, vx_buffer_h* hbuffer) {
  const char* fn = "vx_upload_kernel_file";
  Device* d = device_of(hdevice, fn);
  if (!d) return -1;
  if (!hbuffer) return report(fn, "null output pointer");
  auto bytes = read_file(filename);
  if (!bytes) return report(fn, bytes.error().message);
  // The file's name (not "kernel") names the image in messages and in the debugger's recording.
  const std::string name = filename;
  // A .vxbin's thread-local storage comes from the ELF beside it (the device side adopts it too):
  // say so, alone and under vxreplay alike.
  if (auto image = vx::parse_kernel_image(*bytes, name))
    if (auto note = vx::adopt_tls_beside(*image)) {
      std::fflush(stdout);
      std::fprintf(stderr, "vortex: %s: %s\n", fn, note->c_str());
    }
  uint32_t id = 0;
  uint64_t addr = 0, extent = 0;
  if (d->fd < 0) {
    auto r = d->dev->upload_kernel(*bytes, name);
    if (!r) return report(fn, r.error().message);
    id = *r;
    addr = d->dev->buffer(id)->addr;
    extent = d->dev->buffer(id)->size;
  } else {
    vx::host::Writer w;
    w.str(name).bytes(*bytes);
    auto r = call(d, Op::Upload, w);
    if (!r) return report(fn, r.error().message);
    vx::host::Reader in(*r);
    if (!in.u32(&id) || !in.u64(&addr) || !in.u64(&extent)) return report(fn, "malformed reply");
    if (auto image = vx::parse_kernel_image(*bytes, name)) d->kernels[id] = std::move(image).value();
  }
  *hbuffer = new_buffer(d, id, addr, extent);
  return 0;
}

VX_API int vx_upload_bytes(vx_device_h hdevice, const void* content, uint64_t size, vx_buffer_h* hbuffer) {
  const char* fn = "vx_upload_bytes";
  if (!device_of(hdevice, fn)) return -1;
  if (!content || !hbuffer) return report(fn, "null pointer");
  vx_buffer_h b = nullptr;
  if (vx_mem_alloc(hdevice, size, VX_MEM_READ, &b) != 0) return -1;
  if (vx_copy_to_dev(b, content, 0, size) != 0) {
    vx_mem_free(b);
    return -1;
  }
  *hbuffer = b;
  return 0;
}

VX_API int vx_upload_file(vx_device_h hdevice, const char* filename, vx_buffer_h* hbuffer) {
  const char* fn = "vx_upload_file";
  if (!device_of(hdevice, fn)) return -1;
  auto bytes = read_file(filename);
  if (!bytes) return report(fn, bytes.error().message);
  return vx_upload_bytes(hdevice, bytes->data(), bytes->size(), hbuffer);
}

VX_API int vx_dump_perf(vx_device_h hdevice, FILE* stream) {
  const char* fn = "vx_dump_perf";
  Device* d = device_of(hdevice, fn);
  if (!d) return -1;
  if (!stream) return report(fn, "null stream");
  std::string text;
  if (d->fd < 0) {
    text = d->dev->perf_text();
  } else {
    vx::host::Writer w;
    auto r = call(d, Op::Perf, w);
    if (!r) return report(fn, r.error().message);
    text.assign(r->begin(), r->end());
  }
  std::fputs(text.c_str(), stream);
  return 0;
}

namespace vx::host {

CallerScope::CallerScope(const char* caller) : prev_(t_caller) {
  if (!t_caller) t_caller = caller;  // the outermost call is the user's
}
CallerScope::~CallerScope() { t_caller = prev_; }

}  // namespace vx::host

VX_API int vx_copy_dev_to_dev(vx_buffer_h hdest_buffer, uint64_t dest_offset, vx_buffer_h hsrc_buffer,
                              uint64_t src_offset, uint64_t size) {
  const char* fn = "vx_copy_dev_to_dev";
  Buffer* dst = buffer_of(hdest_buffer, fn);
  if (!dst) return -1;
  Buffer* src = buffer_of(hsrc_buffer, fn);
  if (!src) return -1;
  if (dst->device != src->device) return report(fn, "buffers of two devices");
  if (size > uint64_t(vx::host::kMaxMessageBytes))
    return report(fn, std::to_string(size) + " bytes in one copy is more than the channel takes");
  // Through the host: a read then a write, the two operations the recording keeps.
  std::vector<uint8_t> bytes(size);
  if (vx_copy_from_dev(bytes.data(), hsrc_buffer, src_offset, size) != 0) return -1;
  return vx_copy_to_dev(hdest_buffer, bytes.data(), dest_offset, size);
}

VX_API int vx_mpm_query(vx_device_h hdevice, uint32_t mpm_class, uint32_t addr, uint32_t core_id, uint64_t* value) {
  const char* fn = "vx_mpm_query";
  if (!device_of(hdevice, fn)) return -1;
  (void)addr;
  (void)core_id;
  (void)value;
  return report(fn, "class " + std::to_string(mpm_class) +
                        ": the model keeps no per-core performance counters by upstream's classes (not supported "
                        "yet; vx_dump_perf prints the model's own)");
}

VX_API int vx_check_occupancy(vx_device_h hdevice, uint32_t block_size, uint32_t max_localmem) {
  const char* fn = "vx_check_occupancy";
  Device* d = device_of(hdevice, fn);
  if (!d) return -1;
  uint64_t nt = 0, nw = 0, lmem = 0;
  if (vx_dev_caps(hdevice, VX_CAPS_NUM_THREADS, &nt) || vx_dev_caps(hdevice, VX_CAPS_NUM_WARPS, &nw) ||
      vx_dev_caps(hdevice, VX_CAPS_LOCAL_MEM_SIZE, &lmem))
    return -1;
  if (block_size == 0) return report(fn, "a block of 0 threads");
  if (block_size > nt * nw)
    return report(fn, "a block of " + std::to_string(block_size) + " threads is more than a core runs (" +
                          std::to_string(nw) + " warps of " + std::to_string(nt) + ")");
  if (max_localmem > lmem)
    return report(fn, std::to_string(max_localmem) + " bytes of local memory per block is more than a core has (" +
                          std::to_string(lmem) + ")");
  return 0;
}

VX_API int vx_max_occupancy_grid(vx_device_h hdevice, uint32_t ndim, const uint32_t* global_dim, uint32_t* grid_dim,
                                 uint32_t* block_dim) {
  const char* fn = "vx_max_occupancy_grid";
  if (!device_of(hdevice, fn)) return -1;
  if (ndim < 1 || ndim > 3) return report(fn, "ndim " + std::to_string(ndim) + " is not 1, 2 or 3");
  if (!global_dim || !grid_dim || !block_dim) return report(fn, "a null pointer");
  uint64_t nt = 0, nw = 0;
  if (vx_dev_caps(hdevice, VX_CAPS_NUM_THREADS, &nt) || vx_dev_caps(hdevice, VX_CAPS_NUM_WARPS, &nw)) return -1;
  // Upstream's rule: the block is the device's natural shape (threads, warps, 1), the grid covers
  // the work items.
  const uint32_t natural[3] = {uint32_t(nt), uint32_t(nw), 1};
  for (uint32_t i = 0; i < ndim; ++i) {
    block_dim[i] = natural[i];
    grid_dim[i] = (global_dim[i] + natural[i] - 1) / natural[i];
  }
  return 0;
}
