// The GPU tests (ctest label gpu). Contract sections 5, 6 and 8: the fused DraftBoundary kernel,
// the eager chain and the CPU emulator give the same bits, every element of `out` and
// `new_stream`, for both stock boundaries and every weight dtype / input-scale / fma-squares
// variant, realistic and edge rows, every m around the late-gates switch and every Variant;
// batch invariance. The same test program: the host API's refusals (test_gpu_host_api.cpp), the
// PDL chain and CUDA graph replays (test_gpu_launch_chains.cpp), the rows handed out
// (test_gpu_row_handout.cpp). Outputs are poisoned before every launch (gpu_test_bits.hpp).
#include "gpu_test_launches.hpp"

#include <boundary/results.hpp>

using namespace gpu_test;

// ================================================================ fused == eager == emulator

TEST_CASE("realistic rows: fused == eager chain == emulator, every constants set, stream dtype, m and variant") {
  const HostRows& host = realistic_rows();
  const DeviceRows rows(host);
  const Bench bench(kRows);
  for (const NamedConstants& k : realistic_constant_sets()) {
    Subject s(k, realistic_operands(k.constants));
    // m = 4096 for the stock boundaries only: more rows exercise scheduling, not arithmetic.
    std::vector<Step> steps = standard_steps(s.fused, k.stock ? kRows : 1000, 96);
    steps.push_back({1, 777, Coverage::full});
    check_steps(s, host, rows, steps, bench, "realistic rows");
  }
}

TEST_CASE("edge rows: NaN, Inf, -0.0, subnormals, overflowing sums, zero rows with eps 0, extreme gates") {
  const HostRows& host = edge_rows();
  const DeviceRows rows(host);
  const Bench bench(kRows);
  for (const NamedConstants& k : edge_constant_sets())
    for (Gates g : {Gates::realistic, Gates::small_extremes, Gates::huge_extremes}) {
      HostOperands ops = realistic_operands(k.constants);
      apply_gates(ops, g);
      Subject s(k, std::move(ops));
      const bool big = g == Gates::realistic && k.stock;
      std::vector<Step> steps;
      // Every pattern alone, through the whole variant matrix; then pairs across the wrap.
      for (std::int64_t r = 0; r < kEdgeKinds; ++r) steps.push_back({1, r, Coverage::full});
      steps.push_back({2, kEdgeKinds - 1, Coverage::full});
      for (const Step& step : standard_steps(s.fused, big ? kRows : 1000, 0))
        if (step.m > 1) steps.push_back(step);
      check_steps(s, host, rows, steps, bench, std::string("edge rows, ") + gates_name(g));
    }
}

namespace {

// One row through the emulator, intermediates included.
struct EmulatedRow {
  float s1 = 0, r1 = 0, s2 = 0, r2 = 0;
  std::vector<std::uint16_t> out = std::vector<std::uint16_t>(kH);
  std::vector<float> new_stream = std::vector<float>(kH);
};

EmulatedRow emulate_row(const Constants& k, const HostOperands& ops, const HostRows& h, std::int64_t row) {
  const ref::Boundary b(k, {ops.alpha.data(), ops.beta.data(), ops.post_weight.empty() ? nullptr : ops.post_weight.data(),
                            ops.pre_weight.empty() ? nullptr : ops.pre_weight.data()});
  ref::Inputs in;
  in.m = 1;
  in.branch = h.branch.data() + elements(row);
  in.stream = h.stream_f32.data() + elements(row);
  ref::Results r(1, ref::Results::Wanted::everything);
  b.run(in, r.outputs());
  return {r.post_row_sum[0], r.r1[0], r.pre_row_sum[0], r.r2[0], std::move(r.out), std::move(r.new_stream)};
}

bool all_of_bits(const std::vector<std::uint16_t>& v, std::uint16_t pattern) {
  return std::all_of(v.begin(), v.end(), [&](std::uint16_t x) { return x == pattern; });
}

}  // namespace

