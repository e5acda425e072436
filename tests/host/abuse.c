// A host program that breaks the channel's protocol on purpose (issue 33): it speaks to vxreplay
// through the descriptor in VXREPLAY_HOST_FD without libvortex, sends one abuse and then waits for
// a reply, as a library call would. vxreplay must answer or close the channel: the program never
// waits forever. It prints what came back and exits 3.
//   oversize      a header whose length is 4294967295
//   garbage       64 MiB of 0x44 bytes (a header claiming 1145324612 bytes, then more garbage)
//   partial       a header claiming 100 bytes, 10 of them, then nothing (the channel stays open)
//   before-hello  a well-formed vx_mem_info request before the handshake
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put32(uint8_t* p, uint32_t v) { memcpy(p, &v, 4); }

int main(int argc, char** argv) {
  const char* fd_text = getenv("VXREPLAY_HOST_FD");
  if (argc != 2 || !fd_text) {
    fprintf(stderr, "usage: vxreplay run -- %s oversize|garbage|partial|before-hello\n", argv[0]);
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
