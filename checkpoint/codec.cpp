#include "checkpoint/codec.hpp"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>
#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <exception>

#include "checkpoint/schema.capnp.h"

namespace vx::checkpoint::codec {

namespace {

namespace s = vx::checkpoint::schema;

void put_be(uint8_t* p, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i, v >>= 8) p[i] = uint8_t(v);
}
uint64_t get_be(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}
void put_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i, v >>= 8) p[i] = uint8_t(v);
}
uint64_t get_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Envelope: [0,8) XXH3-64 of bytes [8,end); [8,12) magic; [12] encoding; [13,16) zero; [16,20) raw
// size; [20,24) zero; [24,end) payload. Little-endian.
std::vector<uint8_t> envelope(Magic magic, Encoding enc, uint32_t raw_size, const uint8_t* payload, size_t n) {
  std::vector<uint8_t> v(kEnvelopeBytes + n, 0);
  put_le(v.data() + 8, uint32_t(magic), 4);
  v[12] = uint8_t(enc);
  put_le(v.data() + 16, raw_size, 4);
  if (n) std::memcpy(v.data() + kEnvelopeBytes, payload, n);
  put_le(v.data(), XXH3_64bits(v.data() + 8, v.size() - 8), 8);
  return v;
}

const char* magic_name(Magic m) {
  switch (m) {
    case Magic::Header: return "store header";
    case Magic::Checkpoint: return "checkpoint record";
    case Magic::Page: return "page";
    case Magic::Mark: return "mark";
    case Magic::HostOp: return "host operation";
    case Magic::History: return "stored history";
  }
  return "value";
}

// Lane registers as Data: u32 little-endian.
void set_words(capnp::Data::Builder out, const std::vector<uint32_t>& in) {
  for (size_t i = 0; i < in.size(); ++i) put_le(out.begin() + 4 * i, in[i], 4);
}
void init_words(const std::vector<uint32_t>& in, auto init) {
  if (!in.empty()) set_words(init(unsigned(in.size() * 4)), in);
}
// Fails when the size is not a whole number of u32s.
bool get_words(capnp::Data::Reader in, std::vector<uint32_t>* out) {
  if (in.size() % 4) return false;
  out->resize(in.size() / 4);
  for (size_t i = 0; i < out->size(); ++i) (*out)[i] = uint32_t(get_le(in.begin() + 4 * i, 4));
  return true;
}

void set_hash(s::PageHash::Builder b, const PageHash& h) {
  b.setHi(h.hi);
  b.setLo(h.lo);
}
PageHash get_hash(s::PageHash::Reader r) { return PageHash{r.getHi(), r.getLo()}; }

template <class L, size_t N>
void set_array(L list, const std::array<uint32_t, N>& a) {
  for (size_t i = 0; i < N; ++i) list.set(unsigned(i), a[i]);
}

// Decoding errors are collected here rather than returned from every helper.
struct Decoder {
  std::string error;
  void fail(std::string msg) {
    if (error.empty()) error = std::move(msg);
  }
  template <size_t N>
  void array(capnp::List<uint32_t>::Reader r, std::array<uint32_t, N>* out, const char* what) {
    if (r.size() != N)
      return fail(std::string(what) + " has " + std::to_string(r.size()) + " entries, not " + std::to_string(N));
    for (size_t i = 0; i < N; ++i) (*out)[i] = r[unsigned(i)];
  }
  template <class T, class R>
  void list(R r, std::vector<T>* out) {
    out->resize(r.size());
    for (unsigned i = 0; i < r.size(); ++i) (*out)[i] = r[i];
  }
  void words(capnp::Data::Reader r, std::vector<uint32_t>* out, const std::string& what) {
    if (!get_words(r, out)) fail(what + " is " + std::to_string(r.size()) + " bytes, not a multiple of 4");
  }
};

void encode_config(s::DeviceConfig::Builder b, const ConfigRecord& c) {
  b.setClusters(c.clusters);
  b.setCoresPerCluster(c.cores_per_cluster);
  b.setWarps(c.warps);
  b.setThreads(c.threads);
  b.setLocalMemBytes(c.local_mem_bytes);
}

void encode_warp(s::Warp::Builder b, const WarpRecord& w) {
  b.setCore(w.core);
  b.setSlot(w.slot);
  b.setActive(w.active);
  b.setPc(w.pc);
  b.setTmask(w.tmask);
  b.setWait(static_cast<s::WarpWait>(w.wait));
  b.setWaitBarrier(w.wait_barrier);
  b.setWaitPhase(w.wait_phase);
  auto ip = b.initIpdom(unsigned(w.ipdom.size()));
  for (size_t i = 0; i < w.ipdom.size(); ++i) {
    ip[unsigned(i)].setOrigMask(w.ipdom[i].orig_mask);
    ip[unsigned(i)].setElsePc(w.ipdom[i].else_pc);
    ip[unsigned(i)].setFallthrough(w.ipdom[i].fallthrough);
  }
  b.setFcsr(w.fcsr);
  b.setMscratch(w.mscratch);
  b.setMstatus(w.mstatus);
  b.setMtvec(w.mtvec);
  b.setMepc(w.mepc);
  b.setMcause(w.mcause);
  b.setMtval(w.mtval);
  b.setInstret(w.instret);
  b.setCtaSlot(w.cta_slot);
  b.setCtaRank(w.cta_rank);
  b.setCtaSize(w.cta_size);
  b.setCtaLinear(w.cta_linear);
  set_array(b.initBlockId(3), w.block_id);
  b.setInstanceBase(w.instance_base);
  b.setSlotUsed(w.slot_used);
  b.setRestartPc(w.restart_pc);
  init_words(w.x, [&](unsigned n) { return b.initX(n); });
  init_words(w.f, [&](unsigned n) { return b.initF(n); });
  init_words(w.reservation, [&](unsigned n) { return b.initReservation(n); });
  b.setHalted(w.halted);
  b.setHaltCause(w.halt_cause);
  b.setResetHalt(w.reset_halt);
  init_words(w.dscratch, [&](unsigned n) { return b.initDscratch(n); });
}

