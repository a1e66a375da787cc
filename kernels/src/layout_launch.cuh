// Launching the fused kernels of every layout: a persistent layout's ring (how many stages fit),
// its grid (the clusters resident at once, asked once per kernel), the choice of its build with
// rows handed out (the object's HandoutThresholds), and the switch over layouts (launch_layout)
// that the production, debug and planted-bug translation units each instantiate with their own
// kernels (draft_boundary_kernel.cuh, cluster_boundary_kernel.cuh). Internal linkage, as there.
#pragma once

#include "draft_boundary_kernel.cuh"
#include "launch.hpp"

#include <boundary/device/pdl_launch.cuh>

#include <algorithm>
#include <mutex>
#include <vector>

namespace boundary::gpu::detail {

namespace {

using namespace boundary::dev;

// A variant's ring: its stage size and how many stages fit beside the fixed part. A CTA takes
// all of an SM's shared memory with one CTA a row (the ring needs the room), and at most half on
// a cluster, so that two clusters' CTAs share an SM and one's row sums hide behind the other's.
struct Ring {
  std::uint32_t stage_bytes;
  int stages;
};

template <int kCtas>
Ring ring_for(const Variant& v, int ranks) {
  constexpr std::size_t kBudget = kCtas == 1 ? 227 * 1024 : 113 * 1024;
  Ring r{};
  r.stage_bytes = v.stream == StreamDtype::f32 ? ring_stage_bytes<kCtas, true>(ranks) : ring_stage_bytes<kCtas, false>(ranks);
  // The fixed part of the build with the hand-out, so that both cta builds hold the same stages
  // (its row words change no stage count: every layout, both stream dtypes, 1, 2 and 8 ranks).
  r.stages = std::clamp(static_cast<int>((kBudget - kRingFixedBytes<kCtas, true>) / r.stage_bytes), 1, kMaxStages);
  return r;
}

// Clusters (CTAs, for kCtas = 1) of a kernel resident at once with `shared` bytes each; asked
// once per kernel, size and device (an occupancy query costs microseconds).
template <int kCtas, class Kernel>
cudaError_t resident_groups(Kernel kernel, std::size_t shared, int sm_count, int* groups) {
  struct Entry {
    const void* kernel;
    std::size_t shared;
    int device, groups;
  };
  static std::mutex mutex;
  static std::vector<Entry> cache;
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  const std::lock_guard lock(mutex);
  for (const Entry& c : cache)
    if (c.kernel == reinterpret_cast<const void*>(kernel) && c.shared == shared && c.device == device)
      return *groups = c.groups, cudaSuccess;
  cudaError_t e = cudaSuccess;
  if constexpr (kCtas == 1) {
    int per_sm = 0;
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kRowThreads, shared);
    *groups = per_sm * sm_count;
  } else {
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(kCtas);
    config.blockDim = dim3(kRowThreads / kCtas);
    config.dynamicSmemBytes = shared;
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = kCtas;
    attribute.val.clusterDim.y = attribute.val.clusterDim.z = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
    e = cudaOccupancyMaxActiveClusters(groups, kernel, &config);
  }
  if (e == cudaSuccess && *groups < 1) e = cudaErrorInvalidConfiguration;
  if (e == cudaSuccess) cache.push_back({reinterpret_cast<const void*>(kernel), shared, device, *groups});
  return e;
}

// Rows a resident cluster (CTA) must have on average before they are handed out (0: never), from
// the object's thresholds (their figures: handout_thresholds_for in draft_boundary.cpp). The
// one-rank pair and quad layouts divide rows statically: handed out with the ticket taken at the
// refill they were slower (H200, quad, m = 8192: 317.16 against 255.09), and no dispatch picks
// them.
template <int kCtas>
std::int64_t handout_rows_per_group(const HandoutThresholds& t, StreamDtype stream) {
  if constexpr (kCtas == 1) return stream == StreamDtype::f32 ? t.cta_f32 : t.cta_bf16;
  else return t.quad;
}

// m rows of a (R = a.ranks partials; 1 with kOneRank) in the persistent layout of kCtas CTAs a
// row, with v's gates and PDL: as many clusters as are resident at once, fewer when that
// leaves the rows per cluster the same (the slowest cluster sets the time). kHandout (kHandsOut's
// layouts, a.boundary.handout set, above handout_rows_per_group): every resident cluster runs and
// the counter, not a stride, balances them.
template <int kCtas, bool kOneRank, bool kHandout, class Intermediates>
cudaError_t launch_ring_build(const AllReduceParams& a, std::int64_t m, const Variant& v, cudaStream_t s,
                              const Intermediates& d) {
  const auto kernel = ring_kernel_for<kCtas, kOneRank, kHandout, Intermediates>(v);
  const Ring ring = ring_for<kCtas>(v, kOneRank ? 1 : a.ranks);
  const auto shared_for = [&](int stages) {
    return kRingFixedBytes<kCtas, kHandout> + static_cast<std::size_t>(stages) * ring.stage_bytes;
  };
  const std::size_t full = shared_for(ring.stages);
  if (const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(full));
      e != cudaSuccess)
    return e;
  int resident = 0;
  if (const cudaError_t e = resident_groups<kCtas>(kernel, full, a.boundary.ctas, &resident); e != cudaSuccess) return e;
  if constexpr (kHandsOut<kCtas, kOneRank> && !kHandout)
    if (const std::int64_t above = handout_rows_per_group<kCtas>(a.boundary.handout_above, v.stream);
        a.boundary.handout.words != nullptr && above > 0 && m > above * resident)
      return launch_ring_build<kCtas, kOneRank, true>(a, m, v, s, d);
  const std::int64_t per = (m + resident - 1) / resident;
  const std::int64_t clusters = kHandout ? resident : (m + per - 1) / per;
  // No more stages than rows a cluster: a stage no row fills is room taken for nothing. (Measured
  // neutral on an H200 so far: pair at m = 132, 5.10 us with one stage, 5.11 with four.)
  const int stages = static_cast<int>(std::min<std::int64_t>(ring.stages, per));
  const std::size_t shared = shared_for(stages);
  AllReduceParams q = a;
  q.boundary.late_gates = v.late_gates;
  q.boundary.rows = m;
  q.boundary.stages = stages;
  q.boundary.handout = kHandout ? a.boundary.handout : dev::RowHandout{};
  return launch_pdl_cluster(kernel, dim3(static_cast<unsigned>(clusters * kCtas)), dim3(kRowThreads / kCtas), kCtas,
                            shared, v.pdl, s, q, d);
}

