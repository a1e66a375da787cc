// The eager one-shot all-reduce of contract section 7 (the fused all-reduce boundary is built in
// draft_boundary_kernel.cu: the pair, quad and cluster layouts on R partials).
#include "all_reduce_launch.hpp"

#include <boundary/device/fragment_stages.cuh>

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
  dev::all_reduce(a.ranks, [&](int r) { return raw[r]; }, x);
  // One rank is passed unchanged: a repacking would canonicalize its NaN payloads.
  *reinterpret_cast<uint4*>(branch + at) = a.ranks == 1 ? raw[0] : pack_bf16x8(x);
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

cudaError_t prepare_all_reduce() {
  cudaFuncAttributes attributes{};  // loads the kernel's module now, not lazily at first launch
  return cudaFuncGetAttributes(&attributes, all_reduce_kernel);
}

}  // namespace boundary::gpu::detail
