// One planted-bug build of the fused kernels, the DraftBoundary and the all-reduce boundary:
// compiled once per mutant with -DBOUNDARY_MUTANT=M (kernels/CMakeLists.txt). The kernels live in
// this translation unit's unnamed namespace; its only external symbols are the launchers'
// instantiations for M.
#include "all_reduce_instrumented.cuh"
#include "diagnostics_launch.hpp"

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

template <Mutant M>
cudaError_t launch_all_reduce_boundary_mutant(const AllReduceParams& a, std::int64_t m, const Variant& v,
                                              cudaStream_t s) {
  static_assert(M == kMutant);
  return launch_all_reduce_layout(a, m, v, s, NoIntermediates{});
}

template <Mutant M>
cudaError_t prepare_all_reduce_boundary_mutant(const Variant& v, int ranks) {
  static_assert(M == kMutant);
  return prepare_all_reduce_layout<NoIntermediates>(v, ranks);
}

template cudaError_t launch_draft_boundary_mutant<kMutant>(const BoundaryParams&, std::int64_t, const Variant&,
                                                            cudaStream_t);
template cudaError_t prepare_draft_boundary_mutant<kMutant>(const Variant&);
template cudaError_t launch_all_reduce_boundary_mutant<kMutant>(const AllReduceParams&, std::int64_t, const Variant&,
                                                                 cudaStream_t);
template cudaError_t prepare_all_reduce_boundary_mutant<kMutant>(const Variant&, int);

}  // namespace boundary::gpu::detail