void decode_warp(s::Warp::Reader r, WarpRecord* w, Decoder& d, size_t index) {
  std::string at = "warp " + std::to_string(index);
  w->core = r.getCore();
  w->slot = r.getSlot();
  w->active = r.getActive();
  w->pc = r.getPc();
  w->tmask = r.getTmask();
  auto wait = uint16_t(r.getWait());
  if (wait >= kWaitKindCount) d.fail(at + ": unknown wait kind " + std::to_string(wait));
  w->wait = WaitKind(wait);
  w->wait_barrier = r.getWaitBarrier();
  w->wait_phase = r.getWaitPhase();
  auto ip = r.getIpdom();
  w->ipdom.resize(ip.size());
  for (unsigned i = 0; i < ip.size(); ++i)
    w->ipdom[i] = IpdomRecord{ip[i].getOrigMask(), ip[i].getElsePc(), ip[i].getFallthrough()};
  w->fcsr = r.getFcsr();
  w->mscratch = r.getMscratch();
  w->mstatus = r.getMstatus();
  w->mtvec = r.getMtvec();
  w->mepc = r.getMepc();
  w->mcause = r.getMcause();
  w->mtval = r.getMtval();
  w->instret = r.getInstret();
  w->cta_slot = r.getCtaSlot();
  w->cta_rank = r.getCtaRank();
  w->cta_size = r.getCtaSize();
  w->cta_linear = r.getCtaLinear();
  d.array(r.getBlockId(), &w->block_id, (at + " blockId").c_str());
  w->instance_base = r.getInstanceBase();
  w->slot_used = r.getSlotUsed();
  w->restart_pc = r.getRestartPc();
  d.words(r.getX(), &w->x, at + " x");
  d.words(r.getF(), &w->f, at + " f");
  d.words(r.getReservation(), &w->reservation, at + " reservation");
  w->halted = r.getHalted();
  w->halt_cause = r.getHaltCause();
  w->reset_halt = r.getResetHalt();
  d.words(r.getDscratch(), &w->dscratch, at + " dscratch");
}

void encode_ranges(capnp::List<s::UnitRange>::Builder b, const std::vector<UnitRange>& in) {
  for (size_t i = 0; i < in.size(); ++i) {
    b[unsigned(i)].setFirst(in[i].first);
    b[unsigned(i)].setCount(in[i].count);
  }
}
void decode_ranges(capnp::List<s::UnitRange>::Reader r, std::vector<UnitRange>* out) {
  out->resize(r.size());
  for (unsigned i = 0; i < r.size(); ++i) (*out)[i] = UnitRange{r[i].getFirst(), r[i].getCount()};
}

void encode_launch(s::Launch::Builder b, const LaunchRecord& l) {
  b.setKind(static_cast<s::LaunchKind>(l.kind));
  b.setStartPc(l.start_pc);
  b.setEntryPc(l.entry_pc);
  b.setArgPtr(l.arg_ptr);
  set_array(b.initGrid(3), l.grid);
  set_array(b.initBlock(3), l.block);
  set_array(b.initCluster(3), l.cluster);
  b.setLmemBytes(l.lmem_bytes);
  b.setLmemStride(l.lmem_stride);
  b.setLmemSlots(l.lmem_slots);
  b.setWarpsPerCta(l.warps_per_cta);
  b.setMaxHarts(l.max_harts);
  b.setNumArgs(l.num_args);
  set_array(b.initArgs(7), l.args);
  b.setStackTop(l.stack_top);
  b.setReturnAddr(l.return_addr);
  b.setSliceId(l.slice_id);
  b.setPackedArgs(l.packed_args);
  b.setTsdSrc(l.tsd_src);
  b.setTsdSize(l.tsd_size);
  b.setKtbStride(l.ktb_stride);
  b.setTotalUnits(l.total_units);
  b.setNextUnit(l.next_unit);
  b.setKmuCoreCursor(l.kmu_core_cursor);
}

void decode_launch(s::Launch::Reader r, LaunchRecord* l, Decoder& d) {
  auto kind = uint16_t(r.getKind());
  if (kind >= kLaunchKindCount) d.fail("unknown launch kind " + std::to_string(kind));
  l->kind = LaunchKind(kind);
  l->start_pc = r.getStartPc();
  l->entry_pc = r.getEntryPc();
  l->arg_ptr = r.getArgPtr();
  d.array(r.getGrid(), &l->grid, "launch grid");
  d.array(r.getBlock(), &l->block, "launch block");
  d.array(r.getCluster(), &l->cluster, "launch cluster");
  l->lmem_bytes = r.getLmemBytes();
  l->lmem_stride = r.getLmemStride();
  l->lmem_slots = r.getLmemSlots();
  l->warps_per_cta = r.getWarpsPerCta();
  l->max_harts = r.getMaxHarts();
  l->num_args = r.getNumArgs();
  d.array(r.getArgs(), &l->args, "launch args");
  l->stack_top = r.getStackTop();
  l->return_addr = r.getReturnAddr();
  l->slice_id = r.getSliceId();
  l->packed_args = r.getPackedArgs();
  l->tsd_src = r.getTsdSrc();
  l->tsd_size = r.getTsdSize();
  l->ktb_stride = r.getKtbStride();
  l->total_units = r.getTotalUnits();
  l->next_unit = r.getNextUnit();
  l->kmu_core_cursor = r.getKmuCoreCursor();
}

std::vector<uint8_t> to_bytes(capnp::MessageBuilder& msg) {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(msg);
  auto bytes = words.asBytes();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

// Reading limits for untrusted files: every object is read once, so a well-formed message
// traverses at most its own size; anything more is a pointer loop or amplification.
capnp::ReaderOptions reader_options(size_t words) {
  capnp::ReaderOptions o;
  o.traversalLimitInWords = words * 2 + 1024;
  o.nestingLimit = 16;
  return o;
}

// Runs decode over the aligned message, turning Cap'n Proto's exceptions into an Error.
template <class Root, class F>
Result<void> read_message(const kj::Array<capnp::word>& words, F&& decode) {
  std::string failure;
  try {
    capnp::FlatArrayMessageReader reader(words.asPtr(), reader_options(words.size()));
    if (reader.getEnd() != words.end()) return make_error("the message is followed by stray bytes");
    return decode(reader.getRoot<Root>());
  } catch (const kj::Exception& e) {
    failure = "malformed Cap'n Proto message: " + std::string(e.getDescription().cStr());
  } catch (const std::exception& e) {
    failure = std::string("cannot decode: ") + e.what();
  }
  return make_error(failure);
}

}  // namespace

