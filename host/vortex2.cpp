// libvortex's vortex2.h: upstream's asynchronous API over this library's synchronous calls
// (vortex.cpp), so that it runs alone on the in-process model and, under `vxreplay run --`, through
// the debugger with every device operation recorded. A queue performs each command when it is
// enqueued, in order, and returns its event complete; events are timeline counters.
#include <elf.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "device/image.hpp"
#include "device/input_file.hpp"
#include "host/vortex.h"
#include "host/vortex_internal.hpp"

#define VX_API extern "C" __attribute__((visibility("default")))

struct vx_queue {
  vx_device_h dev = nullptr;
  int refs = 1;
  bool profiling = false;
};
struct vx_event {
  vx_device_h dev = nullptr;
  int refs = 1;
  uint64_t value = 0;
  vx_result_t status = VX_SUCCESS;  // a command that failed: its event says so
  vx_profile_info_t profile{};
};
struct vx_module {
  vx_device_h dev = nullptr;
  vx_buffer_h image = nullptr;  // the uploaded image (vx_upload_kernel_bytes)
  int refs = 1;
  vx::KernelImage parsed;
  std::vector<uint8_t> bytes;  // for ELF symbol lookups
};
struct vx_kernel {
  vx_module* mod = nullptr;
  int refs = 1;
  uint32_t pc = 0;
  std::string name;
};

namespace {

std::mutex g_mu;
std::map<vx_device_h, int> g_device_refs;  // vortex2's references to devices it opened
std::map<vx_buffer_h, int> g_buffer_refs;  // extra references (vx_buffer_retain)
std::set<vx_queue*> g_queues;
std::set<vx_event*> g_events;
std::set<vx_module*> g_modules;
std::set<vx_kernel*> g_kernels;
struct Mapping {
  vx_buffer_h buf;
  uint64_t offset, size;
  uint32_t flags;
  std::vector<uint8_t> bytes;
};
std::map<void*, Mapping> g_maps;

uint64_t now_ns() {
  return uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

vx_result_t fail(const char* fn, vx_result_t code, const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "vortex: %s: %s (%s)\n", fn, message.c_str(), vx_result_string(code));
  return code;
}

// A synchronous call's failure (it said why on stderr already).
vx_result_t failed(int rc) { return rc == 0 ? VX_SUCCESS : VX_ERR_INVALID_VALUE; }

template <class T>
bool live(const std::set<T*>& set, T* h) {
  return h && set.count(h);
}

// One more reference to a live handle of one kind.
template <class T>
vx_result_t retain(const char* fn, const std::set<T*>& set, T* h, const char* what) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!live(set, h)) return fail(fn, VX_ERR_INVALID_HANDLE, std::string("not a live ") + what);
  ++h->refs;
  return VX_SUCCESS;
}

// One reference less; the last one deletes the handle.
template <class T>
vx_result_t release(const char* fn, std::set<T*>& set, T* h, const char* what) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!live(set, h)) return fail(fn, VX_ERR_INVALID_HANDLE, std::string("not a live ") + what);
  if (--h->refs > 0) return VX_SUCCESS;
  set.erase(h);
  delete h;
  return VX_SUCCESS;
}

// The wait list: every event must be live and of this queue's device; a failed one fails the command.
vx_result_t check_waits(const char* fn, vx_queue* q, uint32_t n, const vx_event_h* evs) {
  if (n && !evs) return fail(fn, VX_ERR_INVALID_VALUE, "a wait list of " + std::to_string(n) + " events and no array");
  std::lock_guard<std::mutex> lock(g_mu);
  for (uint32_t i = 0; i < n; ++i) {
    if (!live(g_events, evs[i]))
      return fail(fn, VX_ERR_INVALID_HANDLE, "wait list entry " + std::to_string(i) + " is not a live event");
    if (evs[i]->dev != q->dev)
      return fail(fn, VX_ERR_INVALID_VALUE, "wait list entry " + std::to_string(i) + " is an event of another device");
    if (evs[i]->status != VX_SUCCESS)
      return fail(fn, VX_ERR_EVENT_FAILED, "wait list entry " + std::to_string(i) + " failed");
    if (evs[i]->value == 0)
      return fail(fn, VX_ERR_NOT_SUPPORTED,
                  "wait list entry " + std::to_string(i) +
                      " is not signaled yet, and this library runs a command when it is enqueued (not supported yet)");
  }
  return VX_SUCCESS;
}

// The handle when it is live; else the error is reported and nullptr.
template <class T>
T* live_handle(const char* fn, const std::set<T*>& set, T* h, const char* what) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (live(set, h)) return h;
  fail(fn, VX_ERR_INVALID_HANDLE, std::string("not a live ") + what + " (released, or never created)");
  return nullptr;
}

vx_queue* queue_of(const char* fn, vx_queue_h q) { return live_handle(fn, g_queues, q, "queue"); }

