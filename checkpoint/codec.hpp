// Byte encodings of the store (internal to checkpoint/ and its tests): keys, the
// value envelope, records as Cap'n Proto, pages, and record validation.
// docs/store.md describes every layout here.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "checkpoint/records.hpp"

namespace vx::checkpoint::codec {

constexpr size_t kKeyBytes = 12;   // TimeKey: launch u32, instret u64, big-endian
constexpr size_t kOpKeyBytes = 8;  // a host operation's index: u64 big-endian
constexpr size_t kHashBytes = 16;  // PageHash: XXH128 canonical form (big-endian hi, lo)
constexpr size_t kEnvelopeBytes = 24;
// Largest decoded record accepted from a file: bounds what a corrupt size field could allocate.
constexpr uint32_t kMaxRecordBytes = 1u << 30;

// The first four bytes after the checksum say what a value is.
enum class Magic : uint32_t {
  Header = 0x31485856,      // "VXH1"
  Checkpoint = 0x31435856,  // "VXC1"
  Page = 0x31505856,        // "VXP1"
  Mark = 0x314d5856,        // "VXM1"
  HostOp = 0x314f5856,      // "VXO1"
  History = 0x31495856,     // "VXI1"
};
enum class Encoding : uint8_t { Raw = 0, Zstd = 1 };

std::array<uint8_t, kKeyBytes> encode_key(const TimeKey& key);
std::optional<TimeKey> decode_key(const uint8_t* bytes, size_t size);
std::array<uint8_t, kHashBytes> encode_hash(const PageHash& hash);
std::optional<PageHash> decode_hash(const uint8_t* bytes, size_t size);

// zstd contexts, reused across calls. One per Store; not shared between threads.
class Codec {
 public:
  // Pages at zstd_level; checkpoint records at record_level. A record is written at every stop the
  // user sees and rarely read, a page once per content: the record's level is the faster one.
  explicit Codec(int zstd_level = 3, int record_level = -1);
  ~Codec();
  Codec(Codec&&) noexcept;
  Codec& operator=(Codec&&) noexcept;

  // Envelope around payload: zstd-compressed when that is smaller (and allowed), raw otherwise.
  std::vector<uint8_t> seal(Magic magic, const uint8_t* payload, size_t size, bool compress);
  std::vector<uint8_t> seal(Magic magic, const uint8_t* payload, size_t size, bool compress, int level);
  // Checks checksum, magic, encoding and size, then decodes the payload into out (resized to the
  // raw size). Errors say what was wrong.
  Result<void> unseal(Magic magic, const uint8_t* value, size_t size, uint32_t max_raw, std::vector<uint8_t>* out);
  // The raw size an envelope claims, without checking the payload (for cheap existence checks).
  static std::optional<uint32_t> raw_size(const uint8_t* value, size_t size);
  // The envelope's length and checksum only (no decoding): what a whole-store check needs.
  static Result<void> check_sum(const uint8_t* value, size_t size);

  std::vector<uint8_t> encode_header(const StoreHeader& h);  // never compressed: any version can read it
  Result<StoreHeader> decode_header(const uint8_t* value, size_t size);
  std::vector<uint8_t> encode_checkpoint(const CheckpointRecord& rec);
  Result<CheckpointRecord> decode_checkpoint(const uint8_t* value, size_t size);
  std::vector<uint8_t> encode_mark(const StopRecord& mark);
  Result<StopRecord> decode_mark(const uint8_t* value, size_t size);
  std::vector<uint8_t> encode_op(const HostOpRecord& op);
  Result<HostOpRecord> decode_op(const uint8_t* value, size_t size);
  std::vector<uint8_t> encode_history(const HistoryRecord& h);  // compressed at the pages' level
  Result<HistoryRecord> decode_history(const uint8_t* value, size_t size);
  // The same with the writes in chunks: `head`'s own writes are ignored (encoding) or left empty
  // (decoding, every write checked before the sink sees its chunk).
  std::vector<uint8_t> encode_history(const HistoryRecord& head, size_t count, const HistoryWriteSource& source);
  Result<HistoryRecord> decode_history(const uint8_t* value, size_t size, const HistoryWriteSink& sink);
  // At the pages' level; `fast`: at the records' (data written once per recording and rarely read,
  // such as a host program's timeline samples).
  std::vector<uint8_t> encode_page(const uint8_t* bytes, size_t size, bool fast = false);
  // Decodes and checks that the bytes hash to expect.
  Result<std::vector<uint8_t>> decode_page(const uint8_t* value, size_t size, const PageHash& expect);

 private:
  struct Contexts;
  std::unique_ptr<Contexts> ctx_;
  int level_;
  int record_level_;
};

// Empty when the device shape is usable, otherwise what is wrong with it.
std::optional<std::string> check_config(const ConfigRecord& config);

// Structural checks of a record against the device shape: everything the engine would index
// with when restoring. Empty when valid, otherwise what is wrong.
std::optional<std::string> validate(const CheckpointRecord& rec, const ConfigRecord& config);

}  // namespace vx::checkpoint::codec
