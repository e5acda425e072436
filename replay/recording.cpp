#include "replay/recording.hpp"

#include <algorithm>

#include "checkpoint/store.hpp"

namespace vx::replay {

Result<RecordingInfo> inspect_recording(const std::string& dir) {
  RecordingInfo info;
  info.dir = dir;
  auto st = checkpoint::Store::open_existing(dir, checkpoint::OpenMode::ReadOnly);
  if (!st) return make_error("cannot open the recording: " + st.error().message);
  info.header = st->header();
  const checkpoint::StoreHeader& h = info.header;
  if (h.scheduler_version != kSchedulerVersion)
    return make_error("the recording " + dir + " was made with warp scheduler version " +
                      std::to_string(h.scheduler_version) + "; this build schedules with version " +
                      std::to_string(kSchedulerVersion) + ", so the same seed would give another run");
  info.config = DeviceConfig{h.config.clusters, h.config.cores_per_cluster, h.config.warps, h.config.threads,
                             h.config.local_mem_bytes};
  if (auto e = info.config.validate()) return make_error("the recording " + dir + " names an unusable device: " + *e);
  if (h.schedule > uint8_t(Schedule::Pct))
    return make_error("the recording " + dir + " was made with warp schedule strategy " + std::to_string(h.schedule) +
                      ", which this build does not have");
  info.options.seed = h.seed;
  info.options.schedule = Schedule(h.schedule);
  info.options.watchdog_instructions = h.watchdog;
  auto open = st->writer_left_open();
  if (!open) return open.error();
  info.writer_killed = *open;
  auto ops = st->ops();
  if (!ops) return make_error("the recording " + dir + ": " + ops.error().message);
  for (const auto& op : *ops) {
    if (op.kind != checkpoint::HostOpKind::Symbols) continue;
    auto bytes = st->read_page(op.data.hash);
    if (!bytes) return make_error("the recording " + dir + ": " + bytes.error().message);
    auto img = parse_kernel_image(*bytes, op.name);
    if (!img) return make_error("the recording's kernel image " + op.name + ": " + img.error().message);
    // A host program's recording has no single kernel (hash 0): its images are Symbols operations,
    // each checked by its content hash in the store.
    if (h.kernel_hash != 0 && img->hash != h.kernel_hash)
      return make_error("the recording's kernel image " + op.name + " does not match its header (hash " +
                        checkpoint::PageHash{0, img->hash}.to_string().substr(16) + ", the header says " +
                        checkpoint::PageHash{0, h.kernel_hash}.to_string().substr(16) + "): the recording is corrupt");
    if (!info.image) {
      info.image_name = op.name;
      info.image_bytes = *bytes;
      info.image = *img;
    }
    info.images.push_back(RecordingInfo::KeptImage{op.name, std::move(*bytes), std::move(*img)});
  }
  return info;
}

std::optional<size_t> image_of_launch(const RecordingInfo& info, size_t kept_before, uint32_t entry_pc) {
  const size_t kept = std::min(kept_before, info.images.size());
  if (kept == 0) return std::nullopt;
  for (size_t i = kept; i-- > 0;)
    for (const ImageSegment& seg : info.images[i].image.segments)
      if (entry_pc >= seg.vaddr && uint64_t(entry_pc) < uint64_t(seg.vaddr) + seg.mem_size) return i;
  return kept - 1;
}

}  // namespace vx::replay
