// The production build of the fused kernels: the DraftBoundary in both layouts
// (draft_boundary_kernel.cuh) and the all-reduce boundary, the cluster layout on R partials
// (cluster_boundary_kernel.cuh).
#include "all_reduce_launch.hpp"
#include "draft_boundary_kernel.cuh"

#include <algorithm>
#include <array>
#include <atomic>

namespace boundary::gpu::detail {

cudaError_t launch_draft_boundary(const BoundaryParams& p, std::int64_t m, const Variant& v, cudaStream_t s) {
  return launch_layout(p, m, v, s, NoIntermediates{});
}

cudaError_t prepare_draft_boundary(const Variant& v) {
  if (const cudaError_t e = prepare_layout<NoIntermediates>(v); e != cudaSuccess) return e;
  int rows = 0;
  return cta_rows_resident(v, 1, &rows);
}

cudaError_t cta_rows_resident(const Variant& v, int sm_count, int* rows) {
  constexpr int kDevices = 64;
  static std::array<std::atomic<int>, kDevices * 4> cache{};  // per device: F32/BF16 x stored or not
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  const int slot = device * 4 + (v.stream == StreamDtype::f32 ? 2 : 0) + (v.store_stream ? 1 : 0);
  int per_sm = device < kDevices ? cache[static_cast<std::size_t>(slot)].load() : 0;
  if (per_sm == 0) {
    if (const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel_for<false>(v), kThreads, 0);
        e != cudaSuccess)
      return e;
    if (device < kDevices) cache[static_cast<std::size_t>(slot)].store(per_sm);
  }
  *rows = sm_count * std::max(per_sm, 1);
  return cudaSuccess;
}

cudaError_t launch_all_reduce_boundary(const AllReduceParams& p, std::int64_t m, const Variant& v, cudaStream_t s) {
  if (p.ranks == 1) return launch_cluster_rows<true>(p, m, v, s, NoIntermediates{});
  return launch_cluster_rows<false>(p, m, v, s, NoIntermediates{});
}

cudaError_t prepare_all_reduce_boundary(const Variant& v, int ranks) {
  if (ranks == 1) return prepare_cluster_rows<true, NoIntermediates>(v);
  return prepare_cluster_rows<false, NoIntermediates>(v);
}

cudaError_t max_active_clusters(int* clusters) {
  return resident_clusters(clusters);
}

}  // namespace boundary::gpu::detail