// Runs one command of queue q: its wait list, the work, and its event.
template <class Work>
vx_result_t command(const char* fn, vx_queue_h qh, uint32_t n_wait, const vx_event_h* waits, vx_event_h* out_event,
                    Work&& work) {
  vx_queue* q = queue_of(fn, qh);
  if (!q) return VX_ERR_INVALID_HANDLE;
  if (vx_result_t r = check_waits(fn, q, n_wait, waits); r != VX_SUCCESS) return r;
  vx_profile_info_t prof{};
  prof.queued_ns = prof.submit_ns = prof.start_ns = now_ns();
  vx_result_t r;
  {
    vx::host::CallerScope caller(fn);
    r = work();
  }
  prof.end_ns = now_ns();
  if (out_event) {
    auto* ev = new vx_event{q->dev, 1, r == VX_SUCCESS ? 1u : 0u, r, q->profiling ? prof : vx_profile_info_t{}};
    std::lock_guard<std::mutex> lock(g_mu);
    g_events.insert(ev);
    *out_event = ev;
  }
  return r;
}

// A named function of an ELF image (its symbol table), for vx_module_get_kernel.
std::optional<uint32_t> elf_symbol(const std::vector<uint8_t>& f, const std::string& name) {
  if (f.size() < sizeof(Elf32_Ehdr)) return std::nullopt;
  Elf32_Ehdr eh;
  std::memcpy(&eh, f.data(), sizeof eh);
  if (eh.e_shentsize != sizeof(Elf32_Shdr) ||
      uint64_t(eh.e_shoff) + uint64_t(eh.e_shnum) * sizeof(Elf32_Shdr) > f.size())
    return std::nullopt;
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    Elf32_Shdr sh;
    std::memcpy(&sh, f.data() + eh.e_shoff + i * sizeof(Elf32_Shdr), sizeof sh);
    if (sh.sh_type != SHT_SYMTAB || sh.sh_entsize != sizeof(Elf32_Sym) || sh.sh_link >= eh.e_shnum) continue;
    Elf32_Shdr strs;
    std::memcpy(&strs, f.data() + eh.e_shoff + sh.sh_link * sizeof(Elf32_Shdr), sizeof strs);
    if (uint64_t(sh.sh_offset) + sh.sh_size > f.size() || uint64_t(strs.sh_offset) + strs.sh_size > f.size()) continue;
    for (uint32_t k = 0; k < sh.sh_size / sizeof(Elf32_Sym); ++k) {
      Elf32_Sym s;
      std::memcpy(&s, f.data() + sh.sh_offset + k * sizeof(Elf32_Sym), sizeof s);
      if (ELF32_ST_TYPE(s.st_info) != STT_FUNC || s.st_name >= strs.sh_size) continue;
      const char* n = reinterpret_cast<const char*>(f.data() + strs.sh_offset + s.st_name);
      const size_t max = strs.sh_size - s.st_name;
      if (strnlen(n, max) < max && name == n) return s.st_value;
    }
  }
  return std::nullopt;
}

}  // namespace

VX_API const char* vx_result_string(vx_result_t r) {
  switch (r) {
    case VX_SUCCESS: return "VX_SUCCESS";
    case VX_ERR_INVALID_HANDLE: return "VX_ERR_INVALID_HANDLE";
    case VX_ERR_INVALID_INFO: return "VX_ERR_INVALID_INFO";
    case VX_ERR_INVALID_VALUE: return "VX_ERR_INVALID_VALUE";
    case VX_ERR_OUT_OF_HOST_MEMORY: return "VX_ERR_OUT_OF_HOST_MEMORY";
    case VX_ERR_OUT_OF_DEVICE_MEMORY: return "VX_ERR_OUT_OF_DEVICE_MEMORY";
    case VX_ERR_DEVICE_LOST: return "VX_ERR_DEVICE_LOST";
    case VX_ERR_TIMEOUT: return "VX_ERR_TIMEOUT";
    case VX_ERR_EVENT_FAILED: return "VX_ERR_EVENT_FAILED";
    case VX_ERR_NOT_SUPPORTED: return "VX_ERR_NOT_SUPPORTED";
    case VX_ERR_INTERNAL: return "VX_ERR_INTERNAL";
  }
  return "an unknown vx_result_t";
}

// --- Devices ------------------------------------------------------------------------------------------

VX_API vx_result_t vx_device_count(uint32_t* out_count) {
  if (!out_count) return fail("vx_device_count", VX_ERR_INVALID_VALUE, "null output pointer");
  *out_count = 1;  // one device: the model, or the one vxreplay debugs
  return VX_SUCCESS;
}

VX_API vx_result_t vx_device_open(uint32_t index, vx_device_h* out) {
  const char* fn = "vx_device_open";
  if (!out) return fail(fn, VX_ERR_INVALID_VALUE, "null output pointer");
  if (index != 0) return fail(fn, VX_ERR_INVALID_VALUE, "device " + std::to_string(index) + ": there is one device, 0");
  if (vx_dev_open(out) != 0) return VX_ERR_DEVICE_LOST;
  std::lock_guard<std::mutex> lock(g_mu);
  g_device_refs[*out] = 1;
  return VX_SUCCESS;
}

