// A host program that breaks the channel's protocol on purpose (issue 33): it speaks to vxreplay
// through the descriptor in VXREPLAY_HOST_FD without libvortex, sends one abuse and then waits for
// a reply, as a library call would. vxreplay must answer or close the channel: the program never
// waits forever. It prints what came back and exits 3.
//   oversize      a header whose length is 4294967295
//   garbage       64 MiB of 0x44 bytes (a header claiming 1145324612 bytes, then more garbage)
//   partial       a header claiming 100 bytes, 10 of them, then nothing (the channel stays open)
//   before-hello  a well-formed vx_mem_info request before the handshake
//   shrink-rings  tries to shrink the shared rings' region (VXREPLAY_HOST_RINGS) under vxreplay's
//                 map, prints whether the system let it, and exits 4 without a word to vxreplay
//   ring-counter  a handshake that takes the shared rings, then the requests' ring's write counter
//                 moved past the ring (2^40) and a wake-up on the socket
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void put32(uint8_t* p, uint32_t v) { memcpy(p, &v, 4); }

int main(int argc, char** argv) {
  const char* fd_text = getenv("VXREPLAY_HOST_FD");
  if (argc != 2 || !fd_text) {
    fprintf(stderr, "usage: vxreplay run -- %s oversize|garbage|partial|before-hello|shrink-rings|ring-counter\n",
            argv[0]);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);  // a closed channel is a write error here, not a signal
  const int fd = atoi(fd_text);
  const char* mode = argv[1];
  uint8_t msg[64] = {0};
  if (strcmp(mode, "oversize") == 0) {
    put32(msg, 2);
    put32(msg + 4, 0xffffffffu);
    if (write(fd, msg, 8) != 8) perror("write");
  } else if (strcmp(mode, "garbage") == 0) {
    static uint8_t junk[1 << 16];
    memset(junk, 0x44, sizeof junk);
    for (int i = 0; i < 1024; i++)
      if (write(fd, junk, sizeof junk) < 0) break;  // vxreplay closed the channel
  } else if (strcmp(mode, "partial") == 0) {
    put32(msg, 1);
    put32(msg + 4, 100);
    if (write(fd, msg, 18) != 18) perror("write");
  } else if (strcmp(mode, "before-hello") == 0) {
    put32(msg, 7);  // Op::Info
    put32(msg + 4, 0);
    if (write(fd, msg, 8) != 8) perror("write");
  } else if (strcmp(mode, "shrink-rings") == 0 || strcmp(mode, "ring-counter") == 0) {
    const char* rings_text = getenv("VXREPLAY_HOST_RINGS");
    if (!rings_text) {
      printf("%s: no shared rings\n", mode);
      return 4;
    }
    const int rfd = atoi(rings_text);
    if (strcmp(mode, "shrink-rings") == 0) {
      const int r = ftruncate(rfd, 0);
      printf("shrink-rings: %s\n", r == 0 ? "the region was shrunk" : strerror(errno));
      return 4;
    }
    struct stat st;
    void* base =
        fstat(rfd, &st) == 0 ? mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0) : MAP_FAILED;
    if (base == MAP_FAILED) {
      perror("mmap");
      return 4;
    }
    put32(msg, 1);  // Op::Hello: version 2, the shared rings
    put32(msg + 4, 8);
    put32(msg + 8, 2);
    put32(msg + 12, 1);
    if (write(fd, msg, 16) != 16) perror("write");
    uint8_t hello[512];
    if (read(fd, hello, sizeof hello) < 8) printf("ring-counter: no answer to the handshake\n");
    const uint64_t far = 1ull << 40;
    memcpy((uint8_t*)base + 64, &far, 8);  // the requests' ring's write counter
    msg[0] = 1;
    if (write(fd, msg, 1) != 1) perror("write");  // a wake-up
  } else {
    fprintf(stderr, "unknown abuse %s\n", mode);
    return 2;
  }
  // Wait for the reply as a call does.
  uint8_t reply[256];
  size_t got = 0;
  for (;;) {
    ssize_t r = read(fd, reply + got, sizeof reply - 1 - got);
    if (r <= 0) break;
    got += (size_t)r;
    if (got >= sizeof reply - 1) break;
  }
  int32_t status = 0;
  uint32_t len = 0;
  if (got >= 8) {
    memcpy(&status, reply, 4);
    memcpy(&len, reply + 4, 4);
    reply[got] = 0;
    printf("%s: reply status %d: %s\n", mode, status, (const char*)reply + 8);
  } else {
    printf("%s: the channel closed with no reply\n", mode);
  }
  return 3;
}
