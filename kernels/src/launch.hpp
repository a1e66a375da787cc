// Kernel parameters and launchers shared by the host API (src/draft_boundary.cpp) and the .cu
// files that define the kernels.
#pragma once

#include <boundary/device/norm_args.hpp>
#include <boundary/device/row_handout.hpp>
#include <boundary/gpu/draft_boundary.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace boundary::gpu::detail {

struct BoundaryParams {
  const std::uint16_t* branch;
  const void* stream;
  std::uint16_t* out;
  float* new_stream;  // nullptr: not stored
  const float* alpha;
  const float* beta;
  dev::NormArgs post, pre;
  bool late_gates;
  std::int64_t rows;  // m (set by the launcher)
  int ctas;           // the device's SM count (the persistent layouts' grids follow from it)
  int stages;         // the persistent layouts' ring: row stages in shared memory (set by the launcher)
  dev::RowHandout handout;  // the object's counter and this launch's tag; the launcher clears it where unused
  HandoutThresholds handout_above;  // the object's (host side: the launcher picks the build from them)
};

// Fused DraftBoundary, m rows in v's layout.
cudaError_t launch_draft_boundary(const BoundaryParams& p, std::int64_t m, const Variant& v, cudaStream_t s);
cudaError_t prepare_draft_boundary(const Variant& v);
// Clusters of the cluster layout resident at once on this device (F32 stream stored; the one-rank
// build, the DraftBoundary's, or the R-rank build, the all-reduce boundary's), placed so: one wave
// of its rows.
cudaError_t max_active_clusters(ClusterPlacement placement, bool one_rank, int* clusters);

// The eager chain's kernels.
cudaError_t launch_norm(const std::uint16_t* in, std::uint16_t* out, const dev::NormArgs& n, std::int64_t m,
                        cudaStream_t s);
cudaError_t launch_connection(const BoundaryParams& p, const std::uint16_t* y_b, std::uint16_t* z, std::int64_t m,
                              StreamDtype stream_dtype, cudaStream_t s);
cudaError_t prepare_eager();

}  // namespace boundary::gpu::detail
