// The GPU tests of the all-reduce boundary (ctest label gpu), contract section 7: the fused
// all-reduce boundary (its pair, quad and cluster layouts) == the all-reduce kernel + the eager chain
// == the all-reduce kernel + the DraftBoundary == the emulator, bit for bit, every element of
// out and new_stream (and of the all-reduced branch), for R in {1, 2, 3, 8}; partials whose FP32
// sum depends on the rank order; edge rows on each rank; decode chains under PDL replayed from a
// CUDA graph; the host API's refusals.
#include "gpu_test_launches.hpp"

#include <boundary/gpu/all_reduce_boundary.hpp>
#include <boundary/results.hpp>

using namespace gpu_test;

namespace {

constexpr int kRankCounts[] = {1, 2, 3, 8};
constexpr std::uint64_t kPartialSeed = 20261203;
constexpr std::int64_t kMinOrderSensitive = 1000;  // of 33.5 M elements; 1,610 to 7,959 seen on the H200

// R rank partials of n rows, and the stream the boundary connects them to.
struct HostPartials {
  int ranks = 0;
  HostRows rows;  // its stream, and its label; rows.branch is unused
  std::vector<std::vector<std::uint16_t>> partials;  // [R][n * H]

  std::vector<const std::uint16_t*> pointers(std::int64_t first) const {
    std::vector<const std::uint16_t*> p;
    for (const auto& v : partials) p.push_back(v.data() + elements(first));
    return p;
  }
};

// Rank r of row i: generate_partials' values (exponents spread over +-20, as vLLM's all-reduce
// invariance test makes them), and with `edge` an edge row's pattern on rank i % R.
HostPartials make_partials(int ranks, bool edge) {
  const HostRows& base = edge ? edge_rows() : realistic_rows();
  HostPartials h{ranks, slice(base, 0, base.n), {}};
  h.rows.label = base.label;
  const st::Tensor spread = generate_partials(base.n, ranks, kPartialSeed + static_cast<std::uint64_t>(ranks) * 2 + (edge ? 1 : 0));
  for (int r = 0; r < ranks; ++r) {
    const std::uint16_t* p = spread.data<std::uint16_t>() + static_cast<std::size_t>(r) * elements(base.n);
    h.partials.emplace_back(p, p + elements(base.n));
  }
  if (edge)
    for (std::int64_t row = 0; row < base.n; ++row)
      std::copy_n(&base.branch[elements(row)], kH, &h.partials[static_cast<std::size_t>(row % ranks)][elements(row)]);
  return h;
}

// Elements whose all-reduce in reverse rank order gives other bits than in rank order: the
// order-sensitive sums the data must hold, or a kernel summing in the wrong order could pass.
std::int64_t order_sensitive_elements(const HostPartials& h) {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < elements(h.rows.n); ++i) {
    float forward = ref::bf16_to_f32(h.partials[0][i]);
    float backward = ref::bf16_to_f32(h.partials.back()[i]);
    for (int r = 1; r < h.ranks; ++r) {
      forward = ref::add_rn(forward, ref::bf16_to_f32(h.partials[static_cast<std::size_t>(r)][i]));
      backward = ref::add_rn(backward, ref::bf16_to_f32(h.partials[static_cast<std::size_t>(h.ranks - 1 - r)][i]));
    }
    n += ref::f32_to_bf16_rn(forward) != ref::f32_to_bf16_rn(backward);
  }
  return n;
}

struct DevicePartials {
  explicit DevicePartials(const HostPartials& h) : rows(h.rows) {
    for (const auto& p : h.partials) buffers.push_back(upload(p.data(), p.size()));
  }
  std::vector<TensorView> views(std::int64_t first, std::int64_t m) const {
    REQUIRE(first + m <= rows.n);
    std::vector<TensorView> v;
    for (const DeviceBuffer& b : buffers) v.push_back({b.at(bytes16(first)), Dtype::bf16, {m, kH}});
    return v;
  }
  DeviceRows rows;
  std::vector<DeviceBuffer> buffers;
};

