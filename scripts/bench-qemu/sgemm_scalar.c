// The scalar workload of scripts/bench-qemu.sh: one thread computes C = A x B
// for N x N single-precision matrices and prints a checksum of C.
//
// The same source is built twice: for the model with the examples' runtime
// (a one-thread launch) and, with -DBENCH_LINUX, as a bare riscv32 Linux
// program for qemu-riscv32 (no libc: its own _start, write and exit system
// calls). sgemm_scalar is the part both count: it calls nothing, so the
// instructions whose pc lies inside it are the same on both.
#include <stdint.h>

#ifndef BENCH_N
#define BENCH_N 128
#endif
#define N BENCH_N

static float A[N * N], B[N * N], C[N * N];

// Small integers: every product and sum stays exact, so both runs agree bit for bit.
__attribute__((noinline)) uint32_t sgemm_scalar(void) {
  for (uint32_t i = 0; i < N * N; i++) {
    A[i] = (float)((int32_t)((i * 3u) % 7u) - 3);
    B[i] = (float)((int32_t)((i * 5u + 1u) % 5u) - 2);
  }
  for (uint32_t r = 0; r < N; r++)
    for (uint32_t c = 0; c < N; c++) {
      float acc = 0.0f;
      for (uint32_t k = 0; k < N; k++) acc += A[r * N + k] * B[k * N + c];
      C[r * N + c] = acc;
    }
  uint32_t sum = 0;
  for (uint32_t i = 0; i < N * N; i++) sum = sum * 31u + (uint32_t)(int32_t)C[i];
  return sum;
}

#ifdef BENCH_LINUX

static long sys3(long n, long a, long b, long c) {
  register long a0 __asm__("a0") = a;
  register long a1 __asm__("a1") = b;
  register long a2 __asm__("a2") = c;
  register long a7 __asm__("a7") = n;
  __asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
  return a0;
}

void bench_main(void) {
  uint32_t v = sgemm_scalar();
  char buf[32];
  int n = 0;
  char tmp[12];
  int t = 0;
  do tmp[t++] = (char)('0' + v % 10u), v /= 10u;
  while (v);
  const char* prefix = "checksum ";
  while (*prefix) buf[n++] = *prefix++;
  while (t) buf[n++] = tmp[--t];
  buf[n++] = '\n';
  sys3(64, 1, (long)buf, n);  // write(1, buf, n)
  sys3(93, 0, 0, 0);          // exit(0)
}

// Linux starts the program with sp set; the FPU is on for user programs.
__asm__(".globl _start\n_start:\n  call bench_main\n1: j 1b\n");

#else

#include "vx_runtime.h"

void bench(void* arg) {
  (void)arg;
  vx_printf("checksum %u\n", sgemm_scalar());
}

VX_LAUNCH(bench, 0, 1, 1, 1, 1, 1, 1, 0);

#endif
