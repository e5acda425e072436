// libFuzzer target: the GDB remote protocol's packet layer (cli/gdb_packet.hpp): a client's byte
// stream split into packets (checksums, escapes, run lengths, the interrupt byte), each payload
// parsed into a request, and a payload taken alone as well.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>
#include <vector>

#include "cli/gdb_packet.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vx::cli::gdb;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // Split in two reads at a point the input chooses, so that packets straddle reads.
  const size_t cut = size ? data[0] % (size + 1) : 0;
  PacketReader reader;
  std::vector<PacketEvent> events;
  reader.feed(bytes.substr(0, cut), &events);
  reader.feed(bytes.substr(cut), &events);
  for (const PacketEvent& e : events)
    if (e.kind == PacketEvent::Packet) {
      Request r = parse_request(e.payload);
      (void)r.index();
      (void)frame(e.payload, true);
    }
  (void)parse_request(bytes);
  std::string error;
  (void)decode_payload(bytes, &error);
  (void)from_hex(bytes);
  return 0;
}