template <int kCtas, bool kOneRank, class Intermediates>
cudaError_t launch_ring(const AllReduceParams& a, std::int64_t m, const Variant& v, cudaStream_t s,
                        const Intermediates& d) {
  return launch_ring_build<kCtas, kOneRank, false>(a, m, v, s, d);
}

// Loads a ring kernel (both builds where rows are handed out) now, not lazily at its first launch
// (which may be inside a capture).
template <int kCtas, bool kOneRank, class Intermediates>
cudaError_t prepare_ring(const Variant& v) {
  cudaFuncAttributes attributes{};
  cudaError_t e = cudaFuncGetAttributes(&attributes, ring_kernel_for<kCtas, kOneRank, false, Intermediates>(v));
  if constexpr (kHandsOut<kCtas, kOneRank>)
    if (e == cudaSuccess) e = cudaFuncGetAttributes(&attributes, ring_kernel_for<kCtas, kOneRank, true, Intermediates>(v));
  return e;
}

// The persistent layouts on a (one rank with kOneRank): cta, pair and quad.
// R partials do not fit the cta layout's one CTA a row (a stage of 8 is 160 KB): the all-reduce
// boundary has no cta layout (its host API refuses it), and it is never built.
template <bool kOneRank, class Intermediates>
cudaError_t launch_persistent(const AllReduceParams& a, std::int64_t m, const Variant& v, cudaStream_t s,
                              const Intermediates& d) {
  switch (v.layout) {
    case Layout::pair: return launch_ring<2, kOneRank>(a, m, v, s, d);
    case Layout::quad: return launch_ring<4, kOneRank>(a, m, v, s, d);
    default:
      if constexpr (kOneRank) return launch_ring<1, kOneRank>(a, m, v, s, d);
      else return cudaErrorNotSupported;
  }
}

template <bool kOneRank, class Intermediates>
cudaError_t prepare_persistent(const Variant& v) {
  switch (v.layout) {
    case Layout::pair: return prepare_ring<2, kOneRank, Intermediates>(v);
    case Layout::quad: return prepare_ring<4, kOneRank, Intermediates>(v);
    default:
      if constexpr (kOneRank) return prepare_ring<1, kOneRank, Intermediates>(v);
      else return cudaErrorNotSupported;
  }
}

// m rows in the variant's layout, with its gates and PDL; d: NoIntermediates (production and
// planted-bug builds) or the debug build's DeviceIntermediates.
template <class Intermediates>
cudaError_t launch_layout(const BoundaryParams& p, std::int64_t m, const Variant& v, cudaStream_t s,
                          const Intermediates& d) {
  if (v.layout == Layout::cluster) return launch_cluster_rows<true>(single_rank(p), m, v, s, d);
  return launch_persistent<true>(single_rank(p), m, v, s, d);
}

// Loads the variant's kernel now, not lazily at its first launch (which may be inside a capture).
template <class Intermediates>
cudaError_t prepare_layout(const Variant& v) {
  if (v.layout == Layout::cluster) return prepare_cluster_rows<true, Intermediates>(v);
  return prepare_persistent<true, Intermediates>(v);
}

}  // namespace

}  // namespace boundary::gpu::detail