// The edge rows are worth as much as the regimes they reach: checked on the emulator's
// intermediates, so that a pattern that silently stopped overflowing (say) is caught.
TEST_CASE("edge rows reach the regimes they are named for (emulator intermediates)") {
  const HostRows& edges = edge_rows();
  const Constants ffn = post_ffn();
  const HostOperands ops = realistic_operands(ffn);
  const auto row = [&](const char* name) { return emulate_row(ffn, ops, edges, edge_row(name)); };
  constexpr std::uint32_t kInf = 0x7F800000u, kNan = 0x7FFFFFFFu;

  const EmulatedRow nan_branch = row("branch: one negative NaN");
  CHECK(bits_of(nan_branch.s1) == kNan);
  CHECK(all_of_bits(nan_branch.out, 0x7FFF));
  CHECK(bits_of(row("branch +-2^63").s1) == kInf);
  CHECK(bits_of(row("branch +-2^63").r1) == 0u);
  CHECK(bits_of(row("branch +-2^70").s1) == kInf);
  CHECK(bits_of(row("branch all at the BF16 maximum").s1) == kInf);
  CHECK(bits_of(row("stream +-2^63").s2) == kInf);
  const EmulatedRow stream_nan = row("stream: one signalling NaN");
  CHECK(bits_of(stream_nan.new_stream[123]) == kNan);
  CHECK(bits_of(stream_nan.new_stream[124]) != kNan);  // one element, not the row
  CHECK(all_of_bits(stream_nan.out, 0x7FFF));
  const EmulatedRow stream_inf = row("stream: +Inf and -Inf");
  CHECK(bits_of(stream_inf.s2) == kInf);
  CHECK(bits_of(stream_inf.r2) == 0u);
  const EmulatedRow wide = row("wide dynamic range");
  CHECK(std::isfinite(wide.s1));
  CHECK(wide.s1 > 0.0f);
  CHECK(std::isfinite(wide.s2));
  const EmulatedRow subnormal_stream = row("stream all FP32 subnormals");
  CHECK(std::any_of(subnormal_stream.new_stream.begin(), subnormal_stream.new_stream.end(),
                    [](float x) { return std::fpclassify(x) == FP_SUBNORMAL; }));
  const EmulatedRow negative_zero = row("branch and stream all -0.0");
  CHECK(bits_of(negative_zero.new_stream[0]) == 0x80000000u);  // a -0 result, not only -0 inputs

  // Squares of about 2^-140 are FP32 subnormals: an fma keeps bits a rounded product drops.
  Constants fma = ffn;
  fma.post.fma_squares = !ffn.post.fma_squares;
  const EmulatedRow tiny = row("around 2^-70");
  const EmulatedRow tiny_fma = emulate_row(fma, ops, edges, edge_row("around 2^-70"));
  CHECK(tiny.s1 != 0.0f);
  CHECK(bits_of(tiny.s1) != bits_of(tiny_fma.s1));

  // eps 0: an all-zero row is 0 * rsqrt(0) = 0 * Inf = NaN everywhere; BF16 subnormal squares
  // underflow to a zero row sum, whose rsqrt is Inf.
  const Constants eps0{unweighted(0.0, false), unweighted(0.0, false)};
  const HostOperands plain = realistic_operands(eps0);
  const EmulatedRow zero = emulate_row(eps0, plain, edges, edge_row("branch and stream all +0.0"));
  CHECK(bits_of(zero.r1) == kInf);
  CHECK(all_of_bits(zero.out, 0x7FFF));
  const EmulatedRow subnormal_branch = emulate_row(eps0, plain, edges, edge_row("branch all BF16 subnormals"));
  CHECK(bits_of(subnormal_branch.s1) == 0u);
  CHECK(bits_of(subnormal_branch.r1) == kInf);

  // Huge gates overflow the connection in their columns of an ordinary row.
  HostOperands huge = ops;
  apply_gates(huge, Gates::huge_extremes);
  const EmulatedRow gated = emulate_row(ffn, huge, edges, edge_row("realistic"));
  CHECK(std::any_of(gated.new_stream.begin(), gated.new_stream.end(), [](float x) { return std::isinf(x); }));
  CHECK(bits_of(gated.new_stream[0]) != kNan);
}

// ================================================================ what never changes bits

