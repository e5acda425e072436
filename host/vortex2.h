/* vortex2.h: upstream Vortex's asynchronous host API (devices, queues, buffers, modules and
 * kernels, enqueued commands, timeline events), as vxreplay's libvortex implements it.
 *
 * Names, types, constants and signatures are upstream's (sw/runtime/include/vortex2.h, Vortex
 * 3.0), so a program written for it builds unchanged. Every function returns a vx_result_t
 * (VX_SUCCESS, else an error code); a failure also prints one line on stderr naming the call.
 *
 * A queue runs its commands in order. This library performs each command when it is enqueued
 * and returns its event already complete (value 1), which is one schedule upstream's in-order
 * queues allow; under `vxreplay run --` every command goes through the debugger (docs/host.md).
 * This header is self-contained; vortex.h includes it for the handles and constants. */
#ifndef VXREPLAY_VORTEX2_H
#define VXREPLAY_VORTEX2_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Handles. Devices and buffers are void* (the synchronous API shares them). */
typedef void* vx_device_h;
typedef void* vx_buffer_h;
typedef struct vx_queue* vx_queue_h;
typedef struct vx_event* vx_event_h;
typedef struct vx_module* vx_module_h;
typedef struct vx_kernel* vx_kernel_h;

/* Device capability ids (vx_device_query, vx_dev_caps) */
#define VX_CAPS_VERSION 0x0
#define VX_CAPS_NUM_THREADS 0x1
#define VX_CAPS_NUM_WARPS 0x2
#define VX_CAPS_NUM_CORES 0x3
#define VX_CAPS_CACHE_LINE_SIZE 0x4
#define VX_CAPS_GLOBAL_MEM_SIZE 0x5
#define VX_CAPS_LOCAL_MEM_SIZE 0x6
#define VX_CAPS_ISA_FLAGS 0x7
#define VX_CAPS_NUM_MEM_BANKS 0x8
#define VX_CAPS_MEM_BANK_SIZE 0x9
#define VX_CAPS_NUM_CLUSTERS 0xA
#define VX_CAPS_SOCKET_SIZE 0xB
#define VX_CAPS_ISSUE_WIDTH 0xC
#define VX_CAPS_CLOCK_RATE 0xD
#define VX_CAPS_PEAK_MEM_BW 0xE
#define VX_CAPS_VM_SUPPORT 0xF
#define VX_CAPS_VM_PINNED_SIZE 0x10
#define VX_CAPS_VM_PINNED_FREE 0x11

/* VX_CAPS_ISA_FLAGS bits: the standard ones at misa's positions, Vortex's from bit 32 */
#define VX_ISA_STD_A (1ull << 0)
#define VX_ISA_STD_C (1ull << 2)
#define VX_ISA_STD_D (1ull << 3)
#define VX_ISA_STD_E (1ull << 4)
#define VX_ISA_STD_F (1ull << 5)
#define VX_ISA_STD_H (1ull << 7)
#define VX_ISA_STD_I (1ull << 8)
#define VX_ISA_STD_N (1ull << 13)
#define VX_ISA_STD_Q (1ull << 16)
#define VX_ISA_STD_S (1ull << 18)
#define VX_ISA_STD_V (1ull << 21)
#define VX_ISA_ARCH(flags) (1ull << ((((flags) >> 30) & 0x3) + 4))
#define VX_ISA_EXT_ICACHE (1ull << (32 + 0))
#define VX_ISA_EXT_DCACHE (1ull << (32 + 1))
#define VX_ISA_EXT_L2CACHE (1ull << (32 + 2))
#define VX_ISA_EXT_L3CACHE (1ull << (32 + 3))
#define VX_ISA_EXT_LMEM (1ull << (32 + 4))
#define VX_ISA_EXT_ZICOND (1ull << (32 + 5))
#define VX_ISA_EXT_TEX (1ull << (32 + 6))
#define VX_ISA_EXT_RASTER (1ull << (32 + 7))
#define VX_ISA_EXT_OM (1ull << (32 + 8))
#define VX_ISA_EXT_TCU (1ull << (32 + 9))
#define VX_ISA_EXT_DXA (1ull << (32 + 10))
#define VX_ISA_EXT_RTU (1ull << (32 + 11))

/* Buffer access flags */
#define VX_MEM_READ 0x1
#define VX_MEM_WRITE 0x2
#define VX_MEM_READ_WRITE 0x3
#define VX_MEM_PIN_MEMORY 0x4
#define VX_MEM_PHYS 0x8
#define VX_MEM_HOST 0x10

typedef enum {
  VX_SUCCESS = 0,
  VX_ERR_INVALID_HANDLE = 1,
  VX_ERR_INVALID_INFO = 2,
  VX_ERR_INVALID_VALUE = 3,
  VX_ERR_OUT_OF_HOST_MEMORY = 4,
  VX_ERR_OUT_OF_DEVICE_MEMORY = 5,
  VX_ERR_DEVICE_LOST = 6,
  VX_ERR_TIMEOUT = 7,
  VX_ERR_EVENT_FAILED = 8,
  VX_ERR_NOT_SUPPORTED = 9,
  VX_ERR_INTERNAL = 10
} vx_result_t;

