// The cluster layout of the fused boundary (contract sections 5 and 7): one row per cluster of 8
// CTAs of 128 threads, one 8-column fragment per thread in row_fragment's layout (CTA j holds
// reference warp j whole: its warp w, fragment w), the row sums through the cluster layer. It serves the all-reduce boundary (R rank partials,
// summed in rank order) and the DraftBoundary (R = 1: the branch is P_0, passed unchanged), where
// spreading a row over 8 SMs cuts the latency of small batches.
//
// One source, several builds, like draft_boundary_kernel.cuh: production, debug (Intermediates)
// and the planted-bug builds. Everything here has internal linkage.
#pragma once

#include "all_reduce_launch.hpp"

#include <boundary/device/bulk_copy.cuh>
#include <boundary/device/cluster_row_sum.cuh>
#include <boundary/device/fragment_stages.cuh>
#include <boundary/device/pdl_launch.cuh>
#include <boundary/gpu/diagnostics.hpp>

#include <type_traits>

namespace boundary::gpu::detail {

namespace {

using namespace boundary::dev;

inline constexpr int kClusterCtas = 8;                           // CTAs per row
inline constexpr int kClusterThreads = kRowThreads / kClusterCtas;  // threads per CTA, one fragment each

// What the production build writes besides out and new_stream: nothing.
struct NoIntermediates {};

// Rank r's 8 values at element offset `at` for r < ranks (1 with kOneRank: the kernel is built for
// R = 1, the DraftBoundary, which needs far fewer registers). Unrolled: a run-time index into the
// parameter array would copy it to local memory.
template <bool kOneRank>
__device__ __forceinline__ void load_branch_fragment(const AllReduceParams& a, std::size_t at, float (&x)[kVec]) {
  if constexpr (kOneRank) {
    unpack_bf16x8(load_row_16(a.partials[0] + at), x);  // one rank: P_0 unchanged
  } else {
    uint4 raw[kMaxRanks];
#pragma unroll
    for (int r = 0; r < kMaxRanks; ++r)
      if (r < a.ranks) raw[r] = load_row_16(a.partials[r] + at);
    dev::all_reduce(a.ranks, [&](int r) { return raw[r]; }, x);
  }
}

// The R-rank build's gates and weights as loaded, in shared memory: each thread copies its own
// columns' before the PDL wait (copy_16_to_shared, no register held while the R partials are in
// flight) and reads them once the partials are summed. [half][thread]: a warp's 16-byte reads
// are conflict-free. Held in registers across the partials' loads, they took the R-rank build to
// 92 registers, 5 CTAs an SM (a wave of at most 82 rows on an H100); without them it fits 8, one
// wave holds as many rows as the one-rank build's (124 spread, 132 balanced), and the all-reduce
// boundary at m = 132 took 6.60 us instead of 7.91 (docs/benchmarks.md, with what it costs at
// small m). The copies go through L1, where CTAs of other rows on the SM find the same columns:
// through L2 only (.cg) the build was 1.1x to 1.6x slower than the one before at every m.
struct SharedGates {
  uint4 alpha[2][kClusterThreads], beta[2][kClusterThreads];
  uint4 post_weight[2][kClusterThreads], pre_weight[2][kClusterThreads];
};
struct NoSharedGates {};  // the one-rank build keeps its gates in registers

__device__ __forceinline__ void copy_weight(const NormArgs& n, int c, uint4 (&w)[2][kClusterThreads]) {
  if (!has_weight(n)) return;
  if (n.kind == WeightKind::fp32) {
    copy_16_to_shared(&w[0][threadIdx.x], static_cast<const float*>(n.weight) + c);
    copy_16_to_shared(&w[1][threadIdx.x], static_cast<const float*>(n.weight) + c + 4);
  } else {
    copy_16_to_shared(&w[0][threadIdx.x], static_cast<const std::uint16_t*>(n.weight) + c);
  }
}

// What load_gates loads for the fragment at `column`, copied into sg (late: see gate_column).
__device__ __forceinline__ void copy_gates(const BoundaryParams& p, int column, bool late, SharedGates& sg) {
  const int c = gate_column(column, late);
  copy_16_to_shared(&sg.alpha[0][threadIdx.x], p.alpha + c);
  copy_16_to_shared(&sg.alpha[1][threadIdx.x], p.alpha + c + 4);
  copy_16_to_shared(&sg.beta[0][threadIdx.x], p.beta + c);
  copy_16_to_shared(&sg.beta[1][threadIdx.x], p.beta + c + 4);
  copy_weight(p.post, c, sg.post_weight);
  copy_weight(p.pre, c, sg.pre_weight);
  copies_commit();
}

__device__ __forceinline__ WeightFragment read_weight(const NormArgs& n, const uint4 (&w)[2][kClusterThreads]) {
  return {w[0][threadIdx.x], n.kind == WeightKind::fp32 ? w[1][threadIdx.x] : uint4{}};
}

// The gates copy_gates copied, once landed, into g as load_gates would have loaded them.
__device__ __forceinline__ void read_gates(const BoundaryParams& p, const SharedGates& sg, Gates<1>& g) {
  copies_wait_all();
  unpack_f32x8(sg.alpha[0][threadIdx.x], sg.alpha[1][threadIdx.x], g.alpha[0]);
  unpack_f32x8(sg.beta[0][threadIdx.x], sg.beta[1][threadIdx.x], g.beta[0]);
  if (has_weight(p.post)) gamma(p.post, read_weight(p.post, sg.post_weight), g.post_gamma[0]);
  if (has_weight(p.pre)) gamma(p.pre, read_weight(p.pre, sg.pre_weight), g.pre_gamma[0]);
}

__device__ __forceinline__ void store_cluster_row_value(float* p, std::int64_t row, float v) {
  if (p && blockIdx.x % kClusterCtas == 0 && threadIdx.x == 0) p[row] = v;
}

// Registers capped for 8 resident CTAs per SM (64 a thread); ptxas spills nothing in either
// build (the R-rank build's gates wait in shared memory: SharedGates).
template <bool kStreamF32, bool kStore, bool kOneRank, class Intermediates>
__global__ void __cluster_dims__(kClusterCtas, 1, 1) __launch_bounds__(kClusterThreads, 8)
    cluster_boundary_kernel(const AllReduceParams a, const Intermediates d) {
  constexpr bool kDebug = !std::is_same_v<Intermediates, NoIntermediates>;
  __shared__ ClusterSumScratch<kClusterCtas> post_sum, pre_sum;
  if (threadIdx.x == 0) cluster_sum_init(post_sum), cluster_sum_init(pre_sum);
  cluster_arrive_started();
  const BoundaryParams& p = a.boundary;
  const std::int64_t row = blockIdx.x / kClusterCtas;
  const int column[1] = {kVec * row_fragment<kClusterCtas>(static_cast<int>(blockIdx.x % kClusterCtas),
                                                            static_cast<int>(threadIdx.x))};
  const std::size_t at = static_cast<std::size_t>(row) * kH + column[0];
  Gates<1> g;
  __shared__ std::conditional_t<kOneRank, NoSharedGates, SharedGates> shared_gates;
  const auto fetch_gates = [&](bool late) {
    if constexpr (kOneRank) load_gates(p.alpha, p.beta, p.post, p.pre, column, late, g);
    else copy_gates(p, column[0], late, shared_gates);
  };
  if (!p.late_gates) fetch_gates(false);  // overlaps the previous grid's tail
  pdl_wait();
  pdl_launch_dependents();
  if (p.late_gates) fetch_gates(true);
  float x[1][kVec], s[1][kVec];
  load_branch_fragment<kOneRank>(a, at, x[0]);
  if constexpr (!kOneRank) {
    read_gates(p, shared_gates, g);  // the partials summed: their registers free
    load_stream<kStreamF32>(p.stream, at, s[0]);
  }
  cluster_wait();  // every CTA of the cluster has started: its shared memory may be stored into

  const RowNorm post = post_norm(p.post, gains_in_registers(g.post_gamma), x, [&](float t) {
    // One rank: the stream's loads wait for this thread's branch (t is its chunk pairs' sum), so
    // that the DRAM serves the rows' branches first and the post sums overlap the streams'
    // arrival: on an H100 0.97x the time at m = 1, 0.91x at 32, 0.88x at 96, 0.92x at 132
    // (docs/benchmarks.md). With R partials the stream is a fifth of a row's reads, and waiting
    // for them made no gain.
    if constexpr (kOneRank) load_stream<kStreamF32>(p.stream, at + zero_after(t), s[0]);
    return cluster_row_sum<kClusterCtas>(t, post_sum, 0);
  });
  if constexpr (kDebug) {
    store_cluster_row_value(d.post_row_sum, row, post.s);
    store_cluster_row_value(d.r1, row, post.r);
    if (d.y_b) *reinterpret_cast<uint4*>(d.y_b + at) = pack_bf16x8(x[0]);
  }
  connection(g, x, s);
  if constexpr (kStore) store_warp_f32x8(p.new_stream + at, s[0]);
  if constexpr (kDebug) {
    if (d.res) store_warp_f32x8(d.res + at, s[0]);
    if (d.z) *reinterpret_cast<uint4*>(d.z + at) = pack_bf16x8(x[0]);
  }
  uint4 out[1];
  const RowNorm pre = pre_norm(p.pre, gains_in_registers(g.pre_gamma), x,
                               [&](float t) { return cluster_row_sum<kClusterCtas>(t, pre_sum, 0); }, out);
  if constexpr (kDebug) {
    store_cluster_row_value(d.pre_row_sum, row, pre.s);
    store_cluster_row_value(d.r2, row, pre.r);
  }
  *reinterpret_cast<uint4*>(p.out + at) = out[0];
}

// The instantiation for a variant's stream dtype and storage: pick(bool_constant<kStreamF32>,
// bool_constant<kStore>).
template <class Pick>
auto for_variant(const Variant& v, Pick pick) {
  using T = std::true_type;
  using F = std::false_type;
  if (v.stream == StreamDtype::f32) return v.store_stream ? pick(T{}, T{}) : pick(T{}, F{});
  return v.store_stream ? pick(F{}, T{}) : pick(F{}, F{});
}

template <bool kOneRank, class Intermediates>
auto cluster_kernel_for(const Variant& v) {
  return for_variant(v, [](auto f32, auto store) {
    return cluster_boundary_kernel<decltype(f32)::value, decltype(store)::value, kOneRank, Intermediates>;
  });
}

// The launch's cluster scheduling policy for a placement, named explicitly (not the driver's
// default, which placed clusters as spread does on an H100).
inline cudaClusterSchedulingPolicy scheduling_policy(ClusterPlacement p) {
  return p == ClusterPlacement::balanced ? cudaClusterSchedulingPolicyLoadBalancing : cudaClusterSchedulingPolicySpread;
}

// m rows of a (R = a.ranks partials; 1 with kOneRank), one cluster each, with v's gates, PDL and
// placement.
template <bool kOneRank, class Intermediates>
cudaError_t launch_cluster_rows(const AllReduceParams& a, std::int64_t m, const Variant& v, cudaStream_t s,
                                const Intermediates& d) {
  AllReduceParams q = a;
  q.boundary.late_gates = v.late_gates;
  return launch_pdl_placed(cluster_kernel_for<kOneRank, Intermediates>(v), dim3(static_cast<unsigned>(m * kClusterCtas)),
                           dim3(kClusterThreads), 1, 0, scheduling_policy(v.placement), v.pdl, s, q, d);
}

// Loads a variant's kernel now, not lazily at its first launch (which may be inside a capture).
template <bool kOneRank, class Intermediates>
cudaError_t prepare_cluster_rows(const Variant& v) {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, cluster_kernel_for<kOneRank, Intermediates>(v));
}

// Clusters resident at once (the width of one wave), F32 stream stored, so placed.
template <bool kOneRank>
cudaError_t resident_clusters(ClusterPlacement placement, int* clusters) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(kClusterCtas);
  config.blockDim = dim3(kClusterThreads);
  cudaLaunchAttribute policy = placement_attribute(scheduling_policy(placement));
  config.attrs = &policy;
  config.numAttrs = 1;
  return cudaOccupancyMaxActiveClusters(clusters, cluster_kernel_for<kOneRank, NoIntermediates>(Variant{}), &config);
}

// The DraftBoundary's branch as the one rank partial of the cluster kernel.
inline AllReduceParams single_rank(const BoundaryParams& p) {
  AllReduceParams a{};
  a.boundary = p;
  a.partials[0] = p.branch;
  a.ranks = 1;
  return a;
}

}  // namespace

}  // namespace boundary::gpu::detail