TEST_CASE("batch invariance: a row gives the same bits at any position in batches of any m") {
  const HostRows& host = realistic_rows();
  const HostRows& edges = edge_rows();
  const DeviceRows rows(host);
  const Bench bench(kRows);
  // A realistic row and edge rows whose bits depend most on the summation order.
  const std::int64_t edge_probes[] = {edge_row("wide dynamic range"), edge_row("around 2^-70"),
                                      edge_row("stream: one signalling NaN"), edge_row("subnormals sprinkled")};
  const NamedConstants sets[] = {{"post-ffn (stock)", post_ffn(), true},
                                 {"FP16 input scales with fma",
                                  {weighted(1e-8, WeightDtype::fp16, true, true), weighted(1e-5, WeightDtype::fp16, true, true)}}};
  for (const NamedConstants& k : sets) {
    Subject s(k, realistic_operands(k.constants));
    const int sm = s.fused.sm_count();
    for (StreamDtype sd : {StreamDtype::f32, StreamDtype::bf16}) {
      std::vector<std::pair<const HostRows*, std::int64_t>> probes = {{&host, 4000}};
      for (std::int64_t e : edge_probes) probes.push_back({&edges, e});
      for (const auto& [source, probe_row] : probes) {
        const std::string probe = source == &host ? "realistic row " + std::to_string(probe_row) : edge_label(probe_row);
        const Expected want = emulate(s, *source, sd, 1, probe_row);
        // The probe alone (m = 1 at row 0 of its own buffer): the GPU bits every placement must repeat.
        const DeviceRows alone_rows(slice(*source, probe_row, 1));
        bench.poison_rows(1);
        s.fused.run(alone_rows.branch_view(0, 1), alone_rows.stream_view(sd, 0, 1), bench.outputs(1, true), bench.stream);
        CUDA_CHECK(cudaStreamSynchronize(bench.stream));
        const std::string alone_context = s.name + " | " + probe + " alone";
        const std::vector<std::uint16_t> alone_out = [&] {
          const auto o = bench.fetch_out(bench.out.get(), 1);
          return std::vector<std::uint16_t>(o.begin(), o.end());
        }();
        const std::vector<float> alone_ns = [&] {
          const auto o = bench.fetch_new_stream(bench.new_stream.get(), 1);
          return std::vector<float>(o.begin(), o.end());
        }();
        expect_bits<std::uint16_t>(alone_context, "out", alone_out, want.out_rows(0, 1), "the emulator");
        expect_bits<float>(alone_context, "new_stream", alone_ns, want.new_stream_rows(0, 1), "the emulator");

        for (std::int64_t m : {std::int64_t{2}, std::int64_t{7}, std::int64_t{sm - 1}, std::int64_t{sm}, std::int64_t{sm + 1},
                               std::int64_t{1000}, kRows}) {
          const std::int64_t first = m + 17 <= kRows ? 17 : 0;
          for (std::int64_t position : std::set<std::int64_t>{0, m / 2, m - 1}) {
            rows.write_row(first + position, *source, probe_row);
            const Variant natural = s.fused.variant_for(m, sd, true);
            const Variant flipped{sd, true, !natural.late_gates, false, other_layout(natural.layout)};
            for (const Launch& l : {Launch{Impl::fused, true, std::nullopt}, Launch{Impl::fused, true, flipped},
                                    Launch{Impl::eager, true, std::nullopt}}) {
              const std::string context = s.name + " | " + probe + " at position " + std::to_string(position) + " of m = " +
                                          std::to_string(m) + " | " + describe(s, l, sd, m);
              bench.poison_rows(m);
              run_launch(s, l, rows.branch_view(first, m), rows.stream_view(sd, first, m), bench.outputs(m, true), bench.stream);
              CUDA_CHECK(cudaStreamSynchronize(bench.stream));
              const auto out = bench.fetch_out(bench.out.at(bytes16(position)), 1);
              expect_bits<std::uint16_t>(context, "out", out, alone_out, "the probe alone");
              expect_bits<std::uint16_t>(context, "out", out, want.out_rows(0, 1), "the emulator");
              const auto ns = bench.fetch_new_stream(bench.new_stream.at(bytes32(position)), 1);
              expect_bits<float>(context, "new_stream", ns, alone_ns, "the probe alone");
              expect_bits<float>(context, "new_stream", ns, want.new_stream_rows(0, 1), "the emulator");
            }
            rows.write_row(first + position, host, first + position);  // the realistic row back
          }
        }
      }
    }
  }
}

TEST_CASE("section 8: a BF16 stream and an F32 stream holding the same values give the same bits") {
  const HostRows& host = realistic_rows();
  constexpr std::int64_t n = 1000;
  HostRows same = slice(host, 0, n);  // then stream_f32 holds exactly the values of stream_bf16
  std::transform(same.stream_bf16.begin(), same.stream_bf16.end(), same.stream_f32.begin(), ref::bf16_to_f32);
  const DeviceRows rows(same);
  const Bench bench(n);
  for (const NamedConstants& k : {NamedConstants{"post-attention (stock)", post_attention(), true},
                                  NamedConstants{"post-ffn (stock)", post_ffn(), true}}) {
    Subject s(k, realistic_operands(k.constants));
    const Expected want = emulate(s, same, StreamDtype::bf16, n);
    for (std::int64_t m : {std::int64_t{133}, n})
      for (Impl impl : {Impl::fused, Impl::eager}) {
        const Launch l{impl, true, std::nullopt};
        std::vector<std::uint16_t> out_bf16;
        std::vector<float> ns_bf16;
        for (StreamDtype sd : {StreamDtype::bf16, StreamDtype::f32}) {
          const std::string context = s.name + " | m = " + std::to_string(m) + " | " + describe(s, l, sd, m);
          bench.poison_rows(m);
          run_launch(s, l, rows.branch_view(0, m), rows.stream_view(sd, 0, m), bench.outputs(m, true), bench.stream);
          CUDA_CHECK(cudaStreamSynchronize(bench.stream));
          const auto out = bench.fetch_out(bench.out.get(), m);
          expect_bits(context, "out", out, want.out_rows(0, m), "the emulator (BF16 stream)");
          if (sd == StreamDtype::bf16) out_bf16.assign(out.begin(), out.end());
          else expect_bits<std::uint16_t>(context, "out", out, out_bf16, "the BF16-stream launch");
          const auto ns = bench.fetch_new_stream(bench.new_stream.get(), m);
          expect_bits(context, "new_stream", ns, want.new_stream_rows(0, m), "the emulator (BF16 stream)");
          if (sd == StreamDtype::bf16) ns_bf16.assign(ns.begin(), ns.end());
          else expect_bits<float>(context, "new_stream", ns, ns_bf16, "the BF16-stream launch");
        }
      }
  }
}