std::array<uint8_t, kKeyBytes> encode_key(const TimeKey& k) {
  std::array<uint8_t, kKeyBytes> b{};
  put_be(b.data(), k.launch, 4);
  put_be(b.data() + 4, k.instret, 8);
  return b;
}

std::optional<TimeKey> decode_key(const uint8_t* p, size_t size) {
  if (size != kKeyBytes) return std::nullopt;
  return TimeKey{uint32_t(get_be(p, 4)), get_be(p + 4, 8)};
}

std::array<uint8_t, kHashBytes> encode_hash(const PageHash& h) {
  std::array<uint8_t, kHashBytes> b{};
  put_be(b.data(), h.hi, 8);
  put_be(b.data() + 8, h.lo, 8);
  return b;
}

std::optional<PageHash> decode_hash(const uint8_t* p, size_t size) {
  if (size != kHashBytes) return std::nullopt;
  return PageHash{get_be(p, 8), get_be(p + 8, 8)};
}

struct Codec::Contexts {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ~Contexts() {
    ZSTD_freeCCtx(c);
    ZSTD_freeDCtx(d);
  }
};

Codec::Codec(int zstd_level, int record_level)
    : ctx_(std::make_unique<Contexts>()), level_(zstd_level), record_level_(record_level) {}
Codec::~Codec() = default;
Codec::Codec(Codec&&) noexcept = default;
Codec& Codec::operator=(Codec&&) noexcept = default;

std::vector<uint8_t> Codec::seal(Magic magic, const uint8_t* payload, size_t size, bool compress) {
  return seal(magic, payload, size, compress, level_);
}

std::vector<uint8_t> Codec::seal(Magic magic, const uint8_t* payload, size_t size, bool compress, int level) {
  if (compress && size > 0) {
    // Not zero-filled: a large value's bound is megabytes that zstd mostly leaves untouched.
    const size_t bound = ZSTD_compressBound(size);
    std::unique_ptr<uint8_t[]> z(new uint8_t[bound]);
    size_t n = ZSTD_compressCCtx(ctx_->c, z.get(), bound, payload, size, level);
    // Incompressible data is kept raw: a stored value is never larger than raw + envelope.
    if (!ZSTD_isError(n) && n < size) return envelope(magic, Encoding::Zstd, uint32_t(size), z.get(), n);
  }
  return envelope(magic, Encoding::Raw, uint32_t(size), payload, size);
}

std::optional<uint32_t> Codec::raw_size(const uint8_t* value, size_t size) {
  if (size < kEnvelopeBytes) return std::nullopt;
  return uint32_t(get_le(value + 16, 4));
}

Result<void> Codec::check_sum(const uint8_t* v, size_t size) {
  if (size < kEnvelopeBytes)
    return make_error("truncated: " + std::to_string(size) + " bytes, shorter than the " +
                      std::to_string(kEnvelopeBytes) + "-byte envelope");
  const uint64_t stored = get_le(v, 8), computed = XXH3_64bits(v + 8, size - 8);
  if (stored != computed)
    return make_error("checksum mismatch (stored " + hex64(stored) + ", computed " + hex64(computed) +
                      "): the value was corrupted or truncated");
  return {};
}

namespace {

// Checks the envelope and decodes its payload into alloc(raw_size).
template <class Alloc>
Result<void> unseal_into(ZSTD_DCtx* dctx, Magic magic, const uint8_t* v, size_t size, uint32_t max_raw, Alloc&& alloc) {
  if (size < kEnvelopeBytes)
    return make_error("truncated: " + std::to_string(size) + " bytes, shorter than the " +
                      std::to_string(kEnvelopeBytes) + "-byte envelope");
  uint64_t stored = get_le(v, 8);
  uint64_t computed = XXH3_64bits(v + 8, size - 8);
  if (stored != computed)
    return make_error("checksum mismatch (stored " + hex64(stored) + ", computed " + hex64(computed) +
                      "): the value was corrupted or truncated");
  uint32_t m = uint32_t(get_le(v + 8, 4));
  if (m != uint32_t(magic))
    return make_error("not a " + std::string(magic_name(magic)) + " (magic 0x" + hex64(m).substr(8) + ")");
  uint8_t enc = v[12];
  uint32_t raw = uint32_t(get_le(v + 16, 4));
  if (raw > max_raw)
    return make_error("claims " + std::to_string(raw) + " bytes, more than the limit of " + std::to_string(max_raw));
  const uint8_t* payload = v + kEnvelopeBytes;
  size_t n = size - kEnvelopeBytes;
  if (enc == uint8_t(Encoding::Raw)) {
    if (n != raw)
      return make_error("raw payload is " + std::to_string(n) + " bytes, the envelope says " + std::to_string(raw));
    uint8_t* out = alloc(raw);
    if (n) std::memcpy(out, payload, n);
    return {};
  }
  if (enc == uint8_t(Encoding::Zstd)) {
    uint8_t* out = alloc(raw);
    size_t got = ZSTD_decompressDCtx(dctx, out, raw, payload, n);
    if (ZSTD_isError(got)) return make_error(std::string("zstd cannot decompress it: ") + ZSTD_getErrorName(got));
    if (got != raw)
      return make_error("zstd payload decompresses to " + std::to_string(got) + " bytes, the envelope says " +
                        std::to_string(raw));
    return {};
  }
  return make_error("unknown encoding " + std::to_string(enc) + " (written by a newer vxreplay?)");
}

// Unseals a Cap'n Proto message into word-aligned memory (LMDB values are only 2-byte aligned).
Result<kj::Array<capnp::word>> unseal_message(ZSTD_DCtx* dctx, Magic magic, const uint8_t* v, size_t size) {
  kj::Array<capnp::word> words;
  bool bad_size = false;
  auto r = unseal_into(dctx, magic, v, size, kMaxRecordBytes, [&](uint32_t raw) {
    bad_size = raw % sizeof(capnp::word) != 0 || raw == 0;
    words = kj::heapArray<capnp::word>((raw + sizeof(capnp::word) - 1) / sizeof(capnp::word));
    return reinterpret_cast<uint8_t*>(words.begin());
  });
  if (!r) return r.error();
  if (bad_size) return make_error("message size is not a positive whole number of 8-byte words");
  return words;
}

}  // namespace

