// The rank side of the multi-process graph tests: a hidden case (skipped in a plain run) that the
// parent tests start R times, each a fresh exec of this program with its parameters in the
// environment (multi_process_rank.hpp). One step (wait_writable, the step's partial written on the
// device, arrive, the fused boundary and the eager chain on all R partials, depart, the outputs
// recorded) is captured once and replayed back to back; every step's outputs are then compared
// with the emulator on that step's partials, bit for bit, and their hash written for the parent.
#include "gpu_test_launches.hpp"
#include "multi_process_rank.hpp"
#include "multi_process_steps.hpp"

#include <boundary/gpu/rank_ipc.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>

using namespace gpu_test;
using namespace gpu_test::multi_process;

namespace {

constexpr std::int64_t kStepRows = 1;  // decode: one row per step
constexpr std::uint64_t kStepSeed = 20261216;

// FNV-1a over bytes: equal histories hash equal, and the parent compares the hashes of all ranks.
std::uint64_t fnv1a(std::uint64_t h, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}

template <class T>
std::vector<T> download_all(const DeviceBuffer& b) {
  std::vector<T> v(b.bytes() / sizeof(T));
  CUDA_CHECK(cudaMemcpy(v.data(), b.get(), b.bytes(), cudaMemcpyDeviceToHost));
  return v;
}

}  // namespace

