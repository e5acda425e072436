// Conversion between a saved launch (vx::DeviceContext, device/context.hpp) and the checkpoint
// store's record (vx::checkpoint::CheckpointRecord, checkpoint/records.hpp).
//
// The store never includes device headers: its records copy device/state.hpp field for field, and
// this is the one place that converts. Enums are mapped value by value, never cast. A core's local
// memory is not in the record itself: it is a blob stored as a page and named by a BlobRef.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/result.hpp"
#include "checkpoint/records.hpp"
#include "device/config.hpp"
#include "device/context.hpp"

namespace vx::engine {

checkpoint::ConfigRecord to_config_record(const DeviceConfig& cfg);

// Fills the state fields of rec from ctx: the scheduler; the warps (every warp slot of every core,
// active or not, sorted by (core, slot)); the cores (a non-empty local memory becomes a blob page
// named by BlobRef{size, hash}, its PageData appended to *blobs unless a page with the same hash is
// there already; an empty one is BlobRef{} with nothing appended); the launch; the global barriers
// and their expectations; the instruction counters and the drain countdown. It does not touch key,
// stop, threads, console, memory or state_hash.
//
// The record is whatever ctx holds: Store::put refuses one ctx could not have come from (e.g. an
// enum value out of range, or global_expected not one per global barrier).
void context_to_record(const DeviceContext& ctx, checkpoint::CheckpointRecord* rec,
                       std::vector<checkpoint::PageData>* blobs);

// Fetches a blob by hash: a lambda over Store::read_page.
using BlobReader = std::function<Result<std::vector<uint8_t>>(const checkpoint::PageHash&)>;

// The inverse of context_to_record: record_to_context(context_to_record(ctx)) == ctx for every ctx
// shaped like cfg (as Machine shapes its state).
// Fails, naming the problem, when rec does not fit cfg: core count; every warp slot present in
// (core, slot) order; x and f of 32 x NT values, reservation empty or NT, dscratch empty or 4 x NT,
// at most NT - 1 IPDOM entries; a wait kind, halt cause or launch kind out of range; per core
// NW x 8 barriers and NW slot counts, one arrival count per global barrier; scheduler lists one per
// core with current warps in -1..NW-1; one expectation per global barrier (a record written before
// they were stored has none and cannot be resumed); local memory saved with cfg's size (none when it
// is 0), and a blob that reads back with that size and hash. read_blob's errors are passed on,
// naming the core.
Result<DeviceContext> record_to_context(const checkpoint::CheckpointRecord& rec, const DeviceConfig& cfg,
                                        const BlobReader& read_blob);

}  // namespace vx::engine