/* "VX_SUCCESS", "VX_ERR_TIMEOUT", ... */
const char* vx_result_string(vx_result_t r);

typedef enum { VX_QUEUE_PRIORITY_LOW = 0, VX_QUEUE_PRIORITY_NORMAL = 1, VX_QUEUE_PRIORITY_HIGH = 2 } vx_queue_priority_e;

#define VX_QUEUE_PROFILING_ENABLE (1u << 0)
/* A timeout that never expires */
#define VX_TIMEOUT_INFINITE ((uint64_t)-1)

typedef struct {
  size_t struct_size; /* sizeof(vx_queue_info_t) */
  const void* next;
  vx_queue_priority_e priority;
  uint32_t flags; /* VX_QUEUE_PROFILING_ENABLE */
} vx_queue_info_t;

typedef struct {
  size_t struct_size; /* sizeof(vx_launch_info_t) */
  const void* next;
  vx_kernel_h kernel;    /* vx_module_get_kernel; NULL: the KMU's entry DCRs as the caller set them */
  const void* args_host; /* the argument block, copied to the device for the launch (NULL: none) */
  size_t args_size;
  uint32_t ndim; /* 1..3; 0: the grid and block DCRs as the caller set them */
  uint32_t grid_dim[3];
  uint32_t block_dim[3];
  uint32_t lmem_size;
  uint32_t cluster_dim[3];
} vx_launch_info_t;

/* A strided copy (rows of region[0] bytes, region[1] rows, region[2] slices). */
typedef struct {
  size_t struct_size;
  const void* next;
  size_t buffer_origin[3];
  size_t host_origin[3];
  size_t region[3];
  size_t buffer_row_pitch;
  size_t buffer_slice_pitch;
  size_t host_row_pitch;
  size_t host_slice_pitch;
} vx_rect_info_t;

typedef struct {
  uint64_t queued_ns;
  uint64_t submit_ns;
  uint64_t start_ns;
  uint64_t end_ns;
} vx_profile_info_t;

/* Devices */
vx_result_t vx_device_count(uint32_t* out_count);
vx_result_t vx_device_open(uint32_t index, vx_device_h* out);
vx_result_t vx_device_retain(vx_device_h dev);
vx_result_t vx_device_release(vx_device_h dev);
vx_result_t vx_device_query(vx_device_h dev, uint32_t caps_id, uint64_t* out_value);
vx_result_t vx_device_memory_info(vx_device_h dev, uint64_t* free, uint64_t* used);
vx_result_t vx_device_mpm_query(vx_device_h dev, uint32_t mpm_class, uint32_t addr, uint32_t core_id,
                                uint64_t* value);
vx_result_t vx_device_dump_perf(vx_device_h dev, FILE* stream);
vx_result_t vx_device_max_occupancy_grid(vx_device_h dev, uint32_t ndim, const uint32_t* global_dim,
                                         uint32_t* grid_out, uint32_t* block_out);

/* Buffers */
vx_result_t vx_buffer_create(vx_device_h dev, uint64_t size, uint32_t flags, vx_buffer_h* out);
vx_result_t vx_buffer_reserve(vx_device_h dev, uint64_t address, uint64_t size, uint32_t flags, vx_buffer_h* out);
vx_result_t vx_buffer_retain(vx_buffer_h buf);
vx_result_t vx_buffer_release(vx_buffer_h buf);
vx_result_t vx_buffer_address(vx_buffer_h buf, uint64_t* out_addr);
vx_result_t vx_buffer_access(vx_buffer_h buf, uint64_t offset, uint64_t size, uint32_t flags);
vx_result_t vx_buffer_map(vx_buffer_h buf, uint64_t offset, uint64_t size, uint32_t flags, void** out_host_ptr);
vx_result_t vx_buffer_unmap(vx_buffer_h buf, void* host_ptr);

/* Modules (a kernel image) and their kernels (named entry points) */
vx_result_t vx_module_load_file(vx_device_h dev, const char* path, vx_module_h* out);
vx_result_t vx_module_load_bytes(vx_device_h dev, const void* bytes, size_t size, vx_module_h* out);
vx_result_t vx_module_retain(vx_module_h mod);
vx_result_t vx_module_release(vx_module_h mod);
vx_result_t vx_module_get_kernel(vx_module_h mod, const char* name, vx_kernel_h* out);
vx_result_t vx_kernel_retain(vx_kernel_h k);
vx_result_t vx_kernel_release(vx_kernel_h k);
vx_result_t vx_kernel_get_max_block_size(vx_kernel_h k, uint32_t* x, uint32_t* y, uint32_t* z);

/* Queues */
vx_result_t vx_queue_create(vx_device_h dev, const vx_queue_info_t* info, vx_queue_h* out);
vx_result_t vx_queue_retain(vx_queue_h q);
vx_result_t vx_queue_release(vx_queue_h q);
vx_result_t vx_queue_flush(vx_queue_h q);
vx_result_t vx_queue_finish(vx_queue_h q, uint64_t timeout_ns);

