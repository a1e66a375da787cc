// The production build of the fused kernels: the DraftBoundary and the all-reduce boundary in
// every layout (draft_boundary_kernel.cuh, cluster_boundary_kernel.cuh, launched as
// layout_launch.cuh says).
#include "all_reduce_launch.hpp"
#include "layout_launch.cuh"

namespace boundary::gpu::detail {

cudaError_t launch_draft_boundary(const BoundaryParams& p, std::int64_t m, const Variant& v, cudaStream_t s) {
  return launch_layout(p, m, v, s, NoIntermediates{});
}

cudaError_t prepare_draft_boundary(const Variant& v) { return prepare_layout<NoIntermediates>(v); }

cudaError_t max_active_clusters(ClusterPlacement placement, bool one_rank, int* clusters) {
  return one_rank ? resident_clusters<true>(placement, clusters) : resident_clusters<false>(placement, clusters);
}

cudaError_t launch_all_reduce_boundary(const AllReduceParams& p, std::int64_t m, const Variant& v, cudaStream_t s) {
  if (v.layout == Layout::cluster) {
    if (p.ranks == 1) return launch_cluster_rows<true>(p, m, v, s, NoIntermediates{});
    return launch_cluster_rows<false>(p, m, v, s, NoIntermediates{});
  }
  if (p.ranks == 1) return launch_persistent<true>(p, m, v, s, NoIntermediates{});
  return launch_persistent<false>(p, m, v, s, NoIntermediates{});
}

cudaError_t prepare_all_reduce_boundary(const Variant& v, int ranks) {
  if (v.layout == Layout::cluster) {
    if (ranks == 1) return prepare_cluster_rows<true, NoIntermediates>(v);
    return prepare_cluster_rows<false, NoIntermediates>(v);
  }
  if (ranks == 1) return prepare_persistent<true, NoIntermediates>(v);
  return prepare_persistent<false, NoIntermediates>(v);
}

}  // namespace boundary::gpu::detail