// The emulator on the partials: out, new_stream and the all-reduced branch of `rows` rows.
struct ExpectedAllReduce {
  Expected boundary;
  std::vector<std::uint16_t> branch;
};

ExpectedAllReduce emulate_all_reduce(const Subject& s, const HostPartials& h, StreamDtype sd, std::int64_t rows) {
  const std::vector<const std::uint16_t*> partials = h.pointers(0);
  ref::Inputs in;
  in.m = rows;
  in.partials = partials;
  in.stream_dtype = sd;
  in.stream = sd == StreamDtype::f32 ? static_cast<const void*>(h.rows.stream_f32.data()) : h.rows.stream_bf16.data();
  ref::Results r(rows, ref::Results::Wanted::everything);
  s.emulator.run(in, r.outputs(), host_threads());
  return {{rows, std::move(r.out), std::move(r.new_stream)}, std::move(r.branch)};
}

enum class Path { fused, then_eager, then_draft };

const char* path_name(Path p) {
  return p == Path::fused ? "fused all-reduce boundary"
         : p == Path::then_eager ? "all-reduce kernel + eager chain"
                                 : "all-reduce kernel + DraftBoundary";
}

// The three implementations of one all-reduce boundary.
struct AllReduceSubject {
  explicit AllReduceSubject(Subject& s) : base(s), fused(s.constants, s.operands) {}
  Subject& base;
  gpu::AllReduceBoundary fused;
};

// One launch of m rows from data row `first` through `path`, then every element against the
// emulator and the guard row untouched; the eager paths' all-reduced branch too.
void check_path(AllReduceSubject& s, const DevicePartials& d, const ExpectedAllReduce& want, StreamDtype sd,
                std::int64_t m, std::int64_t first, Path path, bool store, std::optional<Variant> v, const Bench& bench,
                const DeviceBuffer& branch, const std::string& data_name) {
  const std::string context = s.base.name + " | " + data_name + " | R = " + std::to_string(d.buffers.size()) +
                              " | m = " + std::to_string(m) + " from row " + std::to_string(first) + " | " +
                              path_name(path) + (v ? " " + describe(*v) : std::string(store ? " [default, stored]" : " [default, not stored]"));
  bench.poison_rows(m);
  const std::vector<TensorView> partials = d.views(first, m);
  const TensorView stream = d.rows.stream_view(sd, first, m);
  const TensorView branch_view{branch.get(), Dtype::bf16, {m, kH}};
  if (path == Path::fused) {
    s.fused.run(partials, stream, bench.outputs(m, store), bench.stream, v);
  } else {
    poison(branch.get(), bytes16(m), bench.stream);
    gpu::all_reduce(partials, branch_view, bench.stream);
    if (path == Path::then_eager) s.base.eager.run(branch_view, stream, bench.outputs(m, store), bench.stream);
    else s.base.fused.run(branch_view, stream, bench.outputs(m, store), bench.stream);
  }
  CUDA_CHECK(cudaStreamSynchronize(bench.stream));
  if (path != Path::fused) {
    const auto got = bench.fetch_out(branch.get(), m);
    expect_bits(context, "branch", got, std::span<const std::uint16_t>(want.branch).subspan(elements(first), elements(m)),
                "the emulator", first);
  }
  const auto out = bench.fetch_out(bench.out.get(), m + 1);
  expect_bits(context, "out", out.first(elements(m)), want.boundary.out_rows(first, m), "the emulator", first);
  expect_untouched(context, "out", out.subspan(elements(m)));
  if (!store) return;
  const auto ns = bench.fetch_new_stream(bench.new_stream.get(), m + 1);
  expect_bits(context, "new_stream", ns.first(elements(m)), want.boundary.new_stream_rows(first, m), "the emulator", first);
  expect_untouched(context, "new_stream", ns.subspan(elements(m)));
}

