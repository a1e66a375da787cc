#include "bench_measure.hpp"

#include "bench_bits.hpp"
#include "bench_kernels.hpp"

#include <boundary/gpu/cuda_check.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace boundary::bench {

namespace {

// Rotated buffer sets are sized so that one replay touches this many L2 capacities: a set
// written one replay ago is then long evicted when it is read again.
constexpr double kL2Multiple = 4.0;

// The least traffic a boundary can have: each input read once, each output written once, the
// gates and weights once per launch. branch BF16 + stream + new_stream F32 + out BF16.
double min_bytes(std::int64_t m, StreamDtype stream, std::size_t operands) {
  const double per_element = 2.0 + (stream == StreamDtype::f32 ? 4.0 : 2.0) + 4.0 + 2.0;
  return per_element * static_cast<double>(m) * kH + static_cast<double>(operands);
}

// What the eager chain moves: norm (branch in, y_b out), connection (y_b, stream in; new_stream,
// z out), norm (z in, out out); the gates and weights once each.
double eager_bytes(std::int64_t m, std::size_t operands) {
  const double per_element = (2 + 2) + (2 + 4 + 4 + 2) + (2 + 2);
  return per_element * static_cast<double>(m) * kH + static_cast<double>(operands);
}

// The all-reduce boundary's least traffic: R partials BF16 instead of the branch.
double all_reduce_min_bytes(std::int64_t m, int ranks, std::size_t operands) {
  return min_bytes(m, StreamDtype::f32, operands) + (2.0 * ranks - 2.0) * static_cast<double>(m) * kH;
}

// The variant the bench times as "dispatched" at m: v with the gates --gates forces.
gpu::Variant with_gates(gpu::Variant v, const Options& o) {
  if (o.gates != "auto") v.late_gates = o.gates == "late";
  return v;
}

int buffer_sets(std::int64_t m, const DeviceInfo& dev, double set_bytes) {
  if (m < kRotateFromRows) return 1;
  const auto needed = static_cast<int>(std::ceil(kL2Multiple * static_cast<double>(dev.l2_bytes) / set_bytes));
  return std::clamp(needed, 2, 64);
}

// Whole rotations per graph: the next replay's first launch then takes the set used longest ago,
// as every other launch does, instead of the one its predecessor just wrote.
Schedule schedule_for(const Options& o, int sets) {
  const int launches = (o.launches + sets - 1) / sets * sets;
  return {launches, o.replays, o.warmup};
}

// The stream in, out and new_stream out of a set, for the traffic kernel.
void set_traffic_outputs(const BufferSet& set, TrafficParams& t) {
  t.stream = static_cast<const float4*>(set.stream_f32.get());
  t.out = static_cast<uint4*>(set.out.get());
  t.new_stream = static_cast<float4*>(set.new_stream.get());
}

// The traffic kernel over m rows of each set in turn (the fused kernel's rotation).
Timing time_traffic(cudaStream_t s, const Schedule& sched, std::int64_t m, const std::vector<TrafficParams>& sets) {
  return time_graph(
      s, sched, [&](int i) { launch_traffic(sets[static_cast<std::size_t>(i) % sets.size()], m, s); },
      "traffic kernel");
}

AllReduceResult measure_all_reduce(const Bench& b, std::int64_t m) {
  AllReduceResult a;
  a.ranks = b.options.ranks;
  a.bytes = all_reduce_min_bytes(m, a.ranks, b.operands);
  a.sets = buffer_sets(m, b.dev, all_reduce_min_bytes(m, a.ranks, 0));
  const Schedule sched = schedule_for(b.options, a.sets);
  a.launches = sched.launches;
  std::vector<PartialSet> sets;
  for (int i = 0; i < a.sets; ++i) sets.push_back(make_partial_set(b.inputs, m, a.ranks));
  const gpu::Variant natural = with_gates(b.all_reduce.variant_for(m, StreamDtype::f32, true), b.options);
  a.layout = natural.layout;
  b.all_reduce.prepare(natural, b.stream);
  gpu::prepare_all_reduce(b.stream);
  check_all_reduce_bits(b.all_reduce, b.fused, sets[0], m, natural, b.stream);
  const cudaStream_t s = b.stream;
  auto set = [&](int i) -> const PartialSet& { return sets[static_cast<std::size_t>(i) % sets.size()]; };
  a.fused = time_graph(
      s, sched,
      [&](int i) { b.all_reduce.launch(set(i).views, set(i).base.stream_f32_view, set(i).base.outputs, s, natural); },
      "fused all-reduce boundary");
  a.chain = time_graph(
      s, sched, [&](int i) { launch_all_reduce_then_draft(b.fused, set(i), set(i).base.outputs, s); },
      "all-reduce kernel + DraftBoundary");
  const auto forced = [&](gpu::Layout layout, Timing& t, const char* what) {
    gpu::Variant v = natural;
    v.layout = layout;
    b.all_reduce.prepare(v, s);
    check_all_reduce_bits(b.all_reduce, b.fused, set(0), m, v, s);
    t = time_graph(
        s, sched, [&](int i) { b.all_reduce.launch(set(i).views, set(i).base.stream_f32_view, set(i).base.outputs, s, v); },
        what);
  };
  forced(gpu::Layout::cluster, a.cluster, "fused all-reduce, cluster layout");
  forced(gpu::Layout::pair, a.pair, "fused all-reduce, pair layout");
  forced(gpu::Layout::quad, a.quad, "fused all-reduce, quad layout");
  a.empty_cluster = time_graph(
      s, sched, [&](int) { launch_cluster_floor(ClusterFloor::empty, m, s); }, "empty cluster kernel");
  a.cluster_barriers = time_graph(
      s, sched, [&](int) { launch_cluster_floor(ClusterFloor::barriers, m, s); }, "cluster barriers kernel");
  std::vector<TrafficParams> traffic(sets.size());
  for (std::size_t i = 0; i < sets.size(); ++i) {
    for (int r = 0; r < a.ranks; ++r) traffic[i].partials[r] = static_cast<const uint4*>(sets[i].partials[r].get());
    traffic[i].ranks = a.ranks;
    set_traffic_outputs(sets[i].base, traffic[i]);
  }
  a.traffic = time_traffic(s, sched, m, traffic);
  return a;
}

// The SM copy of the boundary's tensors at m in both divisions, each checked first (a BF16
// stream must land in both halves of new_stream), timed on the same buffer sets as the boundary.
CopyFloor measure_boundary_copy(const Bench& b, const Schedule& sched, const std::vector<BufferSet>& sets,
                                std::int64_t m, StreamDtype stream) {
  const cudaStream_t s = b.stream;
  const auto copy = [&](Division d, const BufferSet& x) {
    const void* from = stream == StreamDtype::f32 ? x.stream_f32.get() : x.stream_bf16.get();
    launch_boundary_copy(d, stream,
                         {static_cast<const uint4*>(x.branch.get()), static_cast<uint4*>(x.out.get()),
                          static_cast<const uint4*>(from), static_cast<uint4*>(x.new_stream.get())},
                         m, b.chunk_counter, b.dev.sm_count, s);
  };
  const auto elements = static_cast<std::size_t>(m) * kH;
  const BufferSet& x = sets[0];
  std::vector<CopiedBytes> parts = {{x.branch.get(), x.out.get(), elements * 2}};
  if (stream == StreamDtype::f32) {
    parts.push_back({x.stream_f32.get(), x.new_stream.get(), elements * 4});
  } else {
    parts.push_back({x.stream_bf16.get(), x.new_stream.get(), elements * 2});
    unsigned char* second_half = static_cast<unsigned char*>(x.new_stream.get()) + elements * 2;
    parts.push_back({x.stream_bf16.get(), second_half, elements * 2});
  }
  const std::string what =
      std::string("SM copy of the boundary's bytes, ") + (stream == StreamDtype::f32 ? "F32" : "BF16") + " stream";
  for (Division d : {Division::grid_stride, Division::dynamic})
    check_copy([&] { copy(d, x); }, parts, d == Division::dynamic ? b.chunk_counter : nullptr, s,
               what + " at m = " + std::to_string(m) + ", " + division_name(d));
  const auto set = [&](int i) -> const BufferSet& { return sets[static_cast<std::size_t>(i) % sets.size()]; };
  CopyFloor f;
  f.grid_stride = time_graph(s, sched, [&](int i) { copy(Division::grid_stride, set(i)); }, what);
  f.dynamic = time_graph(s, sched, [&](int i) { copy(Division::dynamic, set(i)); }, what + ", chunks at run time");
  return f;
}

}  // namespace