Result<void> Codec::unseal(Magic magic, const uint8_t* value, size_t size, uint32_t max_raw,
                           std::vector<uint8_t>* out) {
  return unseal_into(ctx_->d, magic, value, size, max_raw, [&](uint32_t raw) {
    out->resize(raw);
    return out->data();
  });
}

std::vector<uint8_t> Codec::encode_header(const StoreHeader& h) {
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<s::StoreHeader>();
  b.setFormatVersion(h.format_version);
  encode_config(b.initConfig(), h.config);
  b.setKernelHash(h.kernel_hash);
  b.setWorkload(kj::StringPtr(h.workload.c_str(), h.workload.size()));
  b.setSeed(h.seed);
  b.setSchedulerVersion(h.scheduler_version);
  b.setWatchdog(h.watchdog);
  b.setSchedule(h.schedule);
  auto bytes = to_bytes(msg);
  return seal(Magic::Header, bytes.data(), bytes.size(), false);
}

Result<StoreHeader> Codec::decode_header(const uint8_t* value, size_t size) {
  auto words = unseal_message(ctx_->d, Magic::Header, value, size);
  if (!words) return words.error();
  StoreHeader h;
  auto r = read_message<s::StoreHeader>(*words, [&](s::StoreHeader::Reader root) -> Result<void> {
    h.format_version = root.getFormatVersion();
    // A newer format's header may mean anything past its version: the caller refuses it.
    if (h.format_version > kFormatVersion || h.format_version < kOldestFormatVersion) return {};
    auto c = root.getConfig();
    h.config =
        ConfigRecord{c.getClusters(), c.getCoresPerCluster(), c.getWarps(), c.getThreads(), c.getLocalMemBytes()};
    h.kernel_hash = root.getKernelHash();
    auto w = root.getWorkload();
    h.workload.assign(w.begin(), w.size());
    h.seed = root.getSeed();
    h.scheduler_version = root.getSchedulerVersion();
    h.watchdog = root.getWatchdog();
    h.schedule = root.getSchedule();
    return {};
  });
  if (!r) return r.error();
  return h;
}

std::vector<uint8_t> Codec::encode_checkpoint(const CheckpointRecord& rec) {
  size_t estimate = 1024;
  for (const auto& w : rec.warps) estimate += (w.x.size() + w.f.size()) / 2 + 64;
  estimate += rec.memory.size() * 4 + rec.console.size() / 8 + rec.timeline.size() / 8;
  capnp::MallocMessageBuilder msg(unsigned(std::min<size_t>(estimate, 1u << 28)));
  auto b = msg.initRoot<s::Checkpoint>();

  auto k = b.initKey();
  k.setLaunch(rec.key.launch);
  k.setInstret(rec.key.instret);

  auto st = b.initStop();
  st.setKind(static_cast<s::StopKind>(rec.stop.kind));
  st.setText(kj::StringPtr(rec.stop.text.c_str(), rec.stop.text.size()));
  auto ex = st.initException();
  ex.setCause(rec.stop.exception.cause);
  ex.setPc(rec.stop.exception.pc);
  ex.setCore(rec.stop.exception.core);
  ex.setWarp(rec.stop.exception.warp);
  ex.setLane(rec.stop.exception.lane);
  ex.setAddr(rec.stop.exception.addr);

  auto sc = b.initScheduler();
  sc.setRng(rec.scheduler.rng);
  sc.setCoreCursor(rec.scheduler.core_cursor);
  auto cw = sc.initCurrentWarp(unsigned(rec.scheduler.current_warp.size()));
  for (size_t i = 0; i < rec.scheduler.current_warp.size(); ++i) cw.set(unsigned(i), rec.scheduler.current_warp[i]);
  auto ql = sc.initQuantumLeft(unsigned(rec.scheduler.quantum_left.size()));
  for (size_t i = 0; i < rec.scheduler.quantum_left.size(); ++i) ql.set(unsigned(i), rec.scheduler.quantum_left[i]);

  auto ws = b.initWarps(unsigned(rec.warps.size()));
  for (size_t i = 0; i < rec.warps.size(); ++i) encode_warp(ws[unsigned(i)], rec.warps[i]);

  auto cs = b.initCores(unsigned(rec.cores.size()));
  for (size_t i = 0; i < rec.cores.size(); ++i) {
    const CoreRecord& c = rec.cores[i];
    auto cb = cs[unsigned(i)];
    auto lm = cb.initLocalMem();
    lm.setSize(c.local_mem.size);
    set_hash(lm.initHash(), c.local_mem.hash);
    auto bars = cb.initBarriers(unsigned(c.barriers.size()));
    for (size_t j = 0; j < c.barriers.size(); ++j) {
      bars[unsigned(j)].setCount(c.barriers[j].count);
      bars[unsigned(j)].setPhase(c.barriers[j].phase);
    }
    auto sw = cb.initSlotWarps(unsigned(c.slot_warps.size()));
    for (size_t j = 0; j < c.slot_warps.size(); ++j) sw.set(unsigned(j), c.slot_warps[j]);
    cb.setLmemNextSlot(c.lmem_next_slot);
    cb.setInstret(c.instret);
    auto ga = cb.initGlobalArrived(unsigned(c.global_arrived.size()));
    for (size_t j = 0; j < c.global_arrived.size(); ++j) ga.set(unsigned(j), c.global_arrived[j]);
  }

  auto th = b.initThreads();
  encode_ranges(th.initComplete(unsigned(rec.threads.complete.size())), rec.threads.complete);
  encode_ranges(th.initInProgress(unsigned(rec.threads.in_progress.size())), rec.threads.in_progress);
  encode_ranges(th.initNotLaunched(unsigned(rec.threads.not_launched.size())), rec.threads.not_launched);

  if (!rec.console.empty()) b.setConsole(kj::arrayPtr(rec.console.data(), rec.console.size()));

  auto mem = b.initMemory(unsigned(rec.memory.size()));
  for (size_t i = 0; i < rec.memory.size(); ++i) {
    mem[unsigned(i)].setNumber(rec.memory[i].number);
    mem[unsigned(i)].setHashHi(rec.memory[i].hash.hi);
    mem[unsigned(i)].setHashLo(rec.memory[i].hash.lo);
  }
  b.setStateHash(rec.state_hash);
  encode_launch(b.initLaunch(), rec.launch);
  auto gb = b.initGlobalBarriers(unsigned(rec.global_barriers.size()));
  for (size_t i = 0; i < rec.global_barriers.size(); ++i) {
    gb[unsigned(i)].setCoresArrived(rec.global_barriers[i].cores_arrived);
    gb[unsigned(i)].setPhase(rec.global_barriers[i].phase);
  }
  auto ge = b.initGlobalExpected(unsigned(rec.global_expected.size()));
  for (size_t i = 0; i < rec.global_expected.size(); ++i) ge.set(unsigned(i), rec.global_expected[i]);
  b.setKernelInstructions(rec.kernel_instructions);
  b.setKernelLaneInstructions(rec.kernel_lane_instructions);
  b.setDrainCountdown(rec.drain_countdown);
  b.setLive(rec.live);
  b.setStepped(rec.stepped);
  if (!rec.timeline.empty()) b.setTimeline(kj::arrayPtr(rec.timeline.data(), rec.timeline.size()));

  kj::Array<capnp::word> words = capnp::messageToFlatArray(msg);
  auto bytes = words.asBytes();
  return seal(Magic::Checkpoint, bytes.begin(), bytes.size(), true, record_level_);
}