// Every path, both stream dtypes, the m of the issue and both waves of the R-rank cluster build
// (the row before the spread wave's last, that last and the next, the balanced wave's last and
// the next: where the dispatch places balanced, and where it stops); the full variant matrix of
// the fused kernel at m = 1 and just past the spread wave.
void check_all_paths(AllReduceSubject& s, const HostPartials& h, std::int64_t max_m, const Bench& bench,
                     const std::string& data_name) {
  const DevicePartials d(h);
  const DeviceBuffer branch(bytes16(kRows));
  const int wave = s.fused.max_active_clusters();
  const int balanced = s.fused.max_active_clusters(gpu::ClusterPlacement::balanced);
  std::set<std::int64_t> ms = {1, 131, 132, 133, wave - 1, wave, wave + 1, balanced, balanced + 1, kRows};
  for (StreamDtype sd : {StreamDtype::f32, StreamDtype::bf16}) {
    const std::int64_t rows = std::min<std::int64_t>(max_m, kRows);
    const ExpectedAllReduce want = emulate_all_reduce(s.base, h, sd, rows);
    for (std::int64_t m : ms) {
      if (m < 1 || m > rows) continue;
      const Variant natural = s.fused.variant_for(m, sd, true);
      CHECK_FALSE(natural.late_gates);  // early gates at every m
      // Placed by cluster_placement on the R-rank build's waves (the rule itself, on written-out
      // waves, is test_dispatch's; docs/kernels.md).
      CHECK_MESSAGE(natural.placement == gpu::cluster_placement(m, natural.layout, s.fused.cluster_waves()),
                    "m = " << m << ": " << describe(natural));
      const std::int64_t first = m == 1 ? 7 : 0;
      for (Path p : {Path::fused, Path::then_eager, Path::then_draft})
        for (bool store : {true, false}) check_path(s, d, want, sd, m, first, p, store, std::nullopt, bench, branch, data_name);
      if (m == kRows) {
        // The quad both ways at the largest m, whichever this device's thresholds dispatch: rows
        // divided statically (0: never handed out) and handed out (above 1 row a resident cluster).
        const gpu::HandoutThresholds device = s.fused.handout_thresholds();
        for (std::int64_t quad : {std::int64_t{0}, std::int64_t{1}}) {
          s.fused.set_handout_thresholds({device.cta_f32, device.cta_bf16, quad});
          for (bool store : {true, false})
            check_path(s, d, want, sd, m, first, Path::fused, store, std::nullopt, bench, branch,
                       data_name + " | quad rows handed out above " + std::to_string(quad) + " a cluster (0: never)");
        }
        s.fused.set_handout_thresholds(device);
      }
      if (m != 1 && m != wave + 1) continue;
      for (gpu::Layout layout : {gpu::Layout::cluster, gpu::Layout::pair, gpu::Layout::quad})
        for (gpu::ClusterPlacement placement : {gpu::ClusterPlacement::spread, gpu::ClusterPlacement::balanced}) {
          if (layout != gpu::Layout::cluster && placement == gpu::ClusterPlacement::balanced) continue;
          for (bool store : {true, false})
            for (bool late : {false, true})
              for (bool pdl : {false, true})
                check_path(s, d, want, sd, m, first, Path::fused, store, Variant{sd, store, late, pdl, layout, placement},
                           bench, branch, data_name);
        }
    }
  }
}

}  // namespace

TEST_CASE("all-reduce boundary: fused == all-reduce + eager == all-reduce + DraftBoundary == emulator, R 1, 2, 3, 8") {
  const Bench bench(kRows);
  for (int ranks : kRankCounts)
    for (bool edge : {false, true}) {
      const HostPartials h = make_partials(ranks, edge);
      if (ranks >= 3) {
        // Two ranks commute (a + b == b + a); from three on, the data must make order matter. The
        // largest of the spread values dominates most sums: about 1 element in 10^4 is order-sensitive.
        const std::int64_t sensitive = order_sensitive_elements(h);
        INFO("R = " << ranks << std::string(edge ? ", edge rows" : ", spread partials"));
        CHECK(sensitive >= kMinOrderSensitive);
      }
      for (const NamedConstants& k : edge ? edge_constant_sets() : realistic_constant_sets()) {
        // Every weight dtype x scale x fma set on every R; 4096 rows for the stock boundaries only.
        if (!k.stock && ranks != 3 && ranks != 8) continue;
        Subject base(k, realistic_operands(k.constants));
        AllReduceSubject s(base);
        check_all_paths(s, h, k.stock ? kRows : 133, bench,
                        std::string(edge ? "edge rows on rank row % R" : "partials spread over 2^-20 .. 2^20"));
      }
    }
}