CopyResult measure_copy(cudaStream_t s, const Options& o, const DeviceInfo& dev, unsigned* counter) {
  const auto bytes = static_cast<std::size_t>(o.copy_gib * (1ull << 30)) / 16 * 16;
  const gpu::DeviceBuffer src(bytes), dst(bytes);
  fill_pattern(src.get(), bytes, s);
  const auto sm_copy = [&](Division d) { launch_sm_copy(d, src.get(), dst.get(), bytes, counter, dev.sm_count, s); };
  for (Division d : {Division::grid_stride, Division::dynamic})
    check_copy([&] { sm_copy(d); }, {{src.get(), dst.get(), bytes}}, d == Division::dynamic ? counter : nullptr, s,
               std::string("SM copy, ") + division_name(d));
  const Schedule sched{1, std::max(10, std::min(o.replays, 30)), 3};  // ~1 ms each: few replays suffice
  const double moved = 2.0 * static_cast<double>(bytes);
  const auto timing = [&](const Timing& t) { return CopyTiming{t, moved / (t.median_us * 1e3), moved / (t.min_us * 1e3)}; };
  CopyResult r;
  r.bytes = bytes;
  r.sm = timing(time_graph(s, sched, [&](int) { sm_copy(Division::grid_stride); }, "SM copy"));
  r.sm_dynamic = timing(time_graph(s, sched, [&](int) { sm_copy(Division::dynamic); }, "SM copy, chunks at run time"));
  r.memcpy = timing(time_graph(
      s, sched,
      [&](int) {
        gpu::cuda_check(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
      },
      "device-to-device cudaMemcpyAsync"));
  return r;
}

RowResult measure_rows(const Bench& b, std::int64_t m) {
  RowResult r;
  r.m = m;
  r.sets = buffer_sets(m, b.dev, min_bytes(m, StreamDtype::f32, 0));
  const Schedule sched = schedule_for(b.options, r.sets);
  r.launches = sched.launches;
  r.bytes_f32 = min_bytes(m, StreamDtype::f32, b.operands);
  r.bytes_bf16 = min_bytes(m, StreamDtype::bf16, b.operands);
  r.bytes_eager = eager_bytes(m, b.operands);

  std::vector<BufferSet> sets;
  for (int i = 0; i < r.sets; ++i) sets.push_back(make_set(b.inputs, m));
  // Kernel attributes and scratch now: neither may be set up inside a capture.
  const gpu::Variant natural = with_gates(b.fused.variant_for(m, StreamDtype::f32, true), b.options);
  const gpu::Variant natural_bf16 = with_gates(b.fused.variant_for(m, StreamDtype::bf16, true), b.options);
  r.layout = natural.layout;
  r.placement = natural.placement;
  gpu::Variant cta = natural, cluster = natural, balanced = natural, pair = natural, quad = natural;
  cta.layout = gpu::Layout::cta;
  cluster.layout = gpu::Layout::cluster;
  cluster.placement = gpu::ClusterPlacement::spread;
  balanced.layout = gpu::Layout::cluster;
  balanced.placement = gpu::ClusterPlacement::balanced;
  pair.layout = gpu::Layout::pair;
  quad.layout = gpu::Layout::quad;
  for (const gpu::Variant& v : {cta, cluster, balanced, pair, quad}) b.fused.prepare(v, b.stream);
  b.fused.prepare(natural_bf16, b.stream);
  b.eager.prepare(m, b.stream);
  check_bits(b.fused, b.eager, sets[0], m, StreamDtype::f32, b.stream, natural);
  check_bits(b.fused, b.eager, sets[0], m, StreamDtype::bf16, b.stream, natural_bf16);
  for (const gpu::Variant& v : {cta, cluster, balanced, pair, quad})
    check_bits(b.fused, b.eager, sets[0], m, StreamDtype::f32, b.stream, v);

  const cudaStream_t s = b.stream;
  auto set = [&](int i) -> const BufferSet& { return sets[static_cast<std::size_t>(i) % sets.size()]; };
  const auto fused = [&](StreamDtype d, const gpu::Variant& v, const char* what) {
    return time_graph(
        s, sched, [&](int i) { b.fused.launch(set(i).branch_view, set(i).stream(d), set(i).outputs, s, v); }, what);
  };
  r.empty_plain = time_graph(s, sched, [&](int) { launch_empty(m, false, s); }, "empty kernel");
  r.empty_pdl = time_graph(s, sched, [&](int) { launch_empty(m, true, s); }, "empty kernel + PDL");
  r.fused_f32 = fused(StreamDtype::f32, natural, "fused, F32 stream");
  r.fused_bf16 = fused(StreamDtype::bf16, natural_bf16, "fused, BF16 stream");
  r.eager = time_graph(
      s, sched, [&](int i) { b.eager.launch(set(i).branch_view, set(i).stream_f32_view, set(i).outputs, s); },
      "eager chain");
  r.cta_f32 = fused(StreamDtype::f32, cta, "fused, cta layout");
  r.cluster_f32 = fused(StreamDtype::f32, cluster, "fused, cluster layout");
  r.cluster_balanced_f32 = fused(StreamDtype::f32, balanced, "fused, cluster layout placed balanced");
  r.pair_f32 = fused(StreamDtype::f32, pair, "fused, pair layout");
  r.quad_f32 = fused(StreamDtype::f32, quad, "fused, quad layout");
  std::vector<TrafficParams> traffic(sets.size());
  for (std::size_t i = 0; i < sets.size(); ++i) {
    traffic[i].partials[0] = static_cast<const uint4*>(sets[i].branch.get());
    traffic[i].ranks = 1;
    set_traffic_outputs(sets[i], traffic[i]);
  }
  r.traffic = time_traffic(s, sched, m, traffic);
  r.copy_f32 = measure_boundary_copy(b, sched, sets, m, StreamDtype::f32);
  r.copy_bf16 = measure_boundary_copy(b, sched, sets, m, StreamDtype::bf16);
  sets.clear();  // the all-reduce sets are bigger: free these first
  if (b.options.ranks > 0) r.all_reduce = measure_all_reduce(b, m);
  return r;
}

}  // namespace boundary::bench
