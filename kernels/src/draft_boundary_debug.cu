// The debug build of the fused DraftBoundary kernel: the production source, also writing the
// intermediates. Its own instantiation: the production kernel's code is not touched by it.
#include "diagnostics_launch.hpp"
#include "draft_boundary_kernel.cuh"

static_assert(boundary::kMutant == boundary::Mutant::none, "the debug build is of the production kernel");

namespace boundary::gpu::detail {

cudaError_t launch_draft_boundary_debug(const BoundaryParams& p, const DeviceIntermediates& d, std::int64_t m,
                                        const Variant& v, cudaStream_t s) {
  return launch_layout(p, m, v, s, d);
}

}  // namespace boundary::gpu::detail
