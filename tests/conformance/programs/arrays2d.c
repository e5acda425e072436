// -O0 a two-dimensional global array filled in nested loops; watch on one element.
int grid[3][4];
int row_sum[3];

int test_main(void) {
  for (int r = 0; r < 3; r++) {
    for (int c = 0; c < 4; c++) {
      grid[r][c] = r * 10 + c;
    }
  }
  for (int r = 0; r < 3; r++) {
    int s = 0;
    for (int c = 0; c < 4; c++)
      s += grid[r][c];
    row_sum[r] = s;
  }
  return row_sum[2] & 63;
}
