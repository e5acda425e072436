#include "checkpoint/records.hpp"

#include <xxhash.h>

#include <cstdio>

namespace vx::checkpoint {

std::string ConfigRecord::to_string() const {
  return std::to_string(clusters) + "x" + std::to_string(cores_per_cluster) + "x" + std::to_string(warps) + "x" +
         std::to_string(threads) + ", " + std::to_string(local_mem_bytes) + " B local memory";
}

std::string TimeKey::to_string() const {
  return "(launch " + std::to_string(launch) + ", instret " + std::to_string(instret) + ")";
}

const char* host_op_name(HostOpKind k) {
  switch (k) {
    case HostOpKind::Alloc: return "alloc";
    case HostOpKind::Reserve: return "reserve";
    case HostOpKind::Free: return "free";
    case HostOpKind::Copy: return "copy";
    case HostOpKind::Submit: return "submit";
    case HostOpKind::Symbols: return "symbols";
    case HostOpKind::HostEnd: return "host-end";
    case HostOpKind::Timeline: return "timeline";
  }
  return "unknown";
}

std::string PageHash::to_string() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

PageHash hash_page(const uint8_t* bytes, size_t size) {
  XXH128_hash_t h = XXH3_128bits(bytes, size);
  return PageHash{h.high64, h.low64};
}

PageData make_page(std::vector<uint8_t> bytes) {
  PageHash h = hash_page(bytes);
  return PageData{h, std::move(bytes)};
}

}  // namespace vx::checkpoint