VX_API vx_result_t vx_device_retain(vx_device_h dev) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_device_refs.find(dev);
  if (it == g_device_refs.end())
    return fail("vx_device_retain", VX_ERR_INVALID_HANDLE, "not a device vx_device_open gave");
  ++it->second;
  return VX_SUCCESS;
}

VX_API vx_result_t vx_device_release(vx_device_h dev) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_device_refs.find(dev);
    if (it == g_device_refs.end())
      return fail("vx_device_release", VX_ERR_INVALID_HANDLE, "not a device vx_device_open gave");
    if (--it->second > 0) return VX_SUCCESS;
    g_device_refs.erase(it);
  }
  return vx_dev_close(dev) == 0 ? VX_SUCCESS : VX_ERR_DEVICE_LOST;
}

VX_API vx_result_t vx_device_query(vx_device_h dev, uint32_t caps_id, uint64_t* out_value) {
  if (vx_dev_caps(dev, caps_id, out_value) != 0) return VX_ERR_INVALID_VALUE;
  return VX_SUCCESS;
}

VX_API vx_result_t vx_device_memory_info(vx_device_h dev, uint64_t* free, uint64_t* used) {
  return failed(vx_mem_info(dev, free, used));
}

VX_API vx_result_t vx_device_dump_perf(vx_device_h dev, FILE* stream) {
  return failed(vx_dump_perf(dev, stream ? stream : stdout));
}

VX_API vx_result_t vx_device_mpm_query(vx_device_h dev, uint32_t mpm_class, uint32_t addr, uint32_t core_id,
                                       uint64_t* value) {
  // vx_mpm_query says why the model has no such counters ("vortex: vx_device_mpm_query: vx_mpm_query: ...").
  vx::host::CallerScope caller("vx_device_mpm_query");
  return vx_mpm_query(dev, mpm_class, addr, core_id, value) == 0 ? VX_SUCCESS : VX_ERR_NOT_SUPPORTED;
}

VX_API vx_result_t vx_device_max_occupancy_grid(vx_device_h dev, uint32_t ndim, const uint32_t* global_dim,
                                                uint32_t* grid_out, uint32_t* block_out) {
  return failed(vx_max_occupancy_grid(dev, ndim, global_dim, grid_out, block_out));
}

// --- Buffers ------------------------------------------------------------------------------------------

VX_API vx_result_t vx_buffer_create(vx_device_h dev, uint64_t size, uint32_t flags, vx_buffer_h* out) {
  if (flags & (VX_MEM_PIN_MEMORY | VX_MEM_PHYS | VX_MEM_HOST))
    flags &= VX_MEM_READ_WRITE;  // no MMU and no host aperture: every address is physical device memory
  if (vx_mem_alloc(dev, size, int(flags), out) != 0) return VX_ERR_OUT_OF_DEVICE_MEMORY;
  return VX_SUCCESS;
}

VX_API vx_result_t vx_buffer_reserve(vx_device_h dev, uint64_t address, uint64_t size, uint32_t flags,
                                     vx_buffer_h* out) {
  return failed(vx_mem_reserve(dev, address, size, int(flags & VX_MEM_READ_WRITE), out));
}

VX_API vx_result_t vx_buffer_retain(vx_buffer_h buf) {
  uint64_t addr = 0;
  if (vx_mem_address(buf, &addr) != 0) return VX_ERR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_buffer_refs[buf];
  return VX_SUCCESS;
}

VX_API vx_result_t vx_buffer_release(vx_buffer_h buf) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_buffer_refs.find(buf);
    if (it != g_buffer_refs.end()) {
      if (--it->second == 0) g_buffer_refs.erase(it);
      return VX_SUCCESS;
    }
  }
  return vx_mem_free(buf) == 0 ? VX_SUCCESS : VX_ERR_INVALID_HANDLE;
}

VX_API vx_result_t vx_buffer_address(vx_buffer_h buf, uint64_t* out_addr) {
  return vx_mem_address(buf, out_addr) == 0 ? VX_SUCCESS : VX_ERR_INVALID_HANDLE;
}

VX_API vx_result_t vx_buffer_access(vx_buffer_h buf, uint64_t offset, uint64_t size, uint32_t flags) {
  return failed(vx_mem_access(buf, offset, size, int(flags)));
}

// A mapping is a host copy: read from the device when the map allows reading, written back at the
// unmap when it allows writing.
VX_API vx_result_t vx_buffer_map(vx_buffer_h buf, uint64_t offset, uint64_t size, uint32_t flags, void** out_host_ptr) {
  const char* fn = "vx_buffer_map";
  if (!out_host_ptr) return fail(fn, VX_ERR_INVALID_VALUE, "null output pointer");
  Mapping m{buf, offset, size, flags, std::vector<uint8_t>(size)};
  if ((flags & VX_MEM_READ) && vx_copy_from_dev(m.bytes.data(), buf, offset, size) != 0) return VX_ERR_INVALID_VALUE;
  if (m.bytes.empty()) m.bytes.resize(1);
  void* p = m.bytes.data();
  std::lock_guard<std::mutex> lock(g_mu);
  g_maps.emplace(p, std::move(m));
  *out_host_ptr = p;
  return VX_SUCCESS;
}

