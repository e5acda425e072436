// -O0 char arrays, unsigned char and a byte-wise checksum.
char greeting[16] = "hello, vortex";
unsigned char bytes[6] = {0, 1, 127, 128, 200, 255};
char upper[16];

unsigned char mix(unsigned char a, unsigned char b) {
  unsigned char m = (unsigned char)(a ^ (b << 1));
  return m;
}

int test_main(void) {
  int i = 0;
  while (greeting[i]) {
    char ch = greeting[i];
    upper[i] = (ch >= 'a' && ch <= 'z') ? (char)(ch - 32) : ch;
    i++;
  }
  unsigned char sum = 0;
  for (int j = 0; j < 6; j++)
    sum = mix(sum, bytes[j]);
  return sum & 63;
}