TEST_CASE("all-reduce boundary: a decode chain under PDL (each step's stream is the last one's new_stream), graph-replayed") {
  constexpr int kSteps = 8, kReplays = 100;
  const Bench bench(kRows);
  Subject base({"post-ffn (stock)", post_ffn(), true}, realistic_operands(post_ffn()));
  AllReduceSubject s(base);
  const HostPartials h = make_partials(kMaxRanks, false);
  const DevicePartials d(h);
  for (std::int64_t m : {std::int64_t{1}, std::int64_t{132}}) {
    // The emulator's chain: step i reads partial rows [i m, (i + 1) m) and the previous step's new stream.
    std::vector<float> stream(h.rows.stream_f32.begin(), h.rows.stream_f32.begin() + static_cast<std::ptrdiff_t>(elements(m)));
    std::vector<std::uint16_t> want_out(elements(m));
    for (int step = 0; step < kSteps; ++step) {
      std::vector<float> next(elements(m));
      const std::vector<const std::uint16_t*> partials = h.pointers(m * step);
      ref::Inputs in;
      in.m = m;
      in.partials = partials;
      in.stream = stream.data();
      ref::Outputs o;
      o.out = want_out.data();
      o.new_stream = next.data();
      base.emulator.run(in, o, host_threads());
      stream = std::move(next);
    }
    // Two stream buffers, ping-ponged: step i writes the one step i + 1 reads.
    const DeviceBuffer streams[2] = {DeviceBuffer(bytes32(m)), DeviceBuffer(bytes32(m))};
    const auto view = [&](int i) { return TensorView{streams[i % 2].get(), Dtype::f32, {m, kH}}; };
    const Stream cuda_stream(cudaStreamNonBlocking);
    s.fused.prepare(s.fused.variant_for(m, StreamDtype::f32, true), cuda_stream);
    Capture capture(cuda_stream, cudaStreamCaptureModeThreadLocal);
    for (int step = 0; step < kSteps; ++step)
      s.fused.launch(d.views(m * step, m), view(step), {TensorView{bench.out.get(), Dtype::bf16, {m, kH}}, view(step + 1)},
                     cuda_stream);
    const Graph graph(capture.end());
    const GraphExec exec(graph);
    for (int replay = 0; replay < kReplays; ++replay) {
      CUDA_CHECK(cudaMemcpyAsync(streams[0].get(), h.rows.stream_f32.data(), bytes32(m), cudaMemcpyHostToDevice, cuda_stream));
      poison(bench.out.get(), bytes16(m), cuda_stream);
      CUDA_CHECK(cudaGraphLaunch(exec.get(), cuda_stream));
      CUDA_CHECK(cudaStreamSynchronize(cuda_stream));
      if (replay % 10 != 9) continue;
      const std::string context = "decode chain m = " + std::to_string(m) + ", replay " + std::to_string(replay);
      std::vector<std::uint16_t> got_out(elements(m));
      std::vector<float> got_stream(elements(m));
      CUDA_CHECK(cudaMemcpy(got_out.data(), bench.out.get(), bytes16(m), cudaMemcpyDeviceToHost));
      CUDA_CHECK(cudaMemcpy(got_stream.data(), streams[kSteps % 2].get(), bytes32(m), cudaMemcpyDeviceToHost));
      expect_bits<std::uint16_t>(context, "out", got_out, want_out, "the emulator's chain");
      expect_bits<float>(context, "new_stream", got_stream, stream, "the emulator's chain");
    }
  }
}

