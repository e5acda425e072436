// Console output for kernels: the per-hart console rings of the Vortex memory
// map (shared/spec/vortex-v3.md, "Memory map"). Each call runs lane by lane
// (vx_serial), so it may be called from any active mask; each lane writes to
// its own ring (slot = mhartid & 63) and the host drains the rings.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void vx_putchar(int c);
// Writes s and a newline, like C puts.
void vx_puts(const char* s);
// Conversions: %d %i %u %x %X %c %s %p %f %%, flags '-' and '0', a field
// width (digits or *), a precision for %f (default 6) and %s. Length
// modifiers (l, h, z) are accepted and ignored: int and long are 32 bits.
// %f prints |v| < 2^64 in fixed notation and larger values as hex floats.
// Returns the number of characters the calling lane produced.
int vx_printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

#ifdef __cplusplus
}
#endif
