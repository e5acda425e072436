// The host-program benchmark (scripts/bench-host.sh): `calls N` times N vx_mem_info round trips
// and prints microseconds per call; `pingpong N` times N round trips of 16 bytes on a bare socket
// pair between two processes (the machine's floor for any channel); `launches N` makes N small launches of the vecadd
// kernel (one CTA of 16 elements each) and checks the last result; `launches-log N` does the same and prints a line as
// each launch completes (the kill test of a many-launch recording, tests/e2e_host.py).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <vortex.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s calls|pingpong|launches|launches-log N KERNEL\n", argv[0]);
    return 2;
  }
  const long n = strtol(argv[2], NULL, 10);
  if (strcmp(argv[1], "pingpong") == 0) {
    int sv[2];
    char msg[16] = {0};
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
      close(sv[0]);
      while (read(sv[1], msg, sizeof msg) == (ssize_t)sizeof msg)
        if (write(sv[1], msg, sizeof msg) != (ssize_t)sizeof msg) break;
      _exit(0);
    }
    close(sv[1]);
    const double t0 = now_us();
    for (long i = 0; i < n; i++)
      if (write(sv[0], msg, sizeof msg) != (ssize_t)sizeof msg || read(sv[0], msg, sizeof msg) != (ssize_t)sizeof msg)
        return 1;
    printf("%.3f us per call\n", (now_us() - t0) / (double)n);
    close(sv[0]);
    waitpid(pid, NULL, 0);
    return 0;
  }
  vx_device_h dev;
  if (vx_dev_open(&dev) != 0) return 1;
  if (strcmp(argv[1], "calls") == 0) {
    uint64_t free_bytes = 0, used = 0;
    const double t0 = now_us();
    for (long i = 0; i < n; i++)
      if (vx_mem_info(dev, &free_bytes, &used) != 0 || used != 0) return 1;
    printf("%.3f us per call\n", (now_us() - t0) / (double)n);
    vx_dev_close(dev);
    return 0;
  }
  enum { N = 16 };
  float a[N], b[N], c[N];
  for (int i = 0; i < N; i++) {
    a[i] = (float)i;
    b[i] = 1.0f;
  }
  vx_buffer_h kernel, da, db, dc, dargs;
  if (vx_upload_kernel_file(dev, argv[3], &kernel) != 0) return 1;
  if (vx_upload_bytes(dev, a, sizeof a, &da) || vx_upload_bytes(dev, b, sizeof b, &db) ||
      vx_mem_alloc(dev, sizeof c, VX_MEM_WRITE, &dc))
    return 1;
  uint64_t aa, ba, ca;
  vx_mem_address(da, &aa);
  vx_mem_address(db, &ba);
  vx_mem_address(dc, &ca);
  uint32_t args[4] = {N, (uint32_t)aa, (uint32_t)ba, (uint32_t)ca};
  if (vx_upload_bytes(dev, args, sizeof args, &dargs) != 0) return 1;
  vx_dcr_write(dev, 0x019, 1);  // grid 1
  vx_dcr_write(dev, 0x016, N);  // block N
  const int log = strcmp(argv[1], "launches-log") == 0;
  const double t0 = now_us();
  for (long i = 0; i < n; i++) {
    if (vx_start(dev, kernel, dargs) != 0 || vx_ready_wait(dev, VX_MAX_TIMEOUT) != 0) return 1;
    if (log) {
      printf("launch %ld done\n", i + 1);
      fflush(stdout);
    }
  }
  const double dt = now_us() - t0;
  if (vx_copy_from_dev(c, dc, 0, sizeof c) != 0) return 1;
  for (int i = 0; i < N; i++)
    if (c[i] != a[i] + b[i]) return 1;
  printf("%.1f us per launch\n", dt / (double)n);
  vx_dev_close(dev);
  return 0;
}
