// One planted-bug build of the fused DraftBoundary kernel: compiled once per mutant with
// -DBOUNDARY_MUTANT=M (kernels/CMakeLists.txt). The kernels live in this translation unit's
// unnamed namespace; its only external symbols are the two launchers' instantiations for M.
#include "diagnostics_launch.hpp"
#include "draft_boundary_kernel.cuh"

static_assert(static_cast<int>(boundary::kMutant) >= 1 &&
                  static_cast<std::size_t>(boundary::kMutant) <= boundary::kAllMutants.size(),
              "compile with -DBOUNDARY_MUTANT=1 .. kAllMutants.size()");

namespace boundary::gpu::detail {

template <Mutant M>
cudaError_t launch_draft_boundary_mutant(const BoundaryParams& p, std::int64_t m, const Variant& v, cudaStream_t s) {
  static_assert(M == kMutant);
  return launch_layout(p, m, v, s, NoIntermediates{});
}

template <Mutant M>
cudaError_t prepare_draft_boundary_mutant(const Variant& v) {
  static_assert(M == kMutant);
  return prepare_layout<NoIntermediates>(v);
}

template cudaError_t launch_draft_boundary_mutant<kMutant>(const BoundaryParams&, std::int64_t, const Variant&,
                                                            cudaStream_t);
template cudaError_t prepare_draft_boundary_mutant<kMutant>(const Variant&);

}  // namespace boundary::gpu::detail