Result<CheckpointRecord> Codec::decode_checkpoint(const uint8_t* value, size_t size) {
  auto words = unseal_message(ctx_->d, Magic::Checkpoint, value, size);
  if (!words) return words.error();
  CheckpointRecord rec;
  Decoder d;
  auto r = read_message<s::Checkpoint>(*words, [&](s::Checkpoint::Reader root) -> Result<void> {
    auto k = root.getKey();
    if (k.getPass() != 0 || k.getSeq() != 0) d.fail("the key holds a pass or sequence number (format 1)");
    rec.key = TimeKey{k.getLaunch(), k.getInstret()};

    auto st = root.getStop();
    auto kind = uint16_t(st.getKind());
    if (kind >= kStopKindCount) d.fail("unknown stop kind " + std::to_string(kind));
    rec.stop.kind = StopKind(kind);
    auto text = st.getText();
    rec.stop.text.assign(text.begin(), text.size());
    auto ex = st.getException();
    rec.stop.exception =
        ExceptionRecord{ex.getCause(), ex.getPc(), ex.getCore(), ex.getWarp(), ex.getLane(), ex.getAddr()};

    auto sc = root.getScheduler();
    rec.scheduler.rng = sc.getRng();
    rec.scheduler.core_cursor = sc.getCoreCursor();
    d.list(sc.getCurrentWarp(), &rec.scheduler.current_warp);
    d.list(sc.getQuantumLeft(), &rec.scheduler.quantum_left);

    auto ws = root.getWarps();
    rec.warps.resize(ws.size());
    for (unsigned i = 0; i < ws.size(); ++i) decode_warp(ws[i], &rec.warps[i], d, i);

    auto cs = root.getCores();
    rec.cores.resize(cs.size());
    for (unsigned i = 0; i < cs.size(); ++i) {
      auto cr = cs[i];
      CoreRecord& c = rec.cores[i];
      auto lm = cr.getLocalMem();
      c.local_mem = BlobRef{lm.getSize(), get_hash(lm.getHash())};
      auto bars = cr.getBarriers();
      c.barriers.resize(bars.size());
      for (unsigned j = 0; j < bars.size(); ++j) c.barriers[j] = BarrierRecord{bars[j].getCount(), bars[j].getPhase()};
      d.list(cr.getSlotWarps(), &c.slot_warps);
      c.lmem_next_slot = cr.getLmemNextSlot();
      c.instret = cr.getInstret();
      d.list(cr.getGlobalArrived(), &c.global_arrived);
    }

    auto th = root.getThreads();
    decode_ranges(th.getComplete(), &rec.threads.complete);
    decode_ranges(th.getInProgress(), &rec.threads.in_progress);
    decode_ranges(th.getNotLaunched(), &rec.threads.not_launched);

    auto console = root.getConsole();
    rec.console.assign(console.begin(), console.end());

    auto mem = root.getMemory();
    rec.memory.resize(mem.size());
    for (unsigned i = 0; i < mem.size(); ++i)
      rec.memory[i] = PageRef{mem[i].getNumber(), PageHash{mem[i].getHashHi(), mem[i].getHashLo()}};
    rec.state_hash = root.getStateHash();
    decode_launch(root.getLaunch(), &rec.launch, d);
    auto gb = root.getGlobalBarriers();
    rec.global_barriers.resize(gb.size());
    for (unsigned i = 0; i < gb.size(); ++i)
      rec.global_barriers[i] = GlobalBarrierRecord{gb[i].getCoresArrived(), gb[i].getPhase()};
    d.list(root.getGlobalExpected(), &rec.global_expected);
    rec.kernel_instructions = root.getKernelInstructions();
    rec.kernel_lane_instructions = root.getKernelLaneInstructions();
    rec.drain_countdown = root.getDrainCountdown();
    rec.live = root.getLive();
    rec.stepped = root.getStepped();
    auto timeline = root.getTimeline();
    rec.timeline.assign(timeline.begin(), timeline.end());
    if (!d.error.empty()) return make_error(d.error);
    return {};
  });
  if (!r) return r.error();
  return rec;
}

namespace {

void encode_stop(s::StopReason::Builder st, const StopRecord& stop) {
  st.setKind(static_cast<s::StopKind>(stop.kind));
  st.setText(kj::StringPtr(stop.text.c_str(), stop.text.size()));
  auto ex = st.initException();
  ex.setCause(stop.exception.cause);
  ex.setPc(stop.exception.pc);
  ex.setCore(stop.exception.core);
  ex.setWarp(stop.exception.warp);
  ex.setLane(stop.exception.lane);
  ex.setAddr(stop.exception.addr);
}

}  // namespace

std::vector<uint8_t> Codec::encode_mark(const StopRecord& mark) {
  capnp::MallocMessageBuilder msg(unsigned(32 + mark.text.size() / 8));  // every stop the user sees writes one
  auto root = msg.initRoot<s::Mark>();
  encode_stop(root.initStop(), mark);
  root.setNumber(mark.number);
  auto bytes = to_bytes(msg);
  return seal(Magic::Mark, bytes.data(), bytes.size(), false);
}

