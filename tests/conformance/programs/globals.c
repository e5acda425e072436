// -O0 globals of many types, read and written by test_main.
int g_int = -7;
unsigned g_uns = 4000000000u;
short g_short = -300;
long long g_ll = 123456789012LL;
float g_float = 0.25f;
double g_double = 2.5;
const char *g_str = "text";
int g_arr[3] = {10, 20, 30};

int test_main(void) {
  g_int = g_int * 3;
  g_uns += 1000;
  g_short = (short)(g_short - 1);
  g_ll = g_ll / 2;
  g_float = g_float * 8.0f;
  g_arr[1] = g_int + g_arr[2];
  return (g_arr[1] + g_str[0]) & 63;
}
