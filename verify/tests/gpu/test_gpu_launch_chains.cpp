// The GPU tests of the fused boundary inside a launch sequence (ctest label gpu; part of the
// test_gpu_boundary program): a PDL producer -> boundary -> consumer chain with fresh rows every
// step, 1,000 CUDA graph replays of the captured fused boundary, and the eager chain and run()
// with its checks captured and replayed. Outputs are poisoned before every launch
// (gpu_test_bits.hpp).
#include "gpu_test_launches.hpp"
#include "pdl_chain.hpp"

#include <boundary/gpu/diagnostics.hpp>  // launch_producer

using namespace gpu_test;

TEST_CASE("PDL chain: producer -> boundary (PDL) -> consumer (PDL, griddepcontrol.wait), fresh rows every step") {
  const HostRows& host = realistic_rows();
  const DeviceRows rows(host);
  const NamedConstants k{"post-ffn (stock)", post_ffn(), true};
  Subject s(k, realistic_operands(k.constants));
  const int sm = s.fused.sm_count();
  const Expected want_f32 = emulate(s, host, StreamDtype::f32, kRows);
  const Expected want_bf16 = emulate(s, host, StreamDtype::bf16, kRows);
  const Stream stream;
  constexpr unsigned kProducerDelayNs = 20000;  // long enough for the boundary's CTAs to be resident
  struct Chain {
    std::int64_t m;
    int steps;
    StreamDtype sd;
    bool store;
  };
  const Chain chains[] = {{1, 8, StreamDtype::f32, true},
                          {sm, 6, StreamDtype::f32, true},
                          {sm + 1, 6, StreamDtype::f32, true},
                          {sm + 1, 6, StreamDtype::bf16, false},
                          {1000, 4, StreamDtype::f32, true}};
  for (const Chain& c : chains) {
    REQUIRE(c.m * c.steps <= kRows);  // every step reads rows no other step reads
    const Expected& want = c.sd == StreamDtype::f32 ? want_f32 : want_bf16;
    const Variant natural = s.fused.variant_for(c.m, c.sd, c.store, /*pdl=*/true);
    REQUIRE(natural.pdl);
    for (const Variant& v : {natural, Variant{c.sd, c.store, !natural.late_gates, true, other_layout(natural.layout)}}) {
      const std::string context = s.name + " | PDL chain, m = " + std::to_string(c.m) + " | " + describe(v);
      const DeviceBuffer branch(bytes16(c.m)), out(bytes16(c.m)), ns(bytes32(c.m));
      const DeviceBuffer result_out(bytes16(c.m * c.steps)), result_ns(bytes32(c.m * c.steps));
      // Before step 0 the branch holds poison too: a boundary that ran before the producer reads NaN rows.
      for (const DeviceBuffer* b : {&branch, &result_out, &result_ns}) poison(b->get(), b->bytes(), stream);
      const gpu::Outputs outputs{TensorView{out.get(), Dtype::bf16, {c.m, kH}},
                                 TensorView{c.store ? ns.get() : nullptr, Dtype::f32, {c.m, kH}}};
      const TensorView branch_view{branch.get(), Dtype::bf16, {c.m, kH}};
      for (int step = 0; step < c.steps; ++step) {
        const std::int64_t first = c.m * step;
        poison(out.get(), out.bytes(), stream);
        poison(ns.get(), ns.bytes(), stream);
        CUDA_CHECK(gpu::launch_producer(rows.branch.at(bytes16(first)), branch.get(), bytes16(c.m), kProducerDelayNs, stream));
        s.fused.launch(branch_view, rows.stream_view(c.sd, first, c.m), outputs, stream, v);
        CUDA_CHECK(gpu::test::launch_consumer(out.get(), result_out.at(bytes16(first)), bytes16(c.m), c.store ? ns.get() : nullptr,
                                         c.store ? result_ns.at(bytes32(first)) : nullptr, c.store ? bytes32(c.m) : 0, stream));
      }
      CUDA_CHECK(cudaStreamSynchronize(stream));
      const std::int64_t total = c.m * c.steps;
      std::vector<std::uint16_t> got_out(elements(total));
      CUDA_CHECK(cudaMemcpy(got_out.data(), result_out.get(), result_out.bytes(), cudaMemcpyDeviceToHost));
      expect_bits<std::uint16_t>(context, "out (consumer's copy)", got_out, want.out_rows(0, total), "the emulator");
      if (!c.store) continue;
      std::vector<float> got_ns(elements(total));
      CUDA_CHECK(cudaMemcpy(got_ns.data(), result_ns.get(), result_ns.bytes(), cudaMemcpyDeviceToHost));
      expect_bits<float>(context, "new_stream (consumer's copy)", got_ns, want.new_stream_rows(0, total), "the emulator");
    }
  }
}

