// The debug builds of the fused kernels, the DraftBoundary and the all-reduce boundary: the
// production sources, also writing the intermediates. Their own instantiations: the production
// kernels' code is not touched by them.
#include "all_reduce_instrumented.cuh"
#include "diagnostics_launch.hpp"

static_assert(boundary::kMutant == boundary::Mutant::none, "the debug build is of the production kernel");

namespace boundary::gpu::detail {

cudaError_t launch_draft_boundary_debug(const BoundaryParams& p, const DeviceIntermediates& d, std::int64_t m,
                                        const Variant& v, cudaStream_t s) {
  return launch_layout(p, m, v, s, d);
}

cudaError_t launch_all_reduce_boundary_debug(const AllReduceParams& a, const DeviceIntermediates& d, std::int64_t m,
                                             const Variant& v, cudaStream_t s) {
  return launch_all_reduce_layout(a, m, v, s, d);
}

}  // namespace boundary::gpu::detail
