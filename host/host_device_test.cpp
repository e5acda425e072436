// HostDevice (the meaning of each vortex.h call) on the model, and the channel's framing.
#include "host/host_device.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <thread>

#include "host/channel.hpp"
#include "host/vortex.h"

using namespace vx;

namespace {

std::unique_ptr<Driver> model() {
  auto d = open_model_device(DeviceConfig{}, RunOptions{});
  REQUIRE(d);
  return std::move(d).value();
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::string error_of(const Result<void>& r) { return r ? "" : r.error().message; }

}  // namespace

TEST_CASE("buffers: bounds, reservations and frees", "[host]") {
  auto d = model();
  host::HostDevice dev(*d);
  auto b = dev.mem_alloc(64, VX_MEM_READ_WRITE);
  REQUIRE(b);
  std::vector<uint8_t> bytes(64, 7), back(64);
  CHECK(dev.copy_to_dev(*b, 0, bytes));
  CHECK_THAT(error_of(dev.copy_to_dev(*b, 32, bytes)), Catch::Contains("runs past the end of the 64-byte buffer"));
  CHECK(dev.copy_from_dev(*b, 0, back));
  CHECK(back == bytes);
  CHECK_THAT(dev.mem_alloc(8, 0x10).error().message, Catch::Contains("not VX_MEM_* bits"));

  auto r = dev.mem_reserve(0x30000000, 8192, VX_MEM_READ_WRITE);
  REQUIRE(r);
  CHECK(dev.buffer(*r)->addr == 0x30000000);
  CHECK_THAT(dev.mem_reserve(0x30001000, 4096, 0).error().message, Catch::Contains("overlaps buffer"));
  CHECK_THAT(dev.mem_reserve(0x30100010, 4096, 0).error().message, Catch::Contains("not page aligned"));
  auto info = dev.mem_info();
  REQUIRE(info);
  CHECK(info->second == 4096 + 8192);
  // A freed reservation can be made again.
  CHECK(dev.mem_free(*r));
  CHECK(dev.mem_reserve(0x30000000, 8192, 0));
  CHECK_THAT(error_of(dev.mem_free(*r)), Catch::Contains("does not exist"));
  CHECK_THAT(dev.caps(99).error().message, Catch::Contains("unknown caps id 99"));
  CHECK(dev.caps(VX_CAPS_NUM_THREADS).value() == 4);
}

TEST_CASE("launches take grid, block and local memory from the KMU's DCRs", "[host]") {
  auto d = model();
  host::HostDevice dev(*d);
  auto bytes = file_bytes(VX_HOST_TEST_KERNEL);
  REQUIRE(!bytes.empty());
  auto k = dev.upload_kernel(bytes, "vecadd_kernel.elf");
  REQUIRE(k);
  auto data = dev.mem_alloc(64, VX_MEM_READ_WRITE);
  REQUIRE(data);
  CHECK_THAT(dev.start(*data, 0).error().message, Catch::Contains("holds no kernel"));
  // Without DCRs: the image's descriptor (grid 1, block 16).
  auto s0 = dev.start(*k, 0);
  REQUIRE(s0);
  CHECK(s0->launch.grid == std::array<uint32_t, 3>{1, 1, 1});
  CHECK(s0->launch.block == std::array<uint32_t, 3>{16, 1, 1});
  CHECK(dev.dcr_write(VX_DCR_KMU_GRID_DIM_X, 5));
  CHECK(dev.dcr_write(VX_DCR_KMU_BLOCK_DIM_X, 2));
  CHECK(dev.dcr_write(VX_DCR_KMU_BLOCK_DIM_Y, 4));
  CHECK(dev.dcr_write(VX_DCR_KMU_LMEM_SIZE, 256));
  CHECK(dev.dcr_read(VX_DCR_KMU_GRID_DIM_X).value() == 5);
  auto s1 = dev.start(*k, *data);
  REQUIRE(s1);
  CHECK(s1->launch.grid == std::array<uint32_t, 3>{5, 1, 1});
  CHECK(s1->launch.block == std::array<uint32_t, 3>{2, 4, 1});
  CHECK(s1->launch.lmem_bytes == 256);
  CHECK(s1->launch.arg_ptr == dev.buffer(*data)->addr);
  CHECK_THAT(error_of(dev.dcr_write(0x7ff, 1)), Catch::Contains("DCR 0x7ff does not exist"));
  // A block that does not fit a core is the launch's error.
  CHECK(dev.dcr_write(VX_DCR_KMU_BLOCK_DIM_X, 64));
  CHECK_THAT(dev.start(*k, 0).error().message, Catch::Contains("warps"));
  CHECK(dev.launches().size() == 2);
  CHECK(dev.images().size() == 1);
}

TEST_CASE("the channel's receiver splits and joins messages however the bytes arrive", "[host]") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  std::vector<uint8_t> big(200000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = uint8_t(i * 7);
  // Two small messages and a large one written back to back, the large one bigger than the buffer.
  host::Writer a, b;
  a.u32(1).u64(2);
  b.str("hello");
  std::thread writer([&] {
    REQUIRE(host::send_message(sv[0], 11, a.data()));
    REQUIRE(host::send_message(sv[0], 12, b.data()));
    REQUIRE(host::send_message(sv[0], 13, big));
    ::close(sv[0]);
  });
  host::Receiver in(sv[1]);
  auto m1 = in.next();
  REQUIRE(m1);
  REQUIRE(*m1);
  CHECK((*m1)->first == 11);
  host::Reader r1((*m1)->second);
  uint32_t x = 0;
  uint64_t y = 0;
  CHECK((r1.u32(&x) && r1.u64(&y) && x == 1 && y == 2));
  auto m2 = in.next();
  REQUIRE((m2 && *m2));
  std::string s;
  host::Reader r2((*m2)->second);
  CHECK((r2.str(&s) && s == "hello"));
  auto m3 = in.next();
  REQUIRE((m3 && *m3));
  CHECK((*m3)->first == 13);
  CHECK((*m3)->second == big);
  auto end = in.next();
  REQUIRE(end);
  CHECK_FALSE(*end);
  writer.join();
  ::close(sv[1]);
}
