// The row hand-out of the cta layout of one rank (boundary/device/row_handout.cuh): above 12 rows
// a resident CTA with an F32 stream, 24 with BF16 (1,584 and 3,168 rows on 132 SMs), each CTA's
// later rows come from the boundary object's counter at run time. The other GPU tests run it at m
// = 4096 (both stream dtypes, the cta layout's default there) and in 1,000 CUDA graph replays of
// m = 2000 (F32), the counter back at zero after them. Here: two objects on two streams at once,
// one F32 and one BF16, the counters idle after; and one object whose counter another launch
// holds, which must fail loudly (so the cta layout does take its rows from the counter at kM, with
// either stream dtype), each in a process of its own (its trap ends the CUDA context).
#include "gpu_test_launches.hpp"

#include <boundary/gpu/diagnostics.hpp>     // occupy_row_counter
#include <boundary/gpu/rank_launcher.hpp>   // launch_ranks, this_executable

#include <chrono>
#include <cstdio>
#include <vector>

using namespace gpu_test;

namespace {

constexpr std::int64_t kM = 3400;

// Rows are handed out at kM for both stream dtypes on this device, in the layout the object picks
// (above 24 rows a CTA with a BF16 stream, one CTA an SM).
void require_handout(const Subject& s) {
  for (StreamDtype sd : {StreamDtype::f32, StreamDtype::bf16}) REQUIRE(s.fused.variant_for(kM, sd, true).layout == gpu::Layout::cta);
  REQUIRE(kM > 24 * static_cast<std::int64_t>(s.fused.sm_count()));
}

// The hidden cases, one a stream dtype (their thresholds differ), each run in a process of its
// own by the visible case.
constexpr const char* kOccupiedF32 = "row hand-out: a cta launch (F32 stream) that meets another launch's tag traps (own process)";
constexpr const char* kOccupiedBf16 = "row hand-out: a cta launch (BF16 stream) that meets another launch's tag traps (own process)";

// The hidden cases' body. No Stream or pinned buffer here: their destructors check CUDA's answer,
// which after the trap is the context's error.
void occupied_counter_traps(StreamDtype sd) {
  const HostRows& host = realistic_rows();
  const DeviceRows rows(host);
  const NamedConstants k{"post-ffn (stock)", post_ffn(), true};
  Subject s(k, realistic_operands(k.constants));
  require_handout(s);
  const Variant v{sd, true, true, true, gpu::Layout::cta};
  const DeviceBuffer out(bytes16(kM)), ns(bytes32(kM));
  const gpu::Outputs o{TensorView{out.get(), Dtype::bf16, {kM, kH}}, TensorView{ns.get(), Dtype::f32, {kM, kH}}};
  const auto launch = [&] {
    s.fused.run(rows.branch_view(0, kM), rows.stream_view(sd, 0, kM), o, nullptr, v);
    return cudaStreamSynchronize(nullptr);
  };
  // The control: with the counter idle the same launch succeeds and is right, so the failure
  // below is the foreign tag's.
  REQUIRE(launch() == cudaSuccess);
  std::vector<std::uint16_t> got(elements(kM));
  REQUIRE(cudaMemcpy(got.data(), out.get(), bytes16(kM), cudaMemcpyDeviceToHost) == cudaSuccess);
  const Expected want = emulate(s, host, sd, kM);
  expect_bits<std::uint16_t>("idle counter, " + describe(v), "out", got, want.out_rows(0, kM), "the emulator");
  const gpu::RowCounterWords idle = gpu::row_counter_words(s.fused);
  CHECK(idle.rows == 0);
  CHECK(idle.done == 0);

  gpu::occupy_row_counter(s.fused, 0xB0B);
  const cudaError_t e = launch();
  CHECK(e != cudaSuccess);
  std::printf("the launch's error: %s\n", cudaGetErrorName(e));
  std::fflush(stdout);
}

}  // namespace

