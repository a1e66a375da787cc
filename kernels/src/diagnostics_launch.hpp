// Launchers of the instrumented builds of the fused DraftBoundary kernel, shared by the host API
// (src/diagnostics.cpp) and the .cu files that define them.
#pragma once

#include "launch.hpp"

#include <boundary/gpu/diagnostics.hpp>
#include <boundary/mutant.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace boundary::gpu::detail {

// The debug build (draft_boundary_debug.cu): also writes the intermediates d asks for.
cudaError_t launch_draft_boundary_debug(const BoundaryParams& p, const DeviceIntermediates& d, std::int64_t m,
                                        const Variant& v, cudaStream_t s);

// Instantiated once per planted bug M, by draft_boundary_mutant.cu compiled with BOUNDARY_MUTANT = M.
template <Mutant M>
cudaError_t launch_draft_boundary_mutant(const BoundaryParams& p, std::int64_t m, const Variant& v, cudaStream_t s);
template <Mutant M>
cudaError_t prepare_draft_boundary_mutant(const Variant& v);

}  // namespace boundary::gpu::detail
