// The GDB Remote Serial Protocol's packet layer (docs/gdb.md): framing ($payload#cc), checksums,
// acknowledgements and no-ack mode, escapes and run-length decoding, the interrupt byte, and the
// parse of a payload into a typed request. Nothing here knows the engine: gdb_server.cpp is the
// handler table on engine::Session. Everything a client sends is untrusted (tests/fuzz/fuzz_gdb_packet.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace vx::cli::gdb {

// What the byte stream from the client holds, in order.
struct PacketEvent {
  enum Kind { Packet, Interrupt, Ack, Nack, BadPacket };
  Kind kind = Packet;
  std::string payload;  // Packet: decoded (escapes and run lengths undone); BadPacket: what was wrong
};

// Splits the client's bytes into events. Bytes between packets other than '+', '-' and 0x03 are
// ignored, as gdbserver does.
class PacketReader {
 public:
  static constexpr size_t kMaxPacket = 1u << 20;  // a longer packet is dropped (BadPacket)
  void feed(std::string_view bytes, std::vector<PacketEvent>* out);

 private:
  enum class State { Idle, Body, Check1, Check2 };
  State state_ = State::Idle;
  std::string raw_;
  uint8_t sum_ = 0;
  int check_ = 0;
  bool overflow_ = false;
};

// The payload of "$...#cc": run lengths ("X*n": n - 29 more copies of X) and escapes ("}c": c ^ 0x20)
// undone. nullopt with *error set for a run length with nothing to repeat, a bad count, or a
// trailing escape.
std::optional<std::string> decode_payload(std::string_view raw, std::string* error);
// "$" + payload (escaped when binary) + "#" + checksum.
std::string frame(std::string_view payload, bool escape = false);
// Runs of equal characters run-length encoded as gdbserver sends them ("X*n": the character, then
// n - 29 more copies of it, 3 to 97 of them, n never '#' or '$'). For text payloads only: a run in
// escaped binary could split an escape. Runs of '$', '#', '}' and '*' are left as they are.
std::string encode_runs(std::string_view text);
// A reply as the server sends it: frame() of a binary payload, or of a text payload with its runs
// encoded (hex register and memory replies are mostly runs of zeros, and gdb reads a piped reply
// one character at a time).
std::string frame_reply(std::string_view payload, bool binary);
// Text for a text reply ("E." + message): '$', '#', '}' and '*' are framing, escape and run-length
// characters to a client, so each becomes '?'.
std::string reply_text(std::string_view message);
// Escapes '$', '#', '}' and '*' (binary data in a reply).
std::string escape_binary(std::string_view data);
uint8_t checksum(std::string_view bytes);

std::string to_hex(std::string_view bytes);
std::string to_hex(const std::vector<uint8_t>& bytes);
std::optional<std::string> from_hex(std::string_view hex);
std::string hex_u32_le(uint32_t v);  // the 8 hex digits of a register, in target (little-endian) order

// --- Requests --------------------------------------------------------------------------------------

// A thread id: -1 all, 0 any, else a thread.
struct ThreadRef {
  int64_t id = 0;
  bool operator==(const ThreadRef&) const = default;
};

struct QSupported {
  std::vector<std::string> features;
};
struct StartNoAck {};
struct HaltReason {};
struct ReadRegisters {};
struct WriteRegisters {
  std::string bytes;
};
struct ReadRegister {
  uint32_t reg = 0;
};
struct WriteRegister {
  uint32_t reg = 0;
  std::string bytes;
};
struct ReadMemory {
  uint32_t addr = 0;
  uint32_t len = 0;
};
struct WriteMemory {
  uint32_t addr = 0;
  std::string bytes;
};
struct ThreadInfoFirst {};
struct ThreadInfoNext {};
struct CurrentThread {};
struct SetThread {
  char op = 'g';
  ThreadRef thread;
};
struct ThreadAlive {
  ThreadRef thread;
};
struct ThreadExtraInfo {
  ThreadRef thread;
};
struct VContQuery {};
struct VContAction {
  char action = 'c';  // c, s (C and S with their signal ignored), t, r
  std::optional<ThreadRef> thread;
  bool operator==(const VContAction&) const = default;
};
struct VCont {
  std::vector<VContAction> actions;
};
struct Continue {};
struct Step {};
struct ReverseStep {};
struct ReverseContinue {};
struct Breakpoint {
  bool insert = true;
  int type = 0;  // 0 software, 1 hardware, 2 write, 3 read, 4 access watchpoint
  uint32_t addr = 0;
  uint32_t kind = 0;  // breakpoint: instruction length; watchpoint: bytes watched
};
struct Monitor {
  std::string command;
};
// qXfer:OBJECT:read:ANNEX:OFFSET,LENGTH for the objects we serve: "features" (target.xml), "exec-file".
struct XferRead {
  std::string object, annex;
  uint32_t offset = 0;
  uint32_t length = 0;
};
struct Attached {};
struct Kill {};
struct VKill {};
struct Detach {};
struct Unknown {
  std::string payload;
};
// A packet we know whose arguments are wrong: an error reply, and the session goes on.
struct Malformed {
  std::string what;
};

using Request =
    std::variant<QSupported, StartNoAck, HaltReason, ReadRegisters, WriteRegisters, ReadRegister, WriteRegister,
                 ReadMemory, WriteMemory, ThreadInfoFirst, ThreadInfoNext, CurrentThread, SetThread, ThreadAlive,
                 ThreadExtraInfo, VContQuery, VCont, Continue, Step, ReverseStep, ReverseContinue, Breakpoint, Monitor,
                 XferRead, Attached, Kill, VKill, Detach, Unknown, Malformed>;

Request parse_request(std::string_view payload);

}  // namespace vx::cli::gdb