TEST_CASE("row hand-out: two objects on two streams at once, 8 launches each, every launch == the emulator") {
  const HostRows& host = realistic_rows();
  const DeviceRows rows(host);
  const NamedConstants k{"post-ffn (stock)", post_ffn(), true};
  Subject a(k, realistic_operands(k.constants)), b(k, realistic_operands(k.constants));
  require_handout(a);
  constexpr int kLaunches = 8;
  struct Side {
    Side(Subject& subject, StreamDtype dtype, std::int64_t first_row) : s(subject), sd(dtype), first(first_row) {}
    Subject& s;
    StreamDtype sd;
    std::int64_t first;  // its data rows
    Stream stream;       // blocking: ordered after the legacy-stream uploads, not after the other side
    DeviceBuffer out{bytes16(kM) * kLaunches}, ns{bytes32(kM) * kLaunches};
  };
  Side sides[] = {{a, StreamDtype::f32, 0}, {b, StreamDtype::bf16, kRows - kM}};
  for (Side& side : sides) {
    side.s.fused.prepare(side.s.fused.variant_for(kM, side.sd, true), side.stream);
    poison(side.out.get(), side.out.bytes(), side.stream);
    poison(side.ns.get(), side.ns.bytes(), side.stream);
    CUDA_CHECK(cudaStreamSynchronize(side.stream));
  }
  // Interleaved, no synchronization: the streams' launches overlap (each takes every SM it finds).
  for (int i = 0; i < kLaunches; ++i)
    for (Side& side : sides) {
      const gpu::Outputs o{TensorView{side.out.at(bytes16(kM) * i), Dtype::bf16, {kM, kH}},
                           TensorView{side.ns.at(bytes32(kM) * i), Dtype::f32, {kM, kH}}};
      side.s.fused.launch(rows.branch_view(side.first, kM), rows.stream_view(side.sd, side.first, kM), o, side.stream);
    }
  const Bench staging(kM);
  for (Side& side : sides) {
    CUDA_CHECK(cudaStreamSynchronize(side.stream));
    const gpu::RowCounterWords idle = gpu::row_counter_words(side.s.fused);  // every launch reset it
    CHECK(idle.rows == 0);
    CHECK(idle.done == 0);
    const Expected want = emulate(side.s, host, side.sd, kM, side.first);
    for (int i = 0; i < kLaunches; ++i) {
      const std::string context = side.s.name + " | stream " + (side.sd == StreamDtype::f32 ? "F32" : "BF16") +
                                  " | launch " + std::to_string(i) + " of m = " + std::to_string(kM);
      expect_bits(context, "out", staging.fetch_out(side.out.at(bytes16(kM) * i), kM), want.out_rows(0, kM), "the emulator",
                  side.first);
      expect_bits(context, "new_stream", staging.fetch_new_stream(side.ns.at(bytes32(kM) * i), kM),
                  want.new_stream_rows(0, kM), "the emulator", side.first);
    }
  }
}

TEST_CASE("row hand-out: one object's counter held by another launch fails the cta launch loudly, both stream dtypes") {
  for (const char* hidden : {kOccupiedF32, kOccupiedBf16}) {
    const gpu::ChannelDir dir;
    const std::vector<gpu::RankExit> exits = gpu::launch_ranks(
        gpu::this_executable(), 1,
        [hidden](int) { return std::vector<std::string>{"--no-skip", std::string("--test-case=") + hidden}; }, dir.path(),
        std::chrono::minutes(2));
    REQUIRE(exits.size() == 1);
    INFO(hidden << "\nthe process: " << exits[0].describe() << "\n" << exits[0].log_tail(4000));
    CHECK(exits[0].ok());
    CHECK(exits[0].log.find("the launch's error: cuda") != std::string::npos);
  }
}

// Run by the case above only.
TEST_CASE(kOccupiedF32 * doctest::skip()) { occupied_counter_traps(StreamDtype::f32); }
TEST_CASE(kOccupiedBf16 * doctest::skip()) { occupied_counter_traps(StreamDtype::bf16); }