VX_API vx_result_t vx_buffer_unmap(vx_buffer_h buf, void* host_ptr) {
  const char* fn = "vx_buffer_unmap";
  Mapping m;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_maps.find(host_ptr);
    if (it == g_maps.end() || it->second.buf != buf)
      return fail(fn, VX_ERR_INVALID_VALUE, "not a mapping of this buffer");
    m = std::move(it->second);
    g_maps.erase(it);
  }
  if ((m.flags & VX_MEM_WRITE) && m.size && vx_copy_to_dev(buf, m.bytes.data(), m.offset, m.size) != 0)
    return VX_ERR_INVALID_VALUE;
  return VX_SUCCESS;
}

// --- Modules and kernels ---------------------------------------------------------------------------------

namespace {

// A module from the image's bytes; path: the file they came from (the upload names it, so that a
// debugger finds the ELF beside a .vxbin), nullptr for bytes from memory.
vx_result_t load_module(const char* fn, vx_device_h dev, std::vector<uint8_t> bytes, const char* path,
                        vx_module_h* out) {
  auto* m = new vx_module;
  m->dev = dev;
  m->bytes = std::move(bytes);
  auto parsed = vx::parse_kernel_image(m->bytes, path ? path : "a module");
  if (!parsed) {
    delete m;
    return fail(fn, VX_ERR_INVALID_VALUE, parsed.error().message);
  }
  m->parsed = std::move(parsed).value();
  const int rc = path ? vx_upload_kernel_file(dev, path, &m->image)
                      : vx_upload_kernel_bytes(dev, m->bytes.data(), m->bytes.size(), &m->image);
  if (rc != 0) {
    delete m;
    return VX_ERR_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_modules.insert(m);
  *out = m;
  return VX_SUCCESS;
}

}  // namespace

VX_API vx_result_t vx_module_load_bytes(vx_device_h dev, const void* bytes, size_t size, vx_module_h* out) {
  const char* fn = "vx_module_load_bytes";
  if (!bytes || !out) return fail(fn, VX_ERR_INVALID_VALUE, "a null pointer");
  const auto* p = static_cast<const uint8_t*>(bytes);
  return load_module(fn, dev, std::vector<uint8_t>(p, p + size), nullptr, out);
}

VX_API vx_result_t vx_module_load_file(vx_device_h dev, const char* path, vx_module_h* out) {
  const char* fn = "vx_module_load_file";
  if (!path || !out) return fail(fn, VX_ERR_INVALID_VALUE, "a null pointer");
  auto bytes = vx::read_input_file(path, 512u << 20);
  if (!bytes) return fail(fn, VX_ERR_INVALID_VALUE, bytes.error().message);
  return load_module(fn, dev, std::move(bytes).value(), path, out);
}

VX_API vx_result_t vx_module_retain(vx_module_h mod) { return retain("vx_module_retain", g_modules, mod, "module"); }

VX_API vx_result_t vx_module_release(vx_module_h mod) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!live(g_modules, mod)) return fail("vx_module_release", VX_ERR_INVALID_HANDLE, "not a live module");
    if (--mod->refs > 0) return VX_SUCCESS;
    g_modules.erase(mod);
  }
  (void)vx_mem_free(mod->image);
  delete mod;
  return VX_SUCCESS;
}

VX_API vx_result_t vx_module_get_kernel(vx_module_h mod, const char* name, vx_kernel_h* out) {
  const char* fn = "vx_module_get_kernel";
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!live(g_modules, mod)) return fail(fn, VX_ERR_INVALID_HANDLE, "not a live module");
  }
  if (!name || !out) return fail(fn, VX_ERR_INVALID_VALUE, "a null pointer");
  const vx::KernelImage& img = mod->parsed;
  uint32_t pc = 0;
  if (!img.is_elf) {
    auto e = vx::vxbin_entry(img, name);
    if (!e) return fail(fn, VX_ERR_INVALID_VALUE, e.error().message);
    pc = *e;
  } else if (auto s = elf_symbol(mod->bytes, name)) {
    pc = *s;
  } else if (std::string(name) == "main" && img.launch && img.launch->entry) {
    pc = img.launch->entry;  // the image's own launch descriptor names its kernel
  } else {
    return fail(fn, VX_ERR_INVALID_VALUE, std::string("no function \"") + name + "\" in the module's ELF");
  }
  auto* k = new vx_kernel{mod, 1, pc, name};
  std::lock_guard<std::mutex> lock(g_mu);
  ++mod->refs;  // a kernel keeps its module
  g_kernels.insert(k);
  *out = k;
  return VX_SUCCESS;
}

VX_API vx_result_t vx_kernel_retain(vx_kernel_h k) { return retain("vx_kernel_retain", g_kernels, k, "kernel"); }