TEST_CASE("CUDA graph: 1,000 replays of the captured fused boundary, each sampled replay bitwise equal to the emulator") {
  const HostRows& host = realistic_rows();
  const DeviceRows rows(host);
  const NamedConstants k{"post-ffn (stock)", post_ffn(), true};
  Subject s(k, realistic_operands(k.constants));
  const int sm = s.fused.sm_count();
  const Bench bench(2000);
  constexpr int kReplays = 1000;
  // Replays 0, 1, 2, every 53rd, and the last three: each alternating input set seen early and late.
  std::vector<int> samples = {0, 1, 2};
  for (int i = 53; i < kReplays - 3; i += 53) samples.push_back(i);
  for (int i = kReplays - 3; i < kReplays; ++i) samples.push_back(i);
  struct Config {
    std::int64_t m;
    StreamDtype sd;
    bool store;
  };
  for (const Config& c : {Config{2, StreamDtype::f32, true}, Config{sm + 1, StreamDtype::bf16, false},
                          Config{2000, StreamDtype::f32, true}}) {  // 2000: rows handed out (cta, F32)
    const Expected want = emulate(s, host, c.sd, 2 * c.m);  // input set A: rows [0, m); B: rows [m, 2m)
    const Variant v = s.fused.variant_for(c.m, c.sd, c.store);
    const std::string context = s.name + " | graph, m = " + std::to_string(c.m) + " | " + describe(v);
    const std::size_t stream_bytes = c.sd == StreamDtype::f32 ? bytes32(c.m) : bytes16(c.m);
    const DeviceBuffer branch(bytes16(c.m)), stream_in(stream_bytes), out(bytes16(c.m)), ns(bytes32(c.m));
    const DeviceBuffer history_out(bytes16(c.m) * samples.size()), history_ns(bytes32(c.m) * samples.size());
    const gpu::Outputs outputs{TensorView{out.get(), Dtype::bf16, {c.m, kH}},
                               TensorView{c.store ? ns.get() : nullptr, Dtype::f32, {c.m, kH}}};
    const TensorView branch_view{branch.get(), Dtype::bf16, {c.m, kH}};
    const TensorView stream_view{stream_in.get(), c.sd == StreamDtype::f32 ? Dtype::f32 : Dtype::bf16, {c.m, kH}};

    s.fused.prepare(v, bench.stream);  // the kernels' modules are loaded now, not during the capture
    CUDA_CHECK(gpu::test::prepare_kernels());
    Graph graph;
    {
      Capture capture(bench.stream, cudaStreamCaptureModeGlobal);
      // The poison is part of every replay: a replay that did not run cannot pass on the
      // previous replay's output.
      CUDA_CHECK(gpu::test::launch_poison(out.get(), out.bytes(), bench.stream));
      if (c.store) CUDA_CHECK(gpu::test::launch_poison(ns.get(), ns.bytes(), bench.stream));
      s.fused.launch(branch_view, stream_view, outputs, bench.stream, v);
      graph = Graph(capture.end());
    }
    const GraphExec exec(graph);
    std::size_t sampled = 0;
    for (int replay = 0; replay < kReplays; ++replay) {
      // Alternating inputs: a replay that reused stale inputs or outputs gives the other set's bits.
      const std::int64_t first = (replay % 2) * c.m;
      CUDA_CHECK(cudaMemcpyAsync(branch.get(), rows.branch.at(bytes16(first)), branch.bytes(), cudaMemcpyDeviceToDevice,
                                 bench.stream));
      CUDA_CHECK(cudaMemcpyAsync(stream_in.get(), rows.stream_view(c.sd, first, c.m).data, stream_bytes,
                                 cudaMemcpyDeviceToDevice, bench.stream));
      CUDA_CHECK(cudaGraphLaunch(exec.get(), bench.stream));
      if (sampled < samples.size() && samples[sampled] == replay) {
        CUDA_CHECK(cudaMemcpyAsync(history_out.at(bytes16(c.m) * sampled), out.get(), out.bytes(), cudaMemcpyDeviceToDevice,
                                   bench.stream));
        if (c.store)
          CUDA_CHECK(cudaMemcpyAsync(history_ns.at(bytes32(c.m) * sampled), ns.get(), ns.bytes(), cudaMemcpyDeviceToDevice,
                                     bench.stream));
        ++sampled;
      }
    }
    CUDA_CHECK(cudaStreamSynchronize(bench.stream));
    REQUIRE(sampled == samples.size());
    const gpu::RowCounterWords idle = gpu::row_counter_words(s.fused);  // reset by every replay's launch
    CHECK_MESSAGE((idle.rows == 0 && idle.done == 0), context << ": row counter after the replays: " << idle.rows << ", "
                                                              << idle.done);
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const std::int64_t first = (samples[i] % 2) * c.m;
      const std::string replay = context + " | replay " + std::to_string(samples[i]);
      expect_bits(replay, "out", bench.fetch_out(history_out.at(bytes16(c.m) * i), c.m), want.out_rows(first, c.m),
                  "the emulator", first);
      if (c.store)
        expect_bits(replay, "new_stream", bench.fetch_new_stream(history_ns.at(bytes32(c.m) * i), c.m),
                    want.new_stream_rows(first, c.m), "the emulator", first);
    }
  }
}

