/* Startup code of every example image (Vortex 3.0 convention,
   shared/spec/vortex-v3.md "Launch"). It is the kernel's code, not the
   hardware's: the first dispatch of a CTA to a warp slot starts here, at the
   image base, and runs the prologue; a re-used slot restarts 20 bytes before
   its post-TMC PC, i.e. at vx_dispatch, skipping the prologue. */

/* Vortex instructions (CUSTOM0 = 0x0B, R-type). */
#define TMC(rs1)             .insn r 0x0b, 0, 0, x0, rs1, x0
#define WSYNC                .insn r 0x0b, 7, 0, x0, x0, x0
#define SHFL_IDX(rd, rs1, rs2) .insn r 0x0b, 7, 1, rd, rs1, rs2

#define CSR_ACTIVE_THREADS 0xCC4
#define CSR_CTA_ENTRY 0xCE1
#define STACK_BASE 0xFFFF0000
#define STACK_SHIFT 13  /* 8 KiB per hart */

  .section .text.start, "ax", @progbits
  .globl _start
  .type _start, @function
_start:
  /* The prologue sets per-lane registers, but a slot's first CTA may fill
     only part of the warp (the last warp of a CTA), and a later CTA on the
     same slot restarts at vx_dispatch with more lanes. So set up all NT lanes:
     save the mask, enable every lane, and restore the mask afterwards. The
     lanes enabled here never ran, so their copy of the saved mask is
     broadcast from lane 0, which every dispatch activates. */
  csrr t1, CSR_ACTIVE_THREADS
  li t0, -1
  TMC(t0)
  li t2, 0xFC0                 /* SHFL control: mask 0, clamp 63, source lane 0 */
  SHFL_IDX(t1, t1, t2)

  .option push
  .option norelax
  la gp, __global_pointer$
  .option pop
  /* sp = STACK_BASE - mhartid * 8 KiB: every lane has its own stack. */
  csrr t0, mhartid
  slli t0, t0, STACK_SHIFT
  li sp, STACK_BASE
  sub sp, sp, t0
  /* No thread-local storage in these images (no .tdata/.tbss): tp just marks
     where TLS blocks would start. */
  la tp, _end
  TMC(t1)

  /* Dispatch window: exactly these five 4-byte instructions, contiguous.
     The model restarts a re-used slot at the first of them. */
  .globl vx_dispatch
vx_dispatch:
  csrr t0, CSR_CTA_ENTRY       /* kernel entry of the launch */
  csrr a0, mscratch            /* argument block, per warp */
  jalr ra, 0(t0)
  WSYNC
  TMC(x0)                      /* retire: the slot is free for the next CTA */
  .size _start, . - _start

  .text

/* void vx_serial(void (*fn)(void* arg, int lane), void* arg)
   Calls fn(arg, lane) for each active lane, lowest first, with only that lane
   active. Written in assembly because the loop state must live in
   callee-saved registers: the lanes switched off during a call keep their
   own copies untouched, the running lane gets its copies back from the
   callee, so when the mask is restored every lane holds the same loop state
   and the loop branches stay uniform. */
  .globl vx_serial
  .type vx_serial, @function
vx_serial:
  addi sp, sp, -32
  sw ra, 28(sp)
  sw s0, 24(sp)
  sw s1, 20(sp)
  sw s2, 16(sp)
  sw s3, 12(sp)
  sw s4, 8(sp)
  mv s0, a0                    /* fn */
  mv s1, a1                    /* arg: each lane's own */
  csrr s2, CSR_ACTIVE_THREADS  /* mask to restore */
  mv s3, s2                    /* lanes still to run, shifted so bit 0 is lane s4 */
  li s4, 0                     /* lane */
1:
  beqz s3, 3f
  andi t0, s3, 1
  beqz t0, 2f
  li t0, 1
  sll t0, t0, s4
  TMC(t0)
  mv a0, s1
  mv a1, s4
  jalr ra, 0(s0)
  TMC(s2)
2:
  srli s3, s3, 1
  addi s4, s4, 1
  j 1b
3:
  lw ra, 28(sp)
  lw s0, 24(sp)
  lw s1, 20(sp)
  lw s2, 16(sp)
  lw s3, 12(sp)
  lw s4, 8(sp)
  addi sp, sp, 32
  ret
  .size vx_serial, . - vx_serial

/* RUN_INSTANCES kernels return here: retire the warp. */
  .globl vx_instance_return
  .type vx_instance_return, @function
vx_instance_return:
  TMC(x0)
  .size vx_instance_return, . - vx_instance_return