VX_API vx_result_t vx_kernel_release(vx_kernel_h k) {
  vx_module* mod = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!live(g_kernels, k)) return fail("vx_kernel_release", VX_ERR_INVALID_HANDLE, "not a live kernel");
    if (--k->refs > 0) return VX_SUCCESS;
    g_kernels.erase(k);
    mod = k->mod;
  }
  delete k;
  return vx_module_release(mod);
}

VX_API vx_result_t vx_kernel_get_max_block_size(vx_kernel_h k, uint32_t* x, uint32_t* y, uint32_t* z) {
  const char* fn = "vx_kernel_get_max_block_size";
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!live(g_kernels, k)) return fail(fn, VX_ERR_INVALID_HANDLE, "not a live kernel");
  }
  if (!x || !y || !z) return fail(fn, VX_ERR_INVALID_VALUE, "a null pointer");
  uint64_t nt = 0, nw = 0;
  if (vx_dev_caps(k->mod->dev, VX_CAPS_NUM_THREADS, &nt) || vx_dev_caps(k->mod->dev, VX_CAPS_NUM_WARPS, &nw))
    return VX_ERR_INVALID_VALUE;
  *x = uint32_t(nt);
  *y = uint32_t(nw);
  *z = 1;
  return VX_SUCCESS;
}

// --- Queues -------------------------------------------------------------------------------------------

VX_API vx_result_t vx_queue_create(vx_device_h dev, const vx_queue_info_t* info, vx_queue_h* out) {
  const char* fn = "vx_queue_create";
  if (!out) return fail(fn, VX_ERR_INVALID_VALUE, "null output pointer");
  uint64_t v = 0;
  if (vx_dev_caps(dev, VX_CAPS_VERSION, &v) != 0) return VX_ERR_INVALID_HANDLE;
  if (info && info->struct_size < sizeof(vx_queue_info_t))
    return fail(fn, VX_ERR_INVALID_INFO,
                "struct_size " + std::to_string(info->struct_size) + " is less than sizeof(vx_queue_info_t)");
  auto* q = new vx_queue{dev, 1, info && (info->flags & VX_QUEUE_PROFILING_ENABLE)};
  std::lock_guard<std::mutex> lock(g_mu);
  g_queues.insert(q);
  *out = q;
  return VX_SUCCESS;
}

VX_API vx_result_t vx_queue_retain(vx_queue_h q) { return retain("vx_queue_retain", g_queues, q, "queue"); }

VX_API vx_result_t vx_queue_release(vx_queue_h q) { return release("vx_queue_release", g_queues, q, "queue"); }

// Commands run when they are enqueued: there is never anything to flush or to wait for.
VX_API vx_result_t vx_queue_flush(vx_queue_h q) {
  return queue_of("vx_queue_flush", q) ? VX_SUCCESS : VX_ERR_INVALID_HANDLE;
}
VX_API vx_result_t vx_queue_finish(vx_queue_h q, uint64_t) {
  return queue_of("vx_queue_finish", q) ? VX_SUCCESS : VX_ERR_INVALID_HANDLE;
}

// --- Commands -----------------------------------------------------------------------------------------

namespace {

// One launch, run to its end (a command of vx_enqueue_launch or of a vx_enqueue_commands batch).
vx_result_t launch_now(const char* fn, vx_device_h dev, const vx_launch_info_t* info) {
  if (!info) return fail(fn, VX_ERR_INVALID_VALUE, "null launch info");
  if (info->struct_size < offsetof(vx_launch_info_t, cluster_dim))
    return fail(fn, VX_ERR_INVALID_INFO,
                "struct_size " + std::to_string(info->struct_size) + " is too small for vx_launch_info_t");
  vx_kernel* k = info->kernel;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (k && !live(g_kernels, k)) return fail(fn, VX_ERR_INVALID_HANDLE, "not a live kernel");
  }
  if (!k)
    return fail(fn, VX_ERR_NOT_SUPPORTED,
                "a launch without a kernel handle (the entry DCRs' escape hatch) is not supported yet");
  if (k->mod->dev != dev) return fail(fn, VX_ERR_INVALID_VALUE, "a kernel of another device");
  if (info->ndim > 3) return fail(fn, VX_ERR_INVALID_VALUE, "ndim " + std::to_string(info->ndim) + " is more than 3");
  int rc = vx_dcr_write(dev, VX_DCR_KMU_KERNEL_ENTRY0, k->pc) | vx_dcr_write(dev, VX_DCR_KMU_KERNEL_ENTRY1, 0);
  if (info->ndim) {
    for (uint32_t i = 0; i < 3; ++i) {
      rc |= vx_dcr_write(dev, VX_DCR_KMU_GRID_DIM_X + i, i < info->ndim ? info->grid_dim[i] : 1);
      rc |= vx_dcr_write(dev, VX_DCR_KMU_BLOCK_DIM_X + i, i < info->ndim ? info->block_dim[i] : 1);
    }
    rc |= vx_dcr_write(dev, VX_DCR_KMU_LMEM_SIZE, info->lmem_size);
  }
  // CTAs per cluster (0 counts as 1): the launch's cluster dimensions, as CTA_CLUSTER_SIZE reads them.
  if (info->struct_size >= sizeof(vx_launch_info_t))
    for (uint32_t i = 0; i < 3; ++i)
      rc |= vx_dcr_write(dev, VX_DCR_KMU_CLUSTER_DIM_X + i, info->cluster_dim[i] ? info->cluster_dim[i] : 1);
  if (rc) return VX_ERR_INVALID_VALUE;
  vx_buffer_h args = nullptr;
  if (info->args_host && info->args_size && vx_upload_bytes(dev, info->args_host, info->args_size, &args) != 0)
    return VX_ERR_OUT_OF_DEVICE_MEMORY;
  vx_result_t r = VX_SUCCESS;
  if (vx_start(dev, k->mod->image, args) != 0)
    r = VX_ERR_INVALID_VALUE;
  else if (vx_ready_wait(dev, VX_MAX_TIMEOUT) != 0)
    r = VX_ERR_DEVICE_LOST;
  if (args) (void)vx_mem_free(args);
  return r;
}

}  // namespace

