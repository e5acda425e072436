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

#ifdef __cplusplus
extern "C" {
#endif

typedef void* vx_device_h;
typedef void* vx_buffer_h;

/* vx_dev_caps ids */
#define VX_CAPS_VERSION 0x0
#define VX_CAPS_NUM_THREADS 0x1
#define VX_CAPS_NUM_WARPS 0x2
#define VX_CAPS_NUM_CORES 0x3
#define VX_CAPS_CACHE_LINE_SIZE 0x4
#define VX_CAPS_GLOBAL_MEM_SIZE 0x5
#define VX_CAPS_LOCAL_MEM_SIZE 0x6
#define VX_CAPS_LOCAL_MEM_ADDR 0x7
#define VX_CAPS_ISA_FLAGS 0x8
#define VX_CAPS_NUM_BARRIERS 0x9

/* VX_CAPS_ISA_FLAGS bits */
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
#define VX_ISA_STD_U (1ull << 20)
#define VX_ISA_ARCH(flags) (1 << ((((flags) >> 30) & 0x3) + 4))
#define VX_ISA_EXT_ICACHE (1ull << 32)
#define VX_ISA_EXT_DCACHE (1ull << 33)
#define VX_ISA_EXT_L2CACHE (1ull << 34)
#define VX_ISA_EXT_L3CACHE (1ull << 35)
#define VX_ISA_EXT_LMEM (1ull << 36)

/* vx_ready_wait: the longest timeout, in milliseconds (a day) */
#define VX_MAX_TIMEOUT (24 * 60 * 60 * 1000)

/* vx_mem_alloc / vx_mem_reserve / vx_mem_access flags */
#define VX_MEM_READ 0x1
#define VX_MEM_WRITE 0x2
#define VX_MEM_READ_WRITE 0x3

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

/* Reads and writes device configuration registers (VX_DCR_*). */
int vx_dcr_read(vx_device_h hdevice, uint32_t addr, uint32_t* value);
int vx_dcr_write(vx_device_h hdevice, uint32_t addr, uint32_t value);

/* Uploads a kernel image (an ELF or a .vxbin) from memory or a file. */
int vx_upload_kernel_bytes(vx_device_h hdevice, const void* content, uint64_t size, vx_buffer_h* hbuffer);
int vx_upload_kernel_file(vx_device_h hdevice, const char* filename, vx_buffer_h* hbuffer);
/* Allocates a buffer holding bytes from memory or a file. */
int vx_upload_bytes(vx_device_h hdevice, const void* content, uint64_t size, vx_buffer_h* hbuffer);
int vx_upload_file(vx_device_h hdevice, const char* filename, vx_buffer_h* hbuffer);

/* Writes the device's performance counters to stream. */
int vx_dump_perf(vx_device_h hdevice, FILE* stream);

#ifdef __cplusplus
}
#endif

#endif /* VXREPLAY_VORTEX_H */
