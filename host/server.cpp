#include "host/server.hpp"

#include <sys/socket.h>

#include "host/channel.hpp"

namespace vx::host {

void put_console(Writer& w, const std::vector<ConsoleChunk>& chunks) {
  w.u32(uint32_t(chunks.size()));
  for (const ConsoleChunk& c : chunks) w.u32(c.slot).u32(c.lost).str(c.bytes);
}

Result<void> HostServer::reply(int32_t status, std::span<const uint8_t> payload) {
  return send_message(fd_, uint32_t(status), payload, on_rings_ ? rings_ : nullptr);
}

Result<void> HostServer::answer_wait(const std::string& error, const std::vector<ConsoleChunk>& console) {
  if (!waiting_) return {};
  waiting_ = false;
  started_ = 0;
  Writer w;
  if (!error.empty()) {
    w.bytes({reinterpret_cast<const uint8_t*>(error.data()), error.size()});
    return reply(-1, w.data());
  }
  put_console(w, console);
  return reply(0, w.data());
}

Result<void> HostServer::expire_wait(const std::string& error) {
  if (!waiting_) return {};
  waiting_ = false;
  return reply(-1, {reinterpret_cast<const uint8_t*>(error.data()), error.size()});
}

Error HostServer::violation(const std::string& what) {
  if (!broken_) {
    broken_ = true;
    waiting_ = false;
    // The program's call gets the error (best effort: it may be gone), then the channel closes in
    // both directions, so that whatever it waits for next returns.
    const std::string message = "vxreplay closed the channel: " + what;
    (void)reply(-1, {reinterpret_cast<const uint8_t*>(message.data()), message.size()});
    ::shutdown(fd_, SHUT_RDWR);
  }
  return Error{what};
}

Result<std::optional<std::pair<uint32_t, std::vector<uint8_t>>>> HostServer::next() {
  if (broken_) return std::optional<std::pair<uint32_t, std::vector<uint8_t>>>{};
  auto m = in_.next();
  if (!m) return violation(m.error().message);
  if (*m && !hello_ && Op((*m)->first) != Op::Hello)
    return violation("request " + std::to_string((*m)->first) + " (" + op_name(Op((*m)->first)) +
                     ") before the handshake (vx_dev_open must come first)");
  return m;
}

Result<HostServer::Pump> HostServer::pump() {
  for (;;) {
    auto m = next();
    if (!m) return m.error();
    if (!*m) return Pump::Ended;
    auto done = serve((*m)->first, (*m)->second, "");
    if (!done) return done.error();
    if (!*done) return Pump::Waiting;
  }
}

Result<void> HostServer::drain(const std::string& why) {
  if (waiting_)
    if (auto r = answer_wait(why); !r) return r;
  for (;;) {
    auto m = next();
    if (!m) return m.error();
    if (!*m) return {};
    auto done = serve((*m)->first, (*m)->second, why);
    if (!done) return done.error();
  }
}

Result<bool> HostServer::serve(uint32_t op_word, std::span<const uint8_t> payload, const std::string& refuse_runs) {
  ++calls_;
  const Op op = Op(op_word);
  Reader in(payload);
  Writer out;
  auto fail = [&](const std::string& message) -> Result<bool> {
    if (auto r = reply(-1, {reinterpret_cast<const uint8_t*>(message.data()), message.size()}); !r) return r.error();
    return true;
  };
  auto ok = [&]() -> Result<bool> {
    if (auto r = reply(0, out.data()); !r) return r.error();
    return true;
  };
  auto bad = [&]() { return fail(std::string("malformed ") + op_name(op) + " request"); };
  switch (op) {
    case Op::Hello: {
      uint32_t version = 0, transport = 0;
      if (!in.u32(&version)) return bad();
      if (version != kProtocolVersion)
        return fail("this libvortex speaks channel version " + std::to_string(version) + ", vxreplay speaks " +
                    std::to_string(kProtocolVersion) + ": rebuild the host program against this vxreplay's library");
      if (!in.u32(&transport) || transport > 1) return bad();
      hello_ = true;
      // The first answer goes through the socket; after it both sides use the rings if both can,
      // for good (a device opened again says hello through them).
      const bool rings = on_rings_ || (transport == 1 && rings_);
      out.u32(kProtocolVersion).str(config_).u32(rings ? 1 : 0);
      if (auto r = ok(); !r || !rings || on_rings_) return r;
      if (auto r = in_.use_rings(rings_); !r) return violation(r.error().message);
      on_rings_ = true;
      rings_->mark_in_use();
      return true;
    }
    case Op::Caps: {
      uint32_t id = 0;
      if (!in.u32(&id)) return bad();
      auto v = dev_.caps(id);
      if (!v) return fail(v.error().message);
      out.u64(*v);
      return ok();
    }
    case Op::Alloc: {
      uint64_t size = 0;
      int32_t flags = 0;
      if (!in.u64(&size) || !in.i32(&flags)) return bad();
      auto id = dev_.mem_alloc(size, flags);
      if (!id) return fail(id.error().message);
      out.u32(*id).u64(dev_.buffer(*id)->addr);
      return ok();
    }
    case Op::Reserve: {
      uint64_t addr = 0, size = 0;
      int32_t flags = 0;
      if (!in.u64(&addr) || !in.u64(&size) || !in.i32(&flags)) return bad();
      auto id = dev_.mem_reserve(addr, size, flags);
      if (!id) return fail(id.error().message);
      out.u32(*id);
      return ok();
    }
    case Op::Free: {
      uint32_t id = 0;
      if (!in.u32(&id)) return bad();
      if (auto r = dev_.mem_free(id); !r) return fail(r.error().message);
      return ok();
    }
    case Op::Access: {
      uint32_t id = 0;
      uint64_t off = 0, size = 0;
      int32_t flags = 0;
      if (!in.u32(&id) || !in.u64(&off) || !in.u64(&size) || !in.i32(&flags)) return bad();
      if (auto r = dev_.mem_access(id, off, size, flags); !r) return fail(r.error().message);
      return ok();
    }
    case Op::Info: {
      auto v = dev_.mem_info();
      if (!v) return fail(v.error().message);
      out.u64(v->first).u64(v->second);
      return ok();
    }
    case Op::CopyTo: {
      uint32_t id = 0;
      uint64_t off = 0;
      if (!in.u32(&id) || !in.u64(&off)) return bad();
      if (auto r = dev_.copy_to_dev(id, off, in.rest()); !r) return fail(r.error().message);
      return ok();
    }
    case Op::CopyFrom: {
      uint32_t id = 0;
      uint64_t off = 0, size = 0;
      if (!in.u32(&id) || !in.u64(&off) || !in.u64(&size)) return bad();
      if (size > kMaxMessageBytes) return fail("a copy of " + std::to_string(size) + " bytes in one call is too large");
      std::vector<uint8_t> bytes(size);
      if (auto r = dev_.copy_from_dev(id, off, bytes); !r) return fail(r.error().message);
      out.bytes(bytes);
      return ok();
    }
    case Op::Upload: {
      std::string name;
      if (!in.str(&name)) return bad();
      auto id = dev_.upload_kernel(in.rest(), name);
      if (!id) return fail(id.error().message);
      out.u32(*id).u64(dev_.buffer(*id)->addr).u64(dev_.buffer(*id)->size);
      return ok();
    }
    case Op::Start: {
      uint32_t kernel = 0, args = 0;
      if (!in.u32(&kernel) || !in.u32(&args)) return bad();
      if (!refuse_runs.empty()) return fail(refuse_runs);
      auto s = dev_.start(kernel, args);
      if (!s) return fail(s.error().message);
      ++started_;
      return ok();
    }
    case Op::Wait: {
      uint64_t timeout = 0;
      if (!in.u64(&timeout)) return bad();
      if (!refuse_runs.empty() && started_ > 0) return fail(refuse_runs);
      if (started_ == 0) {
        put_console(out, {});
        return ok();
      }
      // The debugger runs the work; the reply waits for its end (answer_wait) or its timeout
      // in device time (expire_wait).
      waiting_ = true;
      wait_timeout_ms_ = timeout;
      return false;
    }
    case Op::DcrRead: {
      uint32_t addr = 0;
      if (!in.u32(&addr)) return bad();
      auto v = dev_.dcr_read(addr);
      if (!v) return fail(v.error().message);
      out.u32(*v);
      return ok();
    }
    case Op::DcrWrite: {
      uint32_t addr = 0, value = 0;
      if (!in.u32(&addr) || !in.u32(&value)) return bad();
      if (auto r = dev_.dcr_write(addr, value); !r) return fail(r.error().message);
      return ok();
    }
    case Op::Perf: {
      std::string text = dev_.perf_text();
      out.bytes({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
      return ok();
    }
    case Op::Close: return ok();
  }
  return fail("unknown request " + std::to_string(op_word) +
              " (is the host program's libvortex from another vxreplay?)");
}

}  // namespace vx::host