VX_API vx_result_t vx_enqueue_launch(vx_queue_h qh, const vx_launch_info_t* info, uint32_t n_wait,
                                     const vx_event_h* waits, vx_event_h* out_event) {
  const char* fn = "vx_enqueue_launch";
  if (!info) return fail(fn, VX_ERR_INVALID_VALUE, "null launch info");
  return command(fn, qh, n_wait, waits, out_event, [&] { return launch_now(fn, qh->dev, info); });
}

// A batch: its commands in order (each launch runs to its end before the next command), one event
// for the whole batch. The first command that fails ends the batch with its code.
VX_API vx_result_t vx_enqueue_commands(vx_queue_h qh, const vx_command_t* commands, uint32_t count, uint32_t n_wait,
                                       const vx_event_h* waits, vx_event_h* out_event) {
  const char* fn = "vx_enqueue_commands";
  if (count && !commands) return fail(fn, VX_ERR_INVALID_VALUE, "null command list");
  for (uint32_t i = 0; i < count; ++i)
    if (commands[i].type != VX_COMMAND_LAUNCH && commands[i].type != VX_COMMAND_DCR_WRITE)
      return fail(fn, VX_ERR_INVALID_VALUE,
                  "command " + std::to_string(i) + " has type " + std::to_string(int(commands[i].type)) +
                      " (VX_COMMAND_LAUNCH or VX_COMMAND_DCR_WRITE)");
  return command(fn, qh, n_wait, waits, out_event, [&]() -> vx_result_t {
    for (uint32_t i = 0; i < count; ++i) {
      const vx_command_t& c = commands[i];
      const vx_result_t r = c.type == VX_COMMAND_LAUNCH
                                ? launch_now(fn, qh->dev, c.data.launch)
                                : failed(vx_dcr_write(qh->dev, c.data.dcr.addr, c.data.dcr.value));
      if (r != VX_SUCCESS) return r;
    }
    return VX_SUCCESS;
  });
}

VX_API vx_result_t vx_enqueue_copy(vx_queue_h q, vx_buffer_h dst, uint64_t dst_off, vx_buffer_h src, uint64_t src_off,
                                   uint64_t size, uint32_t n_wait, const vx_event_h* waits, vx_event_h* out_event) {
  return command("vx_enqueue_copy", q, n_wait, waits, out_event,
                 [&] { return failed(vx_copy_dev_to_dev(dst, dst_off, src, src_off, size)); });
}

VX_API vx_result_t vx_enqueue_read(vx_queue_h q, void* host_dst, vx_buffer_h src, uint64_t src_off, uint64_t size,
                                   uint32_t n_wait, const vx_event_h* waits, vx_event_h* out_event) {
  return command("vx_enqueue_read", q, n_wait, waits, out_event,
                 [&] { return failed(vx_copy_from_dev(host_dst, src, src_off, size)); });
}

VX_API vx_result_t vx_enqueue_write(vx_queue_h q, vx_buffer_h dst, uint64_t dst_off, const void* host_src,
                                    uint64_t size, uint32_t n_wait, const vx_event_h* waits, vx_event_h* out_event) {
  return command("vx_enqueue_write", q, n_wait, waits, out_event,
                 [&] { return failed(vx_copy_to_dev(dst, host_src, dst_off, size)); });
}