Result<StopRecord> Codec::decode_mark(const uint8_t* value, size_t size) {
  auto words = unseal_message(ctx_->d, Magic::Mark, value, size);
  if (!words) return words.error();
  StopRecord m;
  auto r = read_message<s::Mark>(*words, [&](s::Mark::Reader root) -> Result<void> {
    auto st = root.getStop();
    auto kind = uint16_t(st.getKind());
    if (kind >= kStopKindCount) return make_error("unknown stop kind " + std::to_string(kind));
    m.kind = StopKind(kind);
    auto text = st.getText();
    m.text.assign(text.begin(), text.size());
    auto ex = st.getException();
    m.exception = ExceptionRecord{ex.getCause(), ex.getPc(), ex.getCore(), ex.getWarp(), ex.getLane(), ex.getAddr()};
    m.number = root.getNumber();
    return {};
  });
  if (!r) return r.error();
  return m;
}

std::vector<uint8_t> Codec::encode_op(const HostOpRecord& op) {
  // Sized for the operation (the default first segment is 8 KiB, zeroed): a host program's every
  // launch encodes one.
  capnp::MallocMessageBuilder msg(unsigned(16 + op.name.size() / 8));
  auto b = msg.initRoot<s::HostOp>();
  b.setKind(static_cast<s::HostOpKind>(op.kind));
  b.setAddr(op.addr);
  b.setSize(op.size);
  auto d = b.initData();
  d.setSize(op.data.size);
  set_hash(d.initHash(), op.data.hash);
  b.setName(kj::StringPtr(op.name.c_str(), op.name.size()));
  auto bytes = to_bytes(msg);
  return seal(Magic::HostOp, bytes.data(), bytes.size(), false);
}

Result<HostOpRecord> Codec::decode_op(const uint8_t* value, size_t size) {
  auto words = unseal_message(ctx_->d, Magic::HostOp, value, size);
  if (!words) return words.error();
  HostOpRecord op;
  auto r = read_message<s::HostOp>(*words, [&](s::HostOp::Reader root) -> Result<void> {
    auto kind = uint16_t(root.getKind());
    if (kind >= kHostOpKindCount) return make_error("unknown host operation kind " + std::to_string(kind));
    op.kind = HostOpKind(kind);
    op.addr = root.getAddr();
    op.size = root.getSize();
    auto d = root.getData();
    op.data = BlobRef{d.getSize(), get_hash(d.getHash())};
    auto n = root.getName();
    op.name.assign(n.begin(), n.size());
    const bool has_data = op.kind == HostOpKind::Copy || op.kind == HostOpKind::Submit ||
                          op.kind == HostOpKind::Symbols || op.kind == HostOpKind::Timeline;
    if (has_data && (op.data.size == 0 || op.data.size != op.size))
      return make_error(std::string(host_op_name(op.kind)) + " of " + std::to_string(op.size) +
                        " bytes names data of " + std::to_string(op.data.size) + " bytes");
    if (!has_data && op.data.size != 0) return make_error(std::string(host_op_name(op.kind)) + " names data");
    return {};
  });
  if (!r) return r.error();
  return op;
}

namespace {

constexpr size_t kHistoryChunk = 4096;  // writes converted at a time (about 200 KB)

}  // namespace

std::vector<uint8_t> Codec::encode_history(const HistoryRecord& h) {
  return encode_history(h, h.writes.size(), [&](size_t first, std::span<HistoryWrite> out) {
    std::copy_n(h.writes.begin() + ptrdiff_t(first), out.size(), out.begin());
  });
}

