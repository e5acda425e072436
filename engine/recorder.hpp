// The session's recorder: what goes into the recording's store and what it knows it holds. The
// host's operations wait in memory until the next write (flush); checkpoints go with the memory
// pages the store does not have yet; a write that fails loses nothing: its pages are given again by
// the next checkpoint and its operations stay queued (docs/store.md). Its own state, reached by the
// session's other jobs only through these functions (docs/architecture.md, "The session by job").
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>
#include "checkpoint/store.hpp"
#include "checkpoint/timeline.hpp"
#include "device/driver.hpp"

namespace vx::engine {

// The warps of `dev` now, in brief (Driver::warp_summaries), as a timeline sample of `launch` at `at`.
checkpoint::TimelineSample warp_sample(const Driver& dev, uint32_t launch, uint64_t at);

class Recorder {
 public:
  // `store`: the recording (nullptr: none, and nothing is written). A replay writes checkpoints but
  // no host operations (they are the recording's already); a read-only one writes nothing to the
  // file: the launch starts it derives stay in the Store's memory, without marks (Store::put on a
  // read-only store; Session::Impl::save_checkpoint keeps no other checkpoint of it).
  void attach(checkpoint::Store* store, bool replay, bool read_only);
  bool writes_ops() const { return store_ && !replay_ && !read_only_; }
  bool writes_checkpoints() const { return store_ != nullptr; }
  bool in_memory_only() const { return read_only_; }

  // --- Host operations ------------------------------------------------------------------------
  // Queues an operation whose data is a blob (copy, submit, symbols): its hash.
  checkpoint::PageHash add_blob_op(checkpoint::HostOpKind kind, uint64_t addr, std::span<const uint8_t> data,
                                   std::string name = {});
  void add_op(const checkpoint::HostOpRecord& op) { ops_.push_back(op); }
  size_t queued_ops() const { return ops_.size(); }
  // A queued blob (not written yet), or nullptr.
  const checkpoint::PageData* queued_blob(const checkpoint::PageHash& h) const;
  // Writes the queued operations (kept when it fails).
  Result<void> flush();

  // --- The memory image as last checkpointed ---------------------------------------------------
  // A page as the workload holds it now: the page's data when the store does not have it yet.
  std::optional<checkpoint::PageData> note_page(uint32_t page, std::vector<uint8_t> bytes);
  void forget_page(uint32_t page) { pages_.erase(page); }
  const std::map<uint32_t, checkpoint::PageHash>& pages() const { return pages_; }
  void set_pages(std::map<uint32_t, checkpoint::PageHash> pages) { pages_ = std::move(pages); }

  // --- Checkpoints --------------------------------------------------------------------------------
  // Writes rec (its memory: the image) at key with the pages the store lacks: `new_pages` and those
  // of a failed write that the record names. `mark`: a stop the user saw, committed durably; else
  // staged (it can be derived again).
  Result<void> put(const checkpoint::TimeKey& key, checkpoint::CheckpointRecord& rec,
                   std::vector<checkpoint::PageData> new_pages, const checkpoint::StopRecord* mark);

  // Automatic checkpoints every `interval` instructions of a launch (0: none), and sooner when the
  // last checkpoint lies before the launch (its start was not written): when the work since that
  // checkpoint reaches the interval. An overdue point (a save that failed) waits for the next multiple.
  void schedule_from(uint64_t progress, uint64_t interval) {
    next_auto_ = interval ? (progress / interval + 1) * interval : UINT64_MAX;
    if (!interval || unsaved_ == 0 || unsaved_ == UINT64_MAX) return;
    const uint64_t due = interval - std::min(interval, unsaved_);
    if (due > progress) next_auto_ = std::min(next_auto_, due);
  }
  uint64_t next_auto() const { return next_auto_; }
  bool auto_due(uint64_t at) const { return at >= next_auto_; }

