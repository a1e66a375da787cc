// The production build of the fused DraftBoundary kernel (draft_boundary_kernel.cuh).
#include "draft_boundary_kernel.cuh"

namespace boundary::gpu::detail {

cudaError_t launch_draft_boundary(const BoundaryParams& p, std::int64_t m, const Variant& v, cudaStream_t s) {
  return launch_rows(kernel_for<false>(v), p, m, v, s);
}

cudaError_t prepare_draft_boundary(const Variant& v) { return prepare_kernel(kernel_for<false>(v)); }

}  // namespace boundary::gpu::detail