std::vector<uint8_t> Codec::encode_history(const HistoryRecord& h, size_t count, const HistoryWriteSource& source) {
  // One segment sized for the columns (about 46 bytes a write): no growing and concatenating.
  capnp::MallocMessageBuilder msg(unsigned(std::min<uint64_t>(count * 6 + 256, 1u << 28)));
  auto b = msg.initRoot<s::History>();
  b.setLaunch(h.launch);
  b.setVersion(h.version);
  b.setReached(h.reached);
  b.setUntil(h.until);
  b.setEnded(h.ended);
  b.setComplete(h.complete);
  b.setGrid(h.grid);
  auto gd = b.initGridDims(3);
  auto bd = b.initBlockDims(3);
  for (unsigned i = 0; i < 3; ++i) {
    gd.set(i, h.grid_dims[i]);
    bd.set(i, h.block_dims[i]);
  }
  auto st = b.initStepped(unsigned(h.stepped.size()));
  for (size_t i = 0; i < h.stepped.size(); ++i) {
    st[unsigned(i)].setFrom(h.stepped[i].from);
    st[unsigned(i)].setTo(h.stepped[i].to);
  }
  const auto n = unsigned(count);
  auto instret = b.initInstret(n);
  auto pc = b.initPc(n), core = b.initCore(n), slot = b.initSlot(n), lane = b.initLane(n), cta = b.initCta(n),
       thread = b.initThread(n), addr = b.initAddr(n), before = b.initBefore(n), after = b.initAfter(n);
  auto size = b.initSize(n), flags = b.initFlags(n);
  // Chunk by chunk, column by column: the chunk stays in cache while each column is written.
  std::vector<HistoryWrite> chunk(std::min(count, kHistoryChunk));
  for (size_t first = 0; first < count; first += chunk.size()) {
    const std::span<HistoryWrite> part(chunk.data(), std::min(chunk.size(), count - first));
    source(first, part);
    const auto at = unsigned(first);
    for (unsigned i = 0; i < part.size(); ++i) instret.set(at + i, part[i].instret);
    for (unsigned i = 0; i < part.size(); ++i) pc.set(at + i, part[i].pc);
    for (unsigned i = 0; i < part.size(); ++i) core.set(at + i, part[i].core);
    for (unsigned i = 0; i < part.size(); ++i) slot.set(at + i, part[i].slot);
    for (unsigned i = 0; i < part.size(); ++i) lane.set(at + i, part[i].lane);
    for (unsigned i = 0; i < part.size(); ++i) cta.set(at + i, part[i].cta);
    for (unsigned i = 0; i < part.size(); ++i) thread.set(at + i, part[i].thread);
    for (unsigned i = 0; i < part.size(); ++i) addr.set(at + i, part[i].addr);
    for (unsigned i = 0; i < part.size(); ++i) size.set(at + i, part[i].size);
    for (unsigned i = 0; i < part.size(); ++i) flags.set(at + i, part[i].flags);
    for (unsigned i = 0; i < part.size(); ++i) before.set(at + i, part[i].before);
    for (unsigned i = 0; i < part.size(); ++i) after.set(at + i, part[i].after);
  }
  // The flat array's segment table, then the segments, streamed into zstd without joining them
  // (megabytes for a large launch): the bytes are those of capnp::messageToFlatArray.
  auto segments = msg.getSegmentsForOutput();
  std::vector<uint32_t> table{uint32_t(segments.size() - 1)};
  size_t raw = 0;
  for (auto seg : segments) {
    table.push_back(uint32_t(seg.size()));
    raw += seg.size() * sizeof(capnp::word);
  }
  if (table.size() % 2) table.push_back(0);
  raw += table.size() * sizeof(uint32_t);
  ZSTD_CCtx* z = ctx_->c;
  ZSTD_CCtx_reset(z, ZSTD_reset_session_only);
  ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, level_);
  ZSTD_CCtx_setPledgedSrcSize(z, raw);
  const size_t bound = ZSTD_compressBound(raw);
  std::unique_ptr<uint8_t[]> out(new uint8_t[bound]);  // not zero-filled: zstd writes a fraction of it
  ZSTD_outBuffer ob{out.get(), bound, 0};
  bool ok = true;
  auto feed = [&](const void* p, size_t n, ZSTD_EndDirective end) {
    ZSTD_inBuffer ib{p, n, 0};
    for (;;) {
      const size_t left = ZSTD_compressStream2(z, &ob, &ib, end);
      if (ZSTD_isError(left)) {
        ok = false;
        return;
      }
      if (end == ZSTD_e_end ? left == 0 : ib.pos == ib.size) return;
    }
  };
  feed(table.data(), table.size() * sizeof(uint32_t), ZSTD_e_continue);
  for (auto seg : segments)
    if (ok) feed(seg.begin(), seg.size() * sizeof(capnp::word), ZSTD_e_continue);
  if (ok) feed(nullptr, 0, ZSTD_e_end);
  ZSTD_CCtx_reset(z, ZSTD_reset_session_and_parameters);
  if (ok && ob.pos < raw) return envelope(Magic::History, Encoding::Zstd, uint32_t(raw), out.get(), ob.pos);
  kj::Array<capnp::word> words = capnp::messageToFlatArray(msg);
  auto bytes = words.asBytes();
  return seal(Magic::History, bytes.begin(), bytes.size(), false);
}

Result<HistoryRecord> Codec::decode_history(const uint8_t* value, size_t size) {
  std::vector<HistoryWrite> all;
  auto h = decode_history(value, size, [&](std::span<const HistoryWrite> part) -> Result<void> {
    all.insert(all.end(), part.begin(), part.end());
    return {};
  });
  if (h) h->writes = std::move(all);
  return h;
}

Result<HistoryRecord> Codec::decode_history(const uint8_t* value, size_t size, const HistoryWriteSink& sink) {
  auto words = unseal_message(ctx_->d, Magic::History, value, size);
  if (!words) return words.error();
  HistoryRecord h;
  auto r = read_message<s::History>(*words, [&](s::History::Reader root) -> Result<void> {
    h.launch = root.getLaunch();
    h.version = root.getVersion();
    h.reached = root.getReached();
    h.until = root.getUntil();
    h.ended = root.getEnded();
    h.complete = root.getComplete();
    h.grid = root.getGrid();
    auto gd = root.getGridDims();
    auto bd = root.getBlockDims();
    if (gd.size() != 3 || bd.size() != 3) return make_error("the launch's dimensions are not 3 numbers each");
    for (unsigned i = 0; i < 3; ++i) {
      h.grid_dims[i] = gd[i];
      h.block_dims[i] = bd[i];
      if (gd[i] == 0 || bd[i] == 0) return make_error("the launch has a dimension of 0");
    }
    for (auto s : root.getStepped()) {
      if (s.getTo() < s.getFrom()) return make_error("a stepped interval ends before it starts");
      h.stepped.push_back(SteppedIntervalRecord{s.getFrom(), s.getTo()});
    }
    auto instret = root.getInstret();
    auto pc = root.getPc(), core = root.getCore(), slot = root.getSlot(), lane = root.getLane(), cta = root.getCta(),
         thread = root.getThread(), addr = root.getAddr(), before = root.getBefore(), after = root.getAfter();
    auto sizes = root.getSize(), flags = root.getFlags();
    const size_t n = instret.size();
    for (size_t m : {pc.size(), core.size(), slot.size(), lane.size(), cta.size(), thread.size(), addr.size(),
                     sizes.size(), flags.size(), before.size(), after.size()})
      if (m != n)
        return make_error("its write columns differ in length (" + std::to_string(m) + " and " + std::to_string(n) +
                          ")");
    std::vector<HistoryWrite> chunk(std::min(n, kHistoryChunk));
    uint64_t last = 0;
    for (size_t first = 0; first < n; first += chunk.size()) {
      const size_t count = std::min(chunk.size(), n - first);
      for (unsigned i = 0; i < count; ++i) {
        const auto k = unsigned(first + i);
        HistoryWrite& w = chunk[i];
        w = HistoryWrite{instret[k], pc[k],   core[k],  slot[k],  lane[k],   cta[k],
                         thread[k],  addr[k], sizes[k], flags[k], before[k], after[k]};
        if (w.size == 0 || w.size > 4)
          return make_error("write " + std::to_string(k) + " has size " + std::to_string(w.size) + " (1 to 4)");
        if (w.flags > 3) return make_error("write " + std::to_string(k) + " has unknown flags");
        if (w.instret < last) return make_error("its writes are not in time order");
        if (w.instret > h.reached)
          return make_error("write " + std::to_string(k) + " is past the point the pass reached");
        last = w.instret;
      }
      if (auto t = sink(std::span<const HistoryWrite>(chunk.data(), count)); !t) return t;
    }
    return {};
  });
  if (!r) return r.error();
  return h;
}

