// -O0 a millicode call: `jal t0` links through t0 (as -msave-restore's __riscv_save_N do) and the
// callee returns with `jr t0`; nexti runs it through as a call, stepi enters it.
int out;

__attribute__((naked, noinline)) void bump_a0(void) {
  __asm__ volatile("addi a0, a0, 1\n\tjr t0");
}

int test_main(void) {
  register int a __asm__("a0") = 41;
  __asm__ volatile("nop\n\tjal t0, bump_a0\n\tnop" : "+r"(a) : : "t0", "memory");
  out = a;
  __asm__ volatile("nop\n\tjal t0, bump_a0\n\tnop" : "+r"(a) : : "t0", "memory");
  out += a;
  return out;
}