/* Commands: each waits for its wait list, and gives its own event (out_event may be NULL) */
vx_result_t vx_enqueue_launch(vx_queue_h q, const vx_launch_info_t* info, uint32_t n_wait_events,
                              const vx_event_h* wait_events, vx_event_h* out_event);
/* A batch of launches and DCR writes, run in order, with one event for the whole batch */
typedef enum {
  VX_COMMAND_LAUNCH = 0,
  VX_COMMAND_DCR_WRITE = 1,
} vx_command_type_e;

typedef struct {
  vx_command_type_e type;
  union {
    const vx_launch_info_t* launch;
    struct {
      uint32_t addr;
      uint32_t value;
    } dcr;
  } data;
} vx_command_t;

vx_result_t vx_enqueue_commands(vx_queue_h q, const vx_command_t* commands, uint32_t count, uint32_t n_wait_events,
                                const vx_event_h* wait_events, vx_event_h* out_event);
vx_result_t vx_enqueue_copy(vx_queue_h q, vx_buffer_h dst, uint64_t dst_off, vx_buffer_h src, uint64_t src_off,
                            uint64_t size, uint32_t n_wait_events, const vx_event_h* wait_events,
                            vx_event_h* out_event);
vx_result_t vx_enqueue_read(vx_queue_h q, void* host_dst, vx_buffer_h src, uint64_t src_off, uint64_t size,
                            uint32_t n_wait_events, const vx_event_h* wait_events, vx_event_h* out_event);
vx_result_t vx_enqueue_write(vx_queue_h q, vx_buffer_h dst, uint64_t dst_off, const void* host_src, uint64_t size,
                             uint32_t n_wait_events, const vx_event_h* wait_events, vx_event_h* out_event);
vx_result_t vx_enqueue_read_rect(vx_queue_h q, void* host_dst, vx_buffer_h src, const vx_rect_info_t* info,
                                 uint32_t n_wait_events, const vx_event_h* wait_events, vx_event_h* out_event);
vx_result_t vx_enqueue_write_rect(vx_queue_h q, vx_buffer_h dst, const void* host_src, const vx_rect_info_t* info,
                                  uint32_t n_wait_events, const vx_event_h* wait_events, vx_event_h* out_event);
vx_result_t vx_enqueue_copy_rect(vx_queue_h q, vx_buffer_h dst, vx_buffer_h src, const vx_rect_info_t* info,
                                 uint32_t n_wait_events, const vx_event_h* wait_events, vx_event_h* out_event);
vx_result_t vx_enqueue_fill_buffer(vx_queue_h q, vx_buffer_h dst, uint64_t offset, uint64_t size, const void* pattern,
                                   size_t pattern_size, uint32_t n_wait_events, const vx_event_h* wait_events,
                                   vx_event_h* out_event);
vx_result_t vx_enqueue_map(vx_queue_h q, vx_buffer_h buf, uint64_t offset, uint64_t size, uint32_t flags,
                           uint32_t n_wait_events, const vx_event_h* wait_events, vx_event_h* out_event,
                           void** out_host_ptr);
vx_result_t vx_enqueue_unmap(vx_queue_h q, vx_buffer_h buf, void* host_ptr, uint32_t n_wait_events,
                             const vx_event_h* wait_events, vx_event_h* out_event);
vx_result_t vx_enqueue_barrier(vx_queue_h q, uint32_t n_wait_events, const vx_event_h* wait_events,
                               vx_event_h* out_event);
vx_result_t vx_enqueue_dcr_write(vx_queue_h q, uint32_t addr, uint32_t value, uint32_t n_wait_events,
                                 const vx_event_h* wait_events, vx_event_h* out_event);
vx_result_t vx_enqueue_dcr_read(vx_queue_h q, uint32_t addr, uint32_t* host_dst, uint32_t n_wait_events,
                                const vx_event_h* wait_events, vx_event_h* out_event);

/* Timeline events: a counter that only grows; waits block until it reaches a value */
vx_result_t vx_event_create(vx_device_h dev, vx_event_h* out);
vx_result_t vx_event_signal(vx_event_h ev, uint64_t value);
vx_result_t vx_event_get_value(vx_event_h ev, uint64_t* out_value);
vx_result_t vx_event_wait_value(vx_event_h ev, uint64_t value, uint64_t timeout_ns);
vx_result_t vx_event_wait_values(uint32_t n, const vx_event_h* evs, const uint64_t* values, uint64_t timeout_ns);
vx_result_t vx_event_retain(vx_event_h ev);
vx_result_t vx_event_release(vx_event_h ev);
vx_result_t vx_event_get_profiling(vx_event_h ev, vx_profile_info_t* out);
vx_result_t vx_enqueue_signal(vx_queue_h q, vx_event_h ev, uint64_t value, uint32_t n_wait_events,
                              const vx_event_h* wait_events, vx_event_h* out_event);
vx_result_t vx_enqueue_wait_value(vx_queue_h q, vx_event_h ev, uint64_t value, uint32_t n_wait_events,
                                  const vx_event_h* wait_events, vx_event_h* out_event);

#ifdef __cplusplus
}
#endif

#endif /* VXREPLAY_VORTEX2_H */
