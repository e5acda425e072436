/* vortex.h: the host API of a Vortex GPGPU device, as vxreplay's libvortex implements it.
 *
 * The names, signatures, constants and meanings are those of upstream Vortex's public runtime
 * header, so a host program written for Vortex builds against this one unchanged. Every
 * function returns 0 on success and a nonzero value on failure; a failure also prints one line
 * on stderr saying why ("vortex: vx_copy_to_dev: ...").
 *
 * Run alone, the library drives the vxreplay Vortex model in the same process (VX_CONFIG sets
 * the device shape, default 1x1x4x4). Started by `vxreplay run -- ./host`, it sends every call
 * to the debugger, which performs it on its device (docs/host.md). */
#ifndef VXREPLAY_VORTEX_H
#define VXREPLAY_VORTEX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vortex2.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The handles, VX_CAPS_* (upstream's current numbering), VX_ISA_* and VX_MEM_* are vortex2.h's. */
#define VX_ISA_STD_U (1ull << 20)

/* vx_ready_wait: the longest timeout, in milliseconds (a day) */
#define VX_MAX_TIMEOUT (24 * 60 * 60 * 1000)

/* Device configuration registers of the kernel management unit (KMU): a launch's startup
 * address, kernel entry, argument, block and grid dimensions and local memory per CTA. */
#define VX_DCR_KMU_STATE_BEGIN 0x010
#define VX_DCR_KMU_STARTUP_ADDR0 0x010
#define VX_DCR_KMU_STARTUP_ADDR1 0x011
#define VX_DCR_KMU_KERNEL_ENTRY0 0x012
#define VX_DCR_KMU_KERNEL_ENTRY1 0x013
#define VX_DCR_KMU_STARTUP_ARG0 0x014
#define VX_DCR_KMU_STARTUP_ARG1 0x015
#define VX_DCR_KMU_BLOCK_DIM_X 0x016
#define VX_DCR_KMU_BLOCK_DIM_Y 0x017
#define VX_DCR_KMU_BLOCK_DIM_Z 0x018
#define VX_DCR_KMU_GRID_DIM_X 0x019
#define VX_DCR_KMU_GRID_DIM_Y 0x01A
#define VX_DCR_KMU_GRID_DIM_Z 0x01B
#define VX_DCR_KMU_LMEM_SIZE 0x01C
#define VX_DCR_KMU_BLOCK_SIZE 0x01D
#define VX_DCR_KMU_WARP_STEP_X 0x01E
#define VX_DCR_KMU_WARP_STEP_Y 0x01F
#define VX_DCR_KMU_WARP_STEP_Z 0x020
#define VX_DCR_KMU_CLUSTER_DIM_X 0x021
#define VX_DCR_KMU_CLUSTER_DIM_Y 0x022
#define VX_DCR_KMU_CLUSTER_DIM_Z 0x023
#define VX_DCR_KMU_STATE_END 0x024

/* Opens the device. */
int vx_dev_open(vx_device_h* hdevice);
/* Closes it once the work is done (its buffers go with it). */
int vx_dev_close(vx_device_h hdevice);
/* One fact of the device (VX_CAPS_*). */
int vx_dev_caps(vx_device_h hdevice, uint32_t caps_id, uint64_t* value);

/* Allocates device memory. */
int vx_mem_alloc(vx_device_h hdevice, uint64_t size, int flags, vx_buffer_h* hbuffer);
/* Maps device memory at a fixed address (it must not overlap a mapped range). */
int vx_mem_reserve(vx_device_h hdevice, uint64_t address, uint64_t size, int flags, vx_buffer_h* hbuffer);
/* Releases a buffer. */
int vx_mem_free(vx_buffer_h hbuffer);
/* Sets the access rights of a range of a buffer (VX_MEM_*). */
int vx_mem_access(vx_buffer_h hbuffer, uint64_t offset, uint64_t size, int flags);
/* The device address of a buffer. */
int vx_mem_address(vx_buffer_h hbuffer, uint64_t* address);
/* Free and used device memory, in bytes. */
int vx_mem_info(vx_device_h hdevice, uint64_t* mem_free, uint64_t* mem_used);

/* Copies host bytes into a buffer at dst_offset. */
int vx_copy_to_dev(vx_buffer_h hbuffer, const void* host_ptr, uint64_t dst_offset, uint64_t size);
/* Copies a buffer's bytes at src_offset to the host. */
int vx_copy_from_dev(void* host_ptr, vx_buffer_h hbuffer, uint64_t src_offset, uint64_t size);

/* Starts the kernel uploaded in hkernel with the argument block in harguments (may be NULL). */
int vx_start(vx_device_h hdevice, vx_buffer_h hkernel, vx_buffer_h harguments);
/* Waits until the device is idle, at most timeout milliseconds; fails on a timeout or when a
 * kernel stopped on a device exception. */
int vx_ready_wait(vx_device_h hdevice, uint64_t timeout);

/* Reads and writes device configuration registers (VX_DCR_*); tag selects among registers that
 * answer per unit (0 for the KMU's). */
int vx_dcr_read(vx_device_h hdevice, uint32_t addr, uint32_t tag, uint32_t* value);
int vx_dcr_write(vx_device_h hdevice, uint32_t addr, uint32_t value);

/* Uploads a kernel image (an ELF or a .vxbin) from memory or a file. */
int vx_upload_kernel_bytes(vx_device_h hdevice, const void* content, uint64_t size, vx_buffer_h* hbuffer);
int vx_upload_kernel_file(vx_device_h hdevice, const char* filename, vx_buffer_h* hbuffer);
/* Allocates a buffer holding bytes from memory or a file. */
int vx_upload_bytes(vx_device_h hdevice, const void* content, uint64_t size, vx_buffer_h* hbuffer);
int vx_upload_file(vx_device_h hdevice, const char* filename, vx_buffer_h* hbuffer);

/* Writes the device's performance counters to stream. */
int vx_dump_perf(vx_device_h hdevice, FILE* stream);

/* Copies size bytes from one buffer to another. */
int vx_copy_dev_to_dev(vx_buffer_h hdest_buffer, uint64_t dest_offset, vx_buffer_h hsrc_buffer, uint64_t src_offset,
                       uint64_t size);
/* One performance counter of a core (the model keeps none by upstream's classes: an error says so). */
int vx_mpm_query(vx_device_h hdevice, uint32_t mpm_class, uint32_t addr, uint32_t core_id, uint64_t* value);
/* Checks that a CTA of block_size threads (and max_localmem bytes of local memory, 0: any) fits a core. */
int vx_check_occupancy(vx_device_h hdevice, uint32_t block_size, uint32_t max_localmem);
/* The grid and block that cover global_dim work items with full warps (block: threads x warps). */
int vx_max_occupancy_grid(vx_device_h hdevice, uint32_t ndim, const uint32_t* global_dim, uint32_t* grid_dim,
                          uint32_t* block_dim);

#ifdef __cplusplus
}
#endif

#endif /* VXREPLAY_VORTEX_H */