TEST_CASE("multi-process rank" * doctest::skip()) {
  const RankParams p = RankParams::from_environment();
  INFO("rank " << p.rank << " of " << p.ranks);
  constexpr std::int64_t m = kStepRows;
  const auto steps = static_cast<std::int64_t>(p.steps);
  Subject base({"post-ffn (stock)", post_ffn(), true}, realistic_operands(post_ffn()));
  const HostRows rows = rows_of(generate_inputs(post_ffn(), m, kRowSeed, StreamDtype::f32));
  const DeviceRows device_rows(rows);
  gpu::RankBoundary boundary(base.constants, base.operands, m);
  const Stream s(cudaStreamNonBlocking);
  const Variant variant = boundary.fused().variant_for(m, StreamDtype::f32, true, true);
  boundary.prepare(variant, s);
  CUDA_CHECK(prepare_step_kernels());
  // [0]: the fused boundary, [1]: the eager chain; each step's outputs, and every step's.
  const DeviceBuffer out[2] = {DeviceBuffer(bytes16(m)), DeviceBuffer(bytes16(m))};
  const DeviceBuffer new_stream[2] = {DeviceBuffer(bytes32(m)), DeviceBuffer(bytes32(m))};
  const DeviceBuffer out_history[2] = {DeviceBuffer(bytes16(m * steps)), DeviceBuffer(bytes16(m * steps))};
  const DeviceBuffer new_stream_history[2] = {DeviceBuffer(bytes32(m * steps)), DeviceBuffer(bytes32(m * steps))};
  for (int k = 0; k < 2; ++k) {
    poison(out_history[k].get(), out_history[k].bytes(), s);
    poison(new_stream_history[k].get(), new_stream_history[k].bytes(), s);
  }
  CUDA_CHECK(cudaStreamSynchronize(s));
  const auto outputs = [&](int k) {
    return gpu::Outputs{TensorView{out[k].get(), Dtype::bf16, {m, kH}}, TensorView{new_stream[k].get(), Dtype::f32, {m, kH}}};
  };
  StepOutputs record{};
  for (int k = 0; k < 2; ++k) {
    record.out[k] = static_cast<const std::uint16_t*>(out[k].get());
    record.new_stream[k] = static_cast<const float*>(new_stream[k].get());
    record.out_history[k] = static_cast<std::uint16_t*>(out_history[k].get());
    record.new_stream_history[k] = static_cast<float*>(new_stream_history[k].get());
  }

  gpu::RankGroup group({p.channel, p.rank, p.ranks, m, std::chrono::milliseconds(p.timeout_ms), p.planted});
  Capture capture(s, cudaStreamCaptureModeThreadLocal);
  group.wait_writable(s);
  CUDA_CHECK(launch_write_step_partial(static_cast<std::uint16_t*>(group.partial(p.rank, m).data), m, p.rank, kStepSeed,
                                       group.device_epoch(), s));
  group.arrive(s);
  boundary.launch(group, m, device_rows.stream_view(StreamDtype::f32, 0, m), outputs(0), outputs(1), s, variant);
  group.depart(s);
  CUDA_CHECK(launch_record_step(record, m, steps, group.device_epoch(), s));
  const Graph graph(capture.end());
  const GraphExec exec(graph);

  const auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < p.steps; ++step) {
    if (p.stop != Stop::none && step == p.stop_step) {
      std::printf("rank %d: leaving at step %d (%s)\n", p.rank, step + 1, p.stop == Stop::die ? "dies" : "stalls");
      std::fflush(stdout);
      if (p.stop == Stop::die) std::_Exit(9);  // no teardown, no synchronize: as a crash
      std::this_thread::sleep_for(std::chrono::milliseconds(3 * p.timeout_ms));
      return;
    }
    CUDA_CHECK(cudaGraphLaunch(exec.get(), s));
  }
  // A dead peer may take its memory with it: a failed synchronize then says which peer is gone.
  if (const cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess)
    FAIL(boundary::gpu::cuda_error_message("cudaStreamSynchronize", e) << "; " << group.dead_peers());
  std::printf("rank %d: %d steps in %.2f s\n", p.rank, p.steps,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (const auto error = group.error()) FAIL(*error << " [" << group.dead_peers() << "]");
  REQUIRE(group.epoch() == static_cast<std::uint64_t>(p.steps));

  // Every step against the emulator on that step's R partials.
  const std::vector<std::uint16_t> got_out[2] = {download_all<std::uint16_t>(out_history[0]),
                                                 download_all<std::uint16_t>(out_history[1])};
  const std::vector<float> got_new_stream[2] = {download_all<float>(new_stream_history[0]),
                                                download_all<float>(new_stream_history[1])};
  std::vector<std::vector<std::uint16_t>> partials(static_cast<std::size_t>(p.ranks), std::vector<std::uint16_t>(elements(m)));
  std::vector<const std::uint16_t*> pointers;
  for (const auto& v : partials) pointers.push_back(v.data());
  std::vector<std::uint16_t> want_out(elements(m));
  std::vector<float> want_new_stream(elements(m));
  for (std::int64_t step = 1; step <= steps; ++step) {
    for (int r = 0; r < p.ranks; ++r)
      for (std::size_t i = 0; i < elements(m); ++i)
        partials[static_cast<std::size_t>(r)][i] = step_partial(kStepSeed, r, static_cast<std::uint64_t>(step), i);
    ref::Inputs in;
    in.m = m;
    in.partials = pointers;
    in.stream = rows.stream_f32.data();
    ref::Outputs o;
    o.out = want_out.data();
    o.new_stream = want_new_stream.data();
    base.emulator.run(in, o, 1);
    const std::size_t at = static_cast<std::size_t>(step - 1) * elements(m);
    for (int k = 0; k < 2; ++k) {
      const std::string context = "rank " + std::to_string(p.rank) + " of " + std::to_string(p.ranks) + ", graph step " +
                                  std::to_string(step) + ", " + (k == 0 ? "fused all-reduce boundary" : "all-reduce + eager chain");
      expect_bits<std::uint16_t>(context, "out", std::span(got_out[k]).subspan(at, elements(m)), want_out, "the emulator");
      expect_bits<float>(context, "new_stream", std::span(got_new_stream[k]).subspan(at, elements(m)), want_new_stream,
                         "the emulator");
    }
  }
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (int k = 0; k < 2; ++k) {
    h = fnv1a(h, got_out[k].data(), got_out[k].size() * 2);
    h = fnv1a(h, got_new_stream[k].data(), got_new_stream[k].size() * 4);
  }
  std::ofstream(p.digest) << std::hex << h << "\n";
}