TEST_CASE("CUDA graph: the eager chain, and run() with its checks, captured and replayed") {
  const HostRows& host = realistic_rows();
  const DeviceRows rows(host);
  const NamedConstants k{"post-attention (stock)", post_attention(), true};
  Subject s(k, realistic_operands(k.constants));
  const std::int64_t m = s.fused.sm_count() + 1;
  const Bench bench(m);
  const Expected want = emulate(s, host, StreamDtype::f32, 2 * m);
  const DeviceBuffer branch(bytes16(m)), stream_in(bytes32(m));
  const TensorView branch_view{branch.get(), Dtype::bf16, {m, kH}};
  const TensorView stream_view{stream_in.get(), Dtype::f32, {m, kH}};
  s.eager.prepare(m, bench.stream);
  s.fused.prepare(s.fused.variant_for(m, StreamDtype::f32, true), bench.stream);
  CUDA_CHECK(gpu::test::prepare_kernels());
  for (Impl impl : {Impl::eager, Impl::fused}) {
    const Launch l{impl, true, std::nullopt};
    const std::string context = s.name + " | graph of " + (impl == Impl::eager ? "EagerChain::launch" : "DraftBoundary::run") +
                                ", m = " + std::to_string(m);
    Graph graph;
    {
      Capture capture(bench.stream, cudaStreamCaptureModeGlobal);
      CUDA_CHECK(gpu::test::launch_poison(bench.out.get(), bytes16(m + 1), bench.stream));
      CUDA_CHECK(gpu::test::launch_poison(bench.new_stream.get(), bytes32(m + 1), bench.stream));
      if (impl == Impl::eager) s.eager.launch(branch_view, stream_view, bench.outputs(m, true), bench.stream);
      else run_launch(s, l, branch_view, stream_view, bench.outputs(m, true), bench.stream);
      // run()'s checks query pointer attributes while the stream captures: they must not have
      // invalidated the capture.
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      CUDA_CHECK(cudaStreamIsCapturing(bench.stream, &status));
      CHECK_MESSAGE(status == cudaStreamCaptureStatusActive, context << ": the capture was invalidated");
      graph = Graph(capture.end());
    }
    const GraphExec exec(graph);
    for (int replay = 0; replay < 10; ++replay) {
      const std::int64_t first = (replay % 2) * m;
      CUDA_CHECK(cudaMemcpyAsync(branch.get(), rows.branch.at(bytes16(first)), branch.bytes(), cudaMemcpyDeviceToDevice,
                                 bench.stream));
      CUDA_CHECK(cudaMemcpyAsync(stream_in.get(), rows.stream_f32.at(bytes32(first)), stream_in.bytes(),
                                 cudaMemcpyDeviceToDevice, bench.stream));
      CUDA_CHECK(cudaGraphLaunch(exec.get(), bench.stream));
      CUDA_CHECK(cudaStreamSynchronize(bench.stream));
      const std::string replay_context = context + " | replay " + std::to_string(replay);
      const auto out = bench.fetch_out(bench.out.get(), m + 1);
      expect_bits(replay_context, "out", out.first(elements(m)), want.out_rows(first, m), "the emulator", first);
      expect_untouched(replay_context, "out", out.subspan(elements(m)));
      const auto ns = bench.fetch_new_stream(bench.new_stream.get(), m + 1);
      expect_bits(replay_context, "new_stream", ns.first(elements(m)), want.new_stream_rows(first, m), "the emulator", first);
      expect_untouched(replay_context, "new_stream", ns.subspan(elements(m)));
    }
  }
}
