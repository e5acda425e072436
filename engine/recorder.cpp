#include "engine/recorder.hpp"

#include <algorithm>

namespace vx::engine {

void Recorder::attach(checkpoint::Store* store, bool replay, bool read_only) {
  store_ = store;
  replay_ = replay;
  read_only_ = read_only;
}

// --- Host operations ----------------------------------------------------------------------------
checkpoint::PageHash Recorder::add_blob_op(checkpoint::HostOpKind kind, uint64_t addr, std::span<const uint8_t> data,
                                           std::string name) {
  checkpoint::PageData pd = checkpoint::make_page(std::vector<uint8_t>(data.begin(), data.end()));
  checkpoint::HostOpRecord op;
  op.kind = kind;
  op.addr = addr;
  op.size = data.size();
  op.data = checkpoint::BlobRef{uint32_t(data.size()), pd.hash};
  op.name = std::move(name);
  ops_.push_back(std::move(op));
  const checkpoint::PageHash hash = pd.hash;
  if (!stored_.count(pd.hash)) blobs_.push_back(std::move(pd));
  return hash;
}

const checkpoint::PageData* Recorder::queued_blob(const checkpoint::PageHash& h) const {
  auto it = std::find_if(blobs_.begin(), blobs_.end(), [&](const checkpoint::PageData& p) { return p.hash == h; });
  return it == blobs_.end() ? nullptr : &*it;
}

Result<void> Recorder::flush() {
  if (!store_ || ops_.empty()) return {};
  if (auto r = store_->append_ops(ops_, blobs_, /*journal=*/true); !r)
    return with_context("could not record the host's operations: ", r.error());
  for (const auto& b : blobs_) stored_.insert(b.hash);
  ops_.clear();
  blobs_.clear();
  return {};
}

// --- The memory image -----------------------------------------------------------------------------
std::optional<checkpoint::PageData> Recorder::note_page(uint32_t page, std::vector<uint8_t> bytes) {
  checkpoint::PageData pd = checkpoint::make_page(std::move(bytes));
  pages_[page] = pd.hash;
  if (stored_.count(pd.hash)) return std::nullopt;
  return pd;
}

// --- Checkpoints ------------------------------------------------------------------------------------
Result<void> Recorder::put(const checkpoint::TimeKey& key, checkpoint::CheckpointRecord& rec,
                           std::vector<checkpoint::PageData> new_pages, const checkpoint::StopRecord* mark) {
  for (const auto& [page, hash] : pages_) rec.memory.push_back(checkpoint::PageRef{page, hash});
  // Pages handed to put must be named by the record: drop duplicates of one hash.
  std::sort(new_pages.begin(), new_pages.end(), [](const auto& a, const auto& b) { return a.hash < b.hash; });
  new_pages.erase(
      std::unique(new_pages.begin(), new_pages.end(), [](const auto& a, const auto& b) { return a.hash == b.hash; }),
      new_pages.end());
  std::set<checkpoint::PageHash> named;
  for (const auto& r : rec.memory) named.insert(r.hash);
  for (const auto& c : rec.cores)
    if (c.local_mem.size) named.insert(c.local_mem.hash);
  std::erase_if(new_pages, [&](const checkpoint::PageData& p) { return !named.count(p.hash); });
  // Pages of a checkpoint that could not be written are given again while the record names them.
  for (const auto& h : named)
    if (!stored_.count(h))
      if (auto u = unstored_.find(h);
          u != unstored_.end() &&
          std::none_of(new_pages.begin(), new_pages.end(), [&](const checkpoint::PageData& p) { return p.hash == h; }))
        new_pages.push_back(u->second);
  if (!samples_.empty()) rec.timeline = checkpoint::encode_timeline(samples_);
  if (read_only_) mark = nullptr;  // kept in memory: no stop of a read-only session is recorded
  if (auto r = store_->put(key, rec, new_pages, mark, mark != nullptr); !r) {
    for (auto& p : new_pages) unstored_.emplace(p.hash, std::move(p));
    return with_context("could not save the checkpoint " + key.to_string() + ": ", r.error());
  }
  for (const auto& p : new_pages) {
    stored_.insert(p.hash);
    unstored_.erase(p.hash);
  }
  samples_.clear();
  return {};
}

// --- The timeline -----------------------------------------------------------------------------------
checkpoint::TimelineSample warp_sample(const Driver& dev, uint32_t launch, uint64_t at) {
  checkpoint::TimelineSample s;
  s.launch = launch;
  s.at = at;
  const std::vector<WarpSummary> warps = dev.warp_summaries();
  s.warps.reserve(warps.size());
  for (const WarpSummary& w : warps)
    s.warps.push_back(checkpoint::WarpSample{w.core, w.slot, w.tmask, uint8_t(w.wait),
                                             uint8_t(std::min<uint32_t>(w.depth, 255)), w.instret, w.cta});
  return s;
}

namespace {
// Samples kept in memory: a recording queues them as a timeline operation then (written with the
// next host operations); a replay, which writes no operations, takes no more until its next checkpoint.
constexpr size_t kMaxPendingSamples = 4096;
}  // namespace

uint64_t Recorder::next_sample(uint32_t launch) const {
  return checkpoint::next_sample_point(launch < sampled_.size() ? sampled_[launch] : 0, sample_interval_);
}

bool Recorder::sample_due(uint32_t launch, uint64_t at) const {
  if (!samples_on() || samples_.size() >= kMaxPendingSamples) return false;
  return at >= next_sample(launch);
}

uint64_t Recorder::until_sample(uint32_t launch, uint64_t at) const {
  // No sample is taken while the pending ones are at the limit: no run stops for one (it would stop
  // at every instruction, the next point being past).
  if (!samples_on() || samples_.size() >= kMaxPendingSamples) return UINT64_MAX;
  const uint64_t next = next_sample(launch);
  return next > at ? next - at : 1;
}

void Recorder::add_sample(checkpoint::TimelineSample s) {
  if (s.launch >= sampled_.size()) sampled_.resize(size_t(s.launch) + 1);
  uint64_t& last = sampled_[s.launch];
  // A launch's end (no warp) is kept even at the point of its last sample: it says the launch ended.
  if (last != 0 && (s.at < last || (s.at == last && !s.warps.empty()))) return;
  last = s.at;
  samples_.push_back(std::move(s));
  if (samples_.size() >= kMaxPendingSamples) queue_timeline_op();
}

bool Recorder::queue_timeline_op(size_t at_least) {
  if (samples_.empty() || samples_.size() < at_least || !writes_ops()) return false;
  (void)add_blob_op(checkpoint::HostOpKind::Timeline, 0, checkpoint::encode_timeline(samples_));
  samples_.clear();
  return true;
}

// --- Failures -------------------------------------------------------------------------------------
void Recorder::failed(const Error& e) {
  error_ = e.message;
  error_lost_ = store_ ? store_->staged_lost() : 0;
}

const std::string& Recorder::error() const {
  if (store_ && store_->staged_lost() > error_lost_) return store_->staged_error().message;
  return error_;
}

}  // namespace vx::engine
