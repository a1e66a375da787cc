// Launchers of the instrumented builds of the fused kernels (the DraftBoundary and the all-reduce
// boundary), shared by the host API (src/diagnostics.cpp) and the .cu files that define them.
#pragma once

#include "all_reduce_launch.hpp"

#include <boundary/gpu/diagnostics.hpp>
#include <boundary/mutant.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace boundary::gpu::detail {

// The debug build (draft_boundary_debug.cu): also writes the intermediates d asks for.
cudaError_t launch_draft_boundary_debug(const BoundaryParams& p, const DeviceIntermediates& d, std::int64_t m,
                                        const Variant& v, cudaStream_t s);

// The all-reduce boundary's debug build (draft_boundary_debug.cu) on a.ranks partials.
cudaError_t launch_all_reduce_boundary_debug(const AllReduceParams& a, const DeviceIntermediates& d, std::int64_t m,
                                             const Variant& v, cudaStream_t s);

// Instantiated once per planted bug M, by draft_boundary_mutant.cu compiled with BOUNDARY_MUTANT = M.
template <Mutant M>
cudaError_t launch_draft_boundary_mutant(const BoundaryParams& p, std::int64_t m, const Variant& v, cudaStream_t s);
template <Mutant M>
cudaError_t prepare_draft_boundary_mutant(const Variant& v);

template <Mutant M>
cudaError_t launch_all_reduce_boundary_mutant(const AllReduceParams& a, std::int64_t m, const Variant& v, cudaStream_t s);
template <Mutant M>
cudaError_t prepare_all_reduce_boundary_mutant(const Variant& v, int ranks);

}  // namespace boundary::gpu::detail
