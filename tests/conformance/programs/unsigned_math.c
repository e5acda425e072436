// -O0 unsigned wrap-around, shifts and hexadecimal output.
unsigned int acc32 = 0xfffffff0u;
unsigned short acc16 = 65530;
unsigned char acc8 = 250;

unsigned rotl(unsigned v, int s) {
  return (v << s) | (v >> (32 - s));
}

int test_main(void) {
  for (int i = 0; i < 3; i++) {
    acc32 += 7;
    acc16 += 3;
    acc8 += 5;
  }
  unsigned r = rotl(acc32, 4);
  return (int)(r & 63);
}