namespace {

// A rect copy row by row: each row is region[0] bytes. to_dev: host -> buffer; else buffer -> host.
template <class Row>
vx_result_t each_row(const char* fn, const vx_rect_info_t* info, Row&& row) {
  if (!info || info->struct_size < sizeof(vx_rect_info_t))
    return fail(fn, VX_ERR_INVALID_INFO, "a missing or short vx_rect_info_t");
  const size_t w = info->region[0];
  const size_t brow = info->buffer_row_pitch ? info->buffer_row_pitch : w;
  const size_t bslice = info->buffer_slice_pitch ? info->buffer_slice_pitch : info->region[1] * brow;
  const size_t hrow = info->host_row_pitch ? info->host_row_pitch : w;
  const size_t hslice = info->host_slice_pitch ? info->host_slice_pitch : info->region[1] * hrow;
  for (size_t z = 0; z < info->region[2]; ++z)
    for (size_t y = 0; y < info->region[1]; ++y) {
      const uint64_t b =
          (info->buffer_origin[2] + z) * bslice + (info->buffer_origin[1] + y) * brow + info->buffer_origin[0];
      const uint64_t h = (info->host_origin[2] + z) * hslice + (info->host_origin[1] + y) * hrow + info->host_origin[0];
      if (vx_result_t r = row(b, h, w); r != VX_SUCCESS) return r;
    }
  return VX_SUCCESS;
}

}  // namespace

VX_API vx_result_t vx_enqueue_read_rect(vx_queue_h q, void* host_dst, vx_buffer_h src, const vx_rect_info_t* info,
                                        uint32_t n_wait, const vx_event_h* waits, vx_event_h* out_event) {
  const char* fn = "vx_enqueue_read_rect";
  return command(fn, q, n_wait, waits, out_event, [&] {
    return each_row(fn, info, [&](uint64_t b, uint64_t h, size_t w) {
      return failed(vx_copy_from_dev(static_cast<uint8_t*>(host_dst) + h, src, b, w));
    });
  });
}

VX_API vx_result_t vx_enqueue_write_rect(vx_queue_h q, vx_buffer_h dst, const void* host_src,
                                         const vx_rect_info_t* info, uint32_t n_wait, const vx_event_h* waits,
                                         vx_event_h* out_event) {
  const char* fn = "vx_enqueue_write_rect";
  return command(fn, q, n_wait, waits, out_event, [&] {
    return each_row(fn, info, [&](uint64_t b, uint64_t h, size_t w) {
      return failed(vx_copy_to_dev(dst, static_cast<const uint8_t*>(host_src) + h, b, w));
    });
  });
}

VX_API vx_result_t vx_enqueue_copy_rect(vx_queue_h q, vx_buffer_h dst, vx_buffer_h src, const vx_rect_info_t* info,
                                        uint32_t n_wait, const vx_event_h* waits, vx_event_h* out_event) {
  const char* fn = "vx_enqueue_copy_rect";
  return command(fn, q, n_wait, waits, out_event, [&] {
    // buffer_* describes the destination, host_* the source (upstream's convention).
    return each_row(fn, info,
                    [&](uint64_t b, uint64_t h, size_t w) { return failed(vx_copy_dev_to_dev(dst, b, src, h, w)); });
  });
}

VX_API vx_result_t vx_enqueue_fill_buffer(vx_queue_h q, vx_buffer_h dst, uint64_t offset, uint64_t size,
                                          const void* pattern, size_t pattern_size, uint32_t n_wait,
                                          const vx_event_h* waits, vx_event_h* out_event) {
  const char* fn = "vx_enqueue_fill_buffer";
  if (!pattern || pattern_size == 0 || size % pattern_size != 0)
    return fail(fn, VX_ERR_INVALID_VALUE, "size must be a whole number of non-empty patterns");
  return command(fn, q, n_wait, waits, out_event, [&] {
    std::vector<uint8_t> bytes(size);
    for (uint64_t i = 0; i < size; i += pattern_size) std::memcpy(bytes.data() + i, pattern, pattern_size);
    return failed(vx_copy_to_dev(dst, bytes.data(), offset, size));
  });
}

VX_API vx_result_t vx_enqueue_map(vx_queue_h q, vx_buffer_h buf, uint64_t offset, uint64_t size, uint32_t flags,
                                  uint32_t n_wait, const vx_event_h* waits, vx_event_h* out_event,
                                  void** out_host_ptr) {
  return command("vx_enqueue_map", q, n_wait, waits, out_event,
                 [&] { return vx_buffer_map(buf, offset, size, flags, out_host_ptr); });
}

VX_API vx_result_t vx_enqueue_unmap(vx_queue_h q, vx_buffer_h buf, void* host_ptr, uint32_t n_wait,
                                    const vx_event_h* waits, vx_event_h* out_event) {
  return command("vx_enqueue_unmap", q, n_wait, waits, out_event, [&] { return vx_buffer_unmap(buf, host_ptr); });
}

VX_API vx_result_t vx_enqueue_barrier(vx_queue_h q, uint32_t n_wait, const vx_event_h* waits, vx_event_h* out_event) {
  return command("vx_enqueue_barrier", q, n_wait, waits, out_event, [] { return VX_SUCCESS; });
}

VX_API vx_result_t vx_enqueue_dcr_write(vx_queue_h q, uint32_t addr, uint32_t value, uint32_t n_wait,
                                        const vx_event_h* waits, vx_event_h* out_event) {
  return command("vx_enqueue_dcr_write", q, n_wait, waits, out_event,
                 [&] { return failed(vx_dcr_write(q->dev, addr, value)); });
}

