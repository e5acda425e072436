// Linux-side glue of the conformance suite: a bare riscv32 Linux program for qemu-riscv32
// (no libc) whose _start calls the program's test_main() and exits with its result.
int test_main(void);

void conformance_start(void) {
  register long a0 __asm__("a0") = test_main();
  register long a7 __asm__("a7") = 93;  // exit(a0)
  __asm__ volatile("ecall" : "+r"(a0) : "r"(a7) : "memory");
  for (;;) {
  }
}

// Linux starts the program with sp set (and the FPU on).
__asm__(".globl _start\n_start:\n  call conformance_start\n1: j 1b\n");
