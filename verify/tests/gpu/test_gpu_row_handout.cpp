// The row hand-out (boundary/device/row_handout.cuh) of the cta layout of one rank and of the
// all-reduce boundary's quad layout, above the object's HandoutThresholds (rows a resident CTA or
// cluster; the device's measured ones unless set): each CTA's (cluster's) later rows come from the
// boundary object's counter at run time. The other GPU tests run them at m = 4096 (both stream
// dtypes, the default layouts there, and the quad with its rows handed out and not: bits against
// the emulator) and the cta layout in 1,000 CUDA graph replays of m = 2000 (F32), the counter
// back at zero after them. Here: two objects on two streams at once, one
// F32 and one BF16, the counters idle after; and one object whose counter another launch holds,
// which must fail loudly (so the layout does take its rows from the counter at kM: the cta layout
// with either stream dtype, the quad of 8 partials), each in a process of its own (its trap ends
// the CUDA context).
#include "gpu_test_launches.hpp"

#include <boundary/gpu/all_reduce_boundary.hpp>
#include <boundary/gpu/diagnostics.hpp>     // occupy_row_counter
#include <boundary/gpu/rank_launcher.hpp>   // launch_ranks, this_executable

#include <chrono>
#include <cstdio>
#include <vector>

using namespace gpu_test;

namespace {

constexpr std::int64_t kM = 3400;

// Rows are handed out at kM for both stream dtypes on this device, in the layout the object picks
// (one CTA an SM), by its thresholds.
void require_handout(const Subject& s) {
  for (StreamDtype sd : {StreamDtype::f32, StreamDtype::bf16}) REQUIRE(s.fused.variant_for(kM, sd, true).layout == gpu::Layout::cta);
  const gpu::HandoutThresholds& t = s.fused.handout_thresholds();
  const std::int64_t sms = s.fused.sm_count();
  REQUIRE(t.cta_f32 > 0);
  REQUIRE(t.cta_bf16 > 0);
  REQUIRE(kM > t.cta_f32 * sms);
  REQUIRE(kM > t.cta_bf16 * sms);
}

// The hidden cases, one a stream dtype (their thresholds differ), each run in a process of its
// own by the visible case.
constexpr const char* kOccupiedF32 = "row hand-out: a cta launch (F32 stream) that meets another launch's tag traps (own process)";
constexpr const char* kOccupiedBf16 = "row hand-out: a cta launch (BF16 stream) that meets another launch's tag traps (own process)";
constexpr const char* kOccupiedQuad =
    "row hand-out: an all-reduce quad launch (8 partials) that meets another launch's tag traps (own process)";

// After a control launch that succeeded: the object's counter is idle again, and the same launch
// fails once another launch's tag holds the counter.
template <class Launch>
void fails_once_counter_held(const gpu::BoundaryBase& b, Launch launch) {
  const gpu::RowCounterWords idle = gpu::row_counter_words(b);
  CHECK(idle.rows == 0);
  CHECK(idle.done == 0);

  gpu::occupy_row_counter(b, 0xB0B);
  const cudaError_t e = launch();
  CHECK(e != cudaSuccess);
  std::printf("the launch's error: %s\n", cudaGetErrorName(e));
  std::fflush(stdout);
}

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
  fails_once_counter_held(s.fused, launch);
}

// The same for the all-reduce boundary at kM, in the quad layout its dispatch picks there, whose
// leader CTAs take the tickets, rows handed out above 1 row a resident cluster whatever this
// device's thresholds say. Its partials are 8 views of one branch: the test is about which rows
// run, the all-reduce's bits are test_gpu_all_reduce's (the quad both ways at 4096 rows).
void occupied_counter_traps_quad() {
  const HostRows& host = realistic_rows();
  const DeviceRows rows(host);
  const NamedConstants k{"post-ffn (stock)", post_ffn(), true};
  Subject s(k, realistic_operands(k.constants));
  gpu::AllReduceBoundary fused(s.constants, s.operands);
  REQUIRE(fused.variant_for(kM, StreamDtype::f32, true).layout == gpu::Layout::quad);
  const gpu::HandoutThresholds device = fused.handout_thresholds();
  fused.set_handout_thresholds({device.cta_f32, device.cta_bf16, 1});
  const std::vector<TensorView> partials(kMaxRanks, rows.branch_view(0, kM));
  const DeviceBuffer out(bytes16(kM)), ns(bytes32(kM));
  const gpu::Outputs o{TensorView{out.get(), Dtype::bf16, {kM, kH}}, TensorView{ns.get(), Dtype::f32, {kM, kH}}};
  const auto launch = [&] {
    fused.run(partials, rows.stream_view(StreamDtype::f32, 0, kM), o, nullptr);
    return cudaStreamSynchronize(nullptr);
  };
  REQUIRE(launch() == cudaSuccess);  // the control: an idle counter, the same launch
  fails_once_counter_held(fused, launch);
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

TEST_CASE("row hand-out: one object's counter held by another launch fails the launch loudly: cta, both stream dtypes; quad, 8 partials") {
  for (const char* hidden : {kOccupiedF32, kOccupiedBf16, kOccupiedQuad}) {
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
TEST_CASE(kOccupiedQuad * doctest::skip()) { occupied_counter_traps_quad(); }