  // --- Launch starts (docs/store.md, "Launch starts") ------------------------------------------------
  // The work a re-execution from the last checkpoint this timeline passed (written, found stored or
  // restored) would repeat: instructions, and the host's copies at kCopyBytesPerInstruction. A
  // launch's start is written only when it reaches the interval; the starts in between are derived.
  static constexpr uint64_t kCopyBytesPerInstruction = 16;
  void checkpoint_at(uint64_t progress) {
    unsaved_ = 0;
    checkpoint_progress_ = progress;
  }
  void launch_ended(uint64_t progress) {
    add_unsaved(progress - std::min(progress, checkpoint_progress_));
    checkpoint_progress_ = 0;
  }
  void host_copied(uint64_t bytes) { add_unsaved(bytes / kCopyBytesPerInstruction); }
  uint64_t unsaved() const { return unsaved_; }
  // The work since the last checkpoint at `progress` of the current launch (UINT64_MAX: none yet).
  uint64_t since_checkpoint(uint64_t progress) const {
    const uint64_t here = progress - std::min(progress, checkpoint_progress_);
    return unsaved_ > UINT64_MAX - here ? UINT64_MAX : unsaved_ + here;
  }
  // Whether a stop the user sees at `progress` writes its checkpoint (docs/store.md, "Stops"): when
  // the work since the last checkpoint reaches `interval` / kStopsPerInterval (interval 0: always).
  // Otherwise only its mark is written, and a move to it re-executes from that checkpoint.
  static constexpr uint64_t kStopsPerInterval = 16;
  bool stop_checkpoint_due(uint64_t progress, uint64_t interval) const {
    return interval < kStopsPerInterval || since_checkpoint(progress) >= interval / kStopsPerInterval;
  }
  // Whether the launch beginning now has its start written (`interval` 0: automatic checkpoints off).
  // When it is not, schedule_from places the launch's first automatic checkpoint.
  bool start_due(uint64_t interval) const { return interval && unsaved_ >= interval; }

  // --- The timeline (checkpoint/timeline.hpp) -------------------------------------------------------
  // A sample is due at `at` of `launch`: its next point (8, 16, ... up to the interval, then every
  // interval) passed, and the launch never ran this far before.
  bool sample_due(uint32_t launch, uint64_t at) const;
  // Instructions from `at` until the next sample (UINT64_MAX: none).
  uint64_t until_sample(uint32_t launch, uint64_t at) const;
  void set_sample_interval(uint64_t interval) { sample_interval_ = interval; }
  bool samples_on() const { return sample_interval_ && store_ && !read_only_; }
  uint64_t next_sample(uint32_t launch) const;
  // Keeps a sample for the next checkpoint written (or the session's end: timeline_op).
  void add_sample(checkpoint::TimelineSample s);
  // A host operation holding the samples no checkpoint took (the session's end, or at least
  // `at_least` of them waiting), queued; false: none.
  bool queue_timeline_op(size_t at_least = 1);
  // The samples a recording lets wait before queueing them with the host's operations when it
  // writes no launch start (a kill loses the picture of at most that many).
  static constexpr size_t kSamplesPerOp = 512;

  // --- Failures -------------------------------------------------------------------------------------
  // A write failed: kept as the store's last error until a staged commit fails after it.
  void failed(const Error& e);
  const std::string& error() const;

 private:
  checkpoint::Store* store_ = nullptr;
  bool replay_ = false, read_only_ = false;
  std::vector<checkpoint::HostOpRecord> ops_;                      // host operations not written yet
  std::vector<checkpoint::PageData> blobs_;                        // their blobs the store does not have
  std::map<uint32_t, checkpoint::PageHash> pages_;                 // page -> hash, as last checkpointed
  std::set<checkpoint::PageHash> stored_;                          // pages known to be in the store (committed)
  std::map<checkpoint::PageHash, checkpoint::PageData> unstored_;  // pages a failed write could not put
  uint64_t unsaved_ = UINT64_MAX;     // work since the last checkpoint (UINT64_MAX: none yet)
  uint64_t checkpoint_progress_ = 0;  // that checkpoint's count when it is in the current launch, else 0
  void add_unsaved(uint64_t n) { unsaved_ = n > UINT64_MAX - unsaved_ ? UINT64_MAX : unsaved_ + n; }
  uint64_t next_auto_ = UINT64_MAX;  // the launch count of the next automatic checkpoint
  uint64_t sample_interval_ = 0;
  // By launch: the count of its last sample (0: none). Looked up at every piece of a run.
  std::vector<uint64_t> sampled_;
  std::vector<checkpoint::TimelineSample> samples_;  // not written yet
  std::string error_;                                // the last write failure ("" none)
  uint64_t error_lost_ = 0;  // the store's staged_lost() when error_ was set: staged checkpoints lost since are newer
};

}  // namespace vx::engine