VX_API vx_result_t vx_enqueue_dcr_read(vx_queue_h q, uint32_t addr, uint32_t* host_dst, uint32_t n_wait,
                                       const vx_event_h* waits, vx_event_h* out_event) {
  return command("vx_enqueue_dcr_read", q, n_wait, waits, out_event,
                 [&] { return failed(vx_dcr_read(q->dev, addr, 0, host_dst)); });
}

// --- Events -------------------------------------------------------------------------------------------

namespace {

vx_event* event_of(const char* fn, vx_event_h ev) { return live_handle(fn, g_events, ev, "event"); }

}  // namespace

VX_API vx_result_t vx_event_create(vx_device_h dev, vx_event_h* out) {
  const char* fn = "vx_event_create";
  if (!out) return fail(fn, VX_ERR_INVALID_VALUE, "null output pointer");
  uint64_t v = 0;
  if (vx_dev_caps(dev, VX_CAPS_VERSION, &v) != 0) return VX_ERR_INVALID_HANDLE;
  auto* ev = new vx_event{dev, 1, 0, VX_SUCCESS, {}};
  std::lock_guard<std::mutex> lock(g_mu);
  g_events.insert(ev);
  *out = ev;
  return VX_SUCCESS;
}

VX_API vx_result_t vx_event_signal(vx_event_h ev, uint64_t value) {
  vx_event* e = event_of("vx_event_signal", ev);
  if (!e) return VX_ERR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(g_mu);
  e->value = std::max(e->value, value);
  return VX_SUCCESS;
}

VX_API vx_result_t vx_event_get_value(vx_event_h ev, uint64_t* out_value) {
  vx_event* e = event_of("vx_event_get_value", ev);
  if (!e) return VX_ERR_INVALID_HANDLE;
  if (!out_value) return fail("vx_event_get_value", VX_ERR_INVALID_VALUE, "null output pointer");
  *out_value = e->value;
  return VX_SUCCESS;
}

VX_API vx_result_t vx_event_wait_values(uint32_t n, const vx_event_h* evs, const uint64_t* values, uint64_t) {
  const char* fn = "vx_event_wait_values";
  if (n && (!evs || !values)) return fail(fn, VX_ERR_INVALID_VALUE, "a null array");
  for (uint32_t i = 0; i < n; ++i) {
    vx_event* e = event_of(fn, evs[i]);
    if (!e) return VX_ERR_INVALID_HANDLE;
    if (e->status != VX_SUCCESS)
      return fail(fn, VX_ERR_EVENT_FAILED, "event " + std::to_string(i) + "'s command failed");
    // Nothing runs behind the caller's back: a value not reached now is never reached by waiting.
    if (e->value < values[i])
      return fail(fn, VX_ERR_TIMEOUT,
                  "event " + std::to_string(i) + " is at " + std::to_string(e->value) + ", not " +
                      std::to_string(values[i]) + ", and nothing else can signal it while the caller waits");
  }
  return VX_SUCCESS;
}

VX_API vx_result_t vx_event_wait_value(vx_event_h ev, uint64_t value, uint64_t timeout_ns) {
  return vx_event_wait_values(1, &ev, &value, timeout_ns);
}

VX_API vx_result_t vx_event_retain(vx_event_h ev) { return retain("vx_event_retain", g_events, ev, "event"); }

VX_API vx_result_t vx_event_release(vx_event_h ev) { return release("vx_event_release", g_events, ev, "event"); }

VX_API vx_result_t vx_event_get_profiling(vx_event_h ev, vx_profile_info_t* out) {
  vx_event* e = event_of("vx_event_get_profiling", ev);
  if (!e) return VX_ERR_INVALID_HANDLE;
  if (!out) return fail("vx_event_get_profiling", VX_ERR_INVALID_VALUE, "null output pointer");
  *out = e->profile;
  return VX_SUCCESS;
}

VX_API vx_result_t vx_enqueue_signal(vx_queue_h q, vx_event_h ev, uint64_t value, uint32_t n_wait,
                                     const vx_event_h* waits, vx_event_h* out_event) {
  return command("vx_enqueue_signal", q, n_wait, waits, out_event, [&] { return vx_event_signal(ev, value); });
}

VX_API vx_result_t vx_enqueue_wait_value(vx_queue_h q, vx_event_h ev, uint64_t value, uint32_t n_wait,
                                         const vx_event_h* waits, vx_event_h* out_event) {
  const char* fn = "vx_enqueue_wait_value";
  return command(fn, q, n_wait, waits, out_event, [&]() -> vx_result_t {
    vx_event* e = event_of(fn, ev);
    if (!e) return VX_ERR_INVALID_HANDLE;
    if (e->value >= value) return VX_SUCCESS;
    return fail(fn, VX_ERR_NOT_SUPPORTED,
                "the event is at " + std::to_string(e->value) + ", not " + std::to_string(value) +
                    ", and this library runs a queue's commands when they are enqueued: a wait for a later "
                    "host signal is not supported yet");
  });
}