TEST_CASE("all-reduce host API: partials refused by count, shape, dtype, alignment, naming the rank") {
  Subject base({"post-attention (stock)", post_attention(), true}, realistic_operands(post_attention()));
  AllReduceSubject s(base);
  constexpr std::int64_t m = 2;
  const DeviceBuffer p(bytes16(m) * 9 + 64), stream(bytes32(m)), out(bytes16(m));
  const auto rank = [&](int r) { return TensorView{p.at(bytes16(m) * static_cast<std::size_t>(r)), Dtype::bf16, {m, kH}}; };
  const TensorView sv{stream.get(), Dtype::f32, {m, kH}};
  const gpu::Outputs outputs{TensorView{out.get(), Dtype::bf16, {m, kH}}, TensorView{nullptr, Dtype::f32, {m, kH}}};
  struct Case {
    const char* what;
    std::vector<TensorView> partials;
    const char* needle;
  };
  std::vector<TensorView> nine, shape, dtype, aligned, rows;
  for (int r = 0; r < 9; ++r) nine.push_back(rank(r));
  for (int r = 0; r < 3; ++r) shape.push_back(rank(r)), dtype.push_back(rank(r)), aligned.push_back(rank(r)), rows.push_back(rank(r));
  shape[2].shape = {m, kH / 2};
  dtype[1].dtype = Dtype::f16;
  aligned[2].data = p.at(bytes16(m) * 2 + 2);
  rows[1].shape = {m + 1, kH};
  const Case cases[] = {{"no partials", {}, "0 given, expected 1 to 8"},
                        {"nine partials", nine, "9 given, expected 1 to 8"},
                        {"a rank's shape", shape, "'partials[2]' has shape [2, 4096]"},
                        {"a rank's dtype", dtype, "'partials[1]' has dtype F16"},
                        {"a rank's alignment", aligned, "'partials[2]' is not 16-byte aligned"},
                        {"a rank's row count", rows, "'partials[1]' has shape [3, 8192]"}};
  const Stream cuda_stream;
  for (const Case& c : cases) {
    INFO(c.what);
    CHECK_FALSE(s.fused.takes(c.partials, sv));
    CHECK_THROWS_WITH_AS(s.fused.run(c.partials, sv, outputs, cuda_stream), doctest::Contains(c.needle), InputError);
    CHECK_THROWS_WITH_AS(gpu::all_reduce(c.partials, outputs.out, cuda_stream), doctest::Contains(c.needle), InputError);
  }
  const std::vector<TensorView> good = {rank(0), rank(1)};
  CHECK(s.fused.takes(good, sv));
  const TensorView short_stream{stream.get(), Dtype::f32, {m - 1, kH}};
  CHECK_FALSE(s.fused.takes(good, short_stream));
  CHECK_THROWS_WITH_AS(s.fused.run(good, short_stream, outputs, cuda_stream), doctest::Contains("'stream' has shape [1, 8192]"),
                       InputError);
  // The cta layout does not exist for the all-reduce boundary: a clear refusal, not a launch error.
  Variant cta = s.fused.variant_for(m, StreamDtype::f32, false);
  cta.layout = gpu::Layout::cta;
  CHECK_THROWS_WITH_AS(s.fused.run(good, sv, outputs, cuda_stream, cta), doctest::Contains("no cta layout"), InputError);
  CHECK_THROWS_WITH_AS(s.fused.prepare(cta), doctest::Contains("no cta layout"), InputError);
  // prepare() during a capture of its stream is refused, as DraftBoundary's is.
  const Stream capturing(cudaStreamNonBlocking);
  Capture capture(capturing, cudaStreamCaptureModeThreadLocal);
  CHECK_THROWS_WITH_AS(s.fused.prepare(s.fused.variant_for(m, StreamDtype::f32, false), capturing),
                       doctest::Contains("during a CUDA graph capture"), InputError);
  const Graph graph(capture.end());
}
