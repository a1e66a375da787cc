// Parameters and launchers of the all-reduce kernels (contract section 7), shared by their host
// API (src/all_reduce_boundary.cpp) and the .cu file that defines them.
#pragma once

#include "launch.hpp"

namespace boundary::gpu::detail {

struct AllReduceParams {
  BoundaryParams boundary;  // its branch is unused: the fused kernel all-reduces the partials
  const std::uint16_t* partials[kMaxRanks];
  int ranks;
};

// The eager one-shot all-reduce: branch = the partials summed in rank order, m rows.
cudaError_t launch_all_reduce(const std::uint16_t* const (&partials)[kMaxRanks], int ranks, std::uint16_t* branch,
                              std::int64_t m, cudaStream_t s);
cudaError_t prepare_all_reduce();
// The fused all-reduce boundary on p.ranks partials in v's layout: pair, quad or cluster (no cta:
// the host API refuses it, and this returns cudaErrorNotSupported).
cudaError_t launch_all_reduce_boundary(const AllReduceParams& p, std::int64_t m, const Variant& v, cudaStream_t s);
cudaError_t prepare_all_reduce_boundary(const Variant& v, int ranks);

}  // namespace boundary::gpu::detail
