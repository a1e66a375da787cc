// The all-reduce boundary's kernels (contract section 7): the eager one-shot all-reduce and the
// fused all-reduce boundary, a cluster of 8 CTAs of 128 threads per row, one 8-column fragment
// per thread (CTA j, thread u: columns 1024 j + 8 u), the row sums through the cluster layer.
#include "all_reduce_launch.hpp"

#include <boundary/device/cluster_row_sum.cuh>
#include <boundary/device/fragment_stages.cuh>
#include <boundary/device/pdl_launch.cuh>

namespace boundary::gpu::detail {

namespace {

using namespace boundary::dev;

// Rank r's 8 values at element offset `at`; ranks beyond `ranks` are not read.
__device__ __forceinline__ void load_partials(const AllReduceParams& a, std::size_t at, uint4 (&raw)[kMaxRanks]) {
#pragma unroll
  for (int r = 0; r < kMaxRanks; ++r)
    if (r < a.ranks) raw[r] = *reinterpret_cast<const uint4*>(a.partials[r] + at);
}

// One thread per 8 columns of one row.
__global__ void __launch_bounds__(kThreads) all_reduce_kernel(const AllReduceParams a, std::uint16_t* branch,
                                                              std::int64_t groups) {
  const std::int64_t gidx = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (gidx >= groups) return;
  const std::size_t at = static_cast<std::size_t>(gidx) * kVec;
  uint4 raw[kMaxRanks];
  float x[kVec];
  load_partials(a, at, raw);
  all_reduce_fragment(raw, a.ranks, x);
  // One rank is passed unchanged: a repacking would canonicalize its NaN payloads.
  *reinterpret_cast<uint4*>(branch + at) = a.ranks == 1 ? raw[0] : pack_bf16x8(x);
}

template <bool kStreamF32, bool kStore>
__global__ void __cluster_dims__(kClusterCtas, 1, 1) __launch_bounds__(kClusterThreads)
    all_reduce_boundary_kernel(const AllReduceParams a) {
  __shared__ ClusterSumScratch post_sum, pre_sum;
  const BoundaryParams& p = a.boundary;
  const int column[1] = {1024 * static_cast<int>(blockIdx.x % kClusterCtas) + kVec * static_cast<int>(threadIdx.x)};
  const std::size_t at = static_cast<std::size_t>(blockIdx.x / kClusterCtas) * kH + column[0];
  Gates<1> g;
  if (!p.late_gates) load_gates(p.alpha, p.beta, p.post, p.pre, column, false, g);  // overlaps the previous grid's tail
  pdl_wait();
  pdl_launch_dependents();
  if (p.late_gates) load_gates(p.alpha, p.beta, p.post, p.pre, column, true, g);

  uint4 raw[kMaxRanks];
  float x[1][kVec], s[1][kVec];
  load_partials(a, at, raw);
  load_stream<kStreamF32>(p.stream, at, s[0]);
  all_reduce_fragment(raw, a.ranks, x[0]);

  norm_fragments(p.post, g.post_gamma, x, [&](float t) { return cluster_row_sum(t, post_sum); }, post_factor);
  connect_fragments(g, x, s);
  if constexpr (kStore) store_f32x8(p.new_stream + at, s[0]);
  norm_fragments(p.pre, g.pre_gamma, x, [&](float t) { return cluster_row_sum(t, pre_sum); });
  cluster_arrive();  // this CTA is done reading the others' shared memory ...
  *reinterpret_cast<uint4*>(p.out + at) = pack_bf16x8(x[0]);
  cluster_wait();    // ... and keeps its own alive until they are done with it
}

template <bool kStreamF32, bool kStore>
cudaError_t launch_variant(const AllReduceParams& a, std::int64_t m, bool pdl, cudaStream_t stream) {
  return launch_pdl(all_reduce_boundary_kernel<kStreamF32, kStore>, dim3(static_cast<unsigned>(m * kClusterCtas)),
                    dim3(kClusterThreads), pdl, stream, a);
}

template <bool kStreamF32, bool kStore>
cudaError_t prepare_variant() {
  cudaFuncAttributes attributes{};  // loads the kernel's module now, not lazily at first launch
  return cudaFuncGetAttributes(&attributes, all_reduce_boundary_kernel<kStreamF32, kStore>);
}

}  // namespace

cudaError_t launch_all_reduce(const std::uint16_t* const (&partials)[kMaxRanks], int ranks, std::uint16_t* branch,
                              std::int64_t m, cudaStream_t s) {
  AllReduceParams a{};
  for (int r = 0; r < kMaxRanks; ++r) a.partials[r] = partials[r];
  a.ranks = ranks;
  const std::int64_t groups = m * kH / kVec;
  const auto blocks = static_cast<unsigned>((groups + kThreads - 1) / kThreads);
  all_reduce_kernel<<<blocks, kThreads, 0, s>>>(a, branch, groups);
  return cudaGetLastError();
}

cudaError_t launch_all_reduce_boundary(const AllReduceParams& p, std::int64_t m, const Variant& v, cudaStream_t s) {
  AllReduceParams q = p;
  q.boundary.late_gates = v.late_gates;
  const bool f32 = v.stream == StreamDtype::f32;
  if (f32) return v.store_stream ? launch_variant<true, true>(q, m, v.pdl, s) : launch_variant<true, false>(q, m, v.pdl, s);
  return v.store_stream ? launch_variant<false, true>(q, m, v.pdl, s) : launch_variant<false, false>(q, m, v.pdl, s);
}

cudaError_t prepare_all_reduce(const Variant& v) {
  cudaFuncAttributes attributes{};
  if (const cudaError_t e = cudaFuncGetAttributes(&attributes, all_reduce_kernel); e != cudaSuccess) return e;
  const bool f32 = v.stream == StreamDtype::f32;
  if (f32) return v.store_stream ? prepare_variant<true, true>() : prepare_variant<true, false>();
  return v.store_stream ? prepare_variant<false, true>() : prepare_variant<false, false>();
}

cudaError_t max_active_clusters(int* clusters) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(kClusterCtas);
  config.blockDim = dim3(kClusterThreads);
  return cudaOccupancyMaxActiveClusters(clusters, all_reduce_boundary_kernel<true, true>, &config);
}

}  // namespace boundary::gpu::detail
