// The all-reduce boundary's kernels in the instrumented builds (debug, planted bugs), after
// layout_launch.cuh in the same translation unit: R = 1 runs the one-rank kernels of
// launch_layout, which that unit builds for the DraftBoundary anyway (the production build's
// launch_all_reduce_boundary picks the same ones), R >= 2 the R-rank kernels of v's layout.
#pragma once

#include "layout_launch.cuh"

namespace boundary::gpu::detail {

namespace {

// The partial of a one-rank launch as the DraftBoundary's branch.
inline BoundaryParams one_rank_params(const AllReduceParams& a) {
  BoundaryParams p = a.boundary;
  p.branch = a.partials[0];
  return p;
}

template <class Intermediates>
cudaError_t launch_all_reduce_layout(const AllReduceParams& a, std::int64_t m, const Variant& v, cudaStream_t s,
                                     const Intermediates& d) {
  if (a.ranks == 1) return launch_layout(one_rank_params(a), m, v, s, d);
  if (v.layout == Layout::cluster) return launch_cluster_rows<false>(a, m, v, s, d);
  return launch_persistent<false>(a, m, v, s, d);
}

template <class Intermediates>
cudaError_t prepare_all_reduce_layout(const Variant& v, int ranks) {
  if (ranks == 1) return prepare_layout<Intermediates>(v);
  if (v.layout == Layout::cluster) return prepare_cluster_rows<false, Intermediates>(v);
  return prepare_persistent<false, Intermediates>(v);
}

}  // namespace

}  // namespace boundary::gpu::detail