std::vector<uint8_t> Codec::encode_page(const uint8_t* bytes, size_t size, bool fast) {
  return seal(Magic::Page, bytes, size, true, fast ? record_level_ : level_);
}

Result<std::vector<uint8_t>> Codec::decode_page(const uint8_t* value, size_t size, const PageHash& expect) {
  std::vector<uint8_t> out;
  auto r = unseal(Magic::Page, value, size, kMaxPageBytes, &out);
  if (!r) return r.error();
  PageHash got = hash_page(out);
  if (got != expect) return make_error("content hashes to " + got.to_string() + ", not to its key");
  return out;
}

namespace {

std::optional<std::string> check_ranges(const ThreadLists& t) {
  struct Tagged {
    UnitRange r;
    const char* list;
  };
  std::vector<Tagged> all;
  auto add = [&](const std::vector<UnitRange>& v, const char* name) -> std::optional<std::string> {
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i].count == 0) return std::string(name) + " range " + std::to_string(i) + " is empty";
      if (v[i].first + v[i].count < v[i].first) return std::string(name) + " range " + std::to_string(i) + " overflows";
      if (i && v[i].first < v[i - 1].first + v[i - 1].count)
        return std::string(name) + " ranges are not sorted and disjoint at range " + std::to_string(i);
      all.push_back({v[i], name});
    }
    return std::nullopt;
  };
  if (auto e = add(t.complete, "complete")) return e;
  if (auto e = add(t.in_progress, "in-progress")) return e;
  if (auto e = add(t.not_launched, "not-launched")) return e;
  std::sort(all.begin(), all.end(), [](const Tagged& a, const Tagged& b) { return a.r.first < b.r.first; });
  for (size_t i = 1; i < all.size(); ++i)
    if (all[i].r.first < all[i - 1].r.first + all[i - 1].r.count)
      return "unit " + std::to_string(all[i].r.first) + " is both " + all[i - 1].list + " and " + all[i].list;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_config(const ConfigRecord& cfg) {
  if (cfg.clusters == 0 || cfg.cores_per_cluster == 0 || cfg.warps == 0 || cfg.threads == 0 || cfg.threads > 32 ||
      uint64_t(cfg.clusters) * cfg.cores_per_cluster > (1u << 16) || cfg.local_mem_bytes > kMaxPageBytes)
    return "device configuration " + cfg.to_string() + " is not valid";
  return std::nullopt;
}

std::optional<std::string> validate(const CheckpointRecord& rec, const ConfigRecord& cfg) {
  using std::to_string;
  if (auto e = check_config(cfg)) return e;
  const uint32_t ncores = cfg.total_cores(), nw = cfg.warps, nt = cfg.threads;
  if (uint8_t(rec.stop.kind) >= kStopKindCount) return "unknown stop kind " + to_string(int(rec.stop.kind));
  if (uint8_t(rec.launch.kind) >= kLaunchKindCount) return "unknown launch kind " + to_string(int(rec.launch.kind));

  const auto& sc = rec.scheduler;
  if (sc.current_warp.size() != ncores || sc.quantum_left.size() != ncores)
    return "scheduler has " + to_string(sc.current_warp.size()) + " current warps and " +
           to_string(sc.quantum_left.size()) + " quanta for " + to_string(ncores) + " cores";
  if (sc.core_cursor >= ncores) return "scheduler core cursor " + to_string(sc.core_cursor) + " is not a core";
  for (size_t c = 0; c < ncores; ++c)
    if (sc.current_warp[c] < -1 || sc.current_warp[c] >= int64_t(nw))
      return "scheduler current warp of core " + to_string(c) + " is " + to_string(sc.current_warp[c]);

  for (size_t i = 0; i < rec.warps.size(); ++i) {
    const WarpRecord& w = rec.warps[i];
    std::string at = "warp " + to_string(i) + " (core " + to_string(w.core) + ", slot " + to_string(w.slot) + ")";
    if (w.core >= ncores || w.slot >= nw) return at + " is outside the device";
    if (i && std::pair(w.core, w.slot) <= std::pair(rec.warps[i - 1].core, rec.warps[i - 1].slot))
      return at + " is not in (core, slot) order or repeats one";
    if (uint8_t(w.wait) >= kWaitKindCount) return at + " has unknown wait kind " + to_string(int(w.wait));
    if (w.x.size() != 32u * nt || w.f.size() != 32u * nt)
      return at + " has " + to_string(w.x.size()) + " x and " + to_string(w.f.size()) + " f register values, not " +
             to_string(32u * nt) + " (32 x " + to_string(nt) + " lanes)";
    if (!w.reservation.empty() && w.reservation.size() != nt)
      return at + " has " + to_string(w.reservation.size()) + " reservations for " + to_string(nt) + " lanes";
    if (!w.dscratch.empty() && w.dscratch.size() != 4u * nt)
      return at + " has " + to_string(w.dscratch.size()) + " dscratch values, not " + to_string(4u * nt);
    if (w.ipdom.size() > nt - 1)
      return at + " has " + to_string(w.ipdom.size()) + " IPDOM entries; the stack holds " + to_string(nt - 1);
  }

  if (rec.cores.size() != ncores) return to_string(rec.cores.size()) + " cores saved for " + to_string(ncores);
  for (size_t c = 0; c < ncores; ++c) {
    uint32_t sz = rec.cores[c].local_mem.size;
    if (sz != 0 && sz != cfg.local_mem_bytes)
      return "core " + to_string(c) + " local memory is " + to_string(sz) + " bytes, not " +
             to_string(cfg.local_mem_bytes);
  }
  // Empty in a record written before the field existed.
  if (!rec.global_expected.empty() && rec.global_expected.size() != rec.global_barriers.size())
    return to_string(rec.global_expected.size()) + " global barrier expectations for " +
           to_string(rec.global_barriers.size()) + " global barriers";
  if (auto e = check_ranges(rec.threads)) return "thread lists: " + *e;
  for (size_t i = 0; i < rec.memory.size(); ++i) {
    if (rec.memory[i].number >> (64 - kPageBits)) return "memory page number " + to_string(rec.memory[i].number);
    if (i && rec.memory[i].number <= rec.memory[i - 1].number)
      return "memory pages are not in increasing order at page " + to_string(rec.memory[i].number);
  }
  return std::nullopt;
}

}  // namespace vx::checkpoint::codec
