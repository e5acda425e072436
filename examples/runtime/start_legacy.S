/* Startup code of a legacy-style image (examples/legacy_tls.c), the way
   upstream Vortex's startup sets up threads before Vortex 3.0's KMU entry
   (docs/device.md, "Kernel images"): it does not read CTA_ENTRY but calls
   main() itself, and gives every hart a thread-local storage block past the
   image: tp = _end + 63 + mhartid * __tbss_size. Upstream leaves tp unaligned;
   here it is rounded down to 64 bytes, because the model requires natural
   alignment and the TLS variables are words. */

#define TMC(rs1) .insn r 0x0b, 0, 0, x0, rs1, x0
#define STACK_BASE 0xFFFF0000
#define STACK_SHIFT 13  /* 8 KiB per hart */

  .section .text.start, "ax", @progbits
  .globl _start
  .type _start, @function
_start:
  .option push
  .option norelax
  la gp, __global_pointer$
  .option pop
  csrr t0, mhartid
  slli t1, t0, STACK_SHIFT
  li sp, STACK_BASE
  sub sp, sp, t1
  la t1, __tbss_size
  mul t0, t0, t1
  la tp, _end
  addi tp, tp, 63
  andi tp, tp, -64
  add tp, tp, t0
  call __init_tls
  call main
  TMC(x0)
  .size _start, . - _start
