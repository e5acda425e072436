// -O2 byte processing of a global char array with unsigned char arithmetic.
volatile char message[12] = "Vortex GPU!";
unsigned char digest[4];

__attribute__((noinline)) unsigned char fold(unsigned char h, char c) {
  return (unsigned char)((h << 3) ^ (h >> 5) ^ (unsigned char)c);
}

int test_main(void) {
  unsigned char h = 0x5a;
  for (int i = 0; message[i]; i++) {
    h = fold(h, message[i]);
    digest[i & 3] = h;
  }
  return h & 63;
}
