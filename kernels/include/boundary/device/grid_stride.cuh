// Grid-stride loops over 16-byte words: the copy and fill kernels that surround a boundary (the
// branch producer of the diagnostics library, the tests' consumer and poison).
#pragma once

#include <boundary/device/pdl_launch.cuh>

#include <cuda_runtime_api.h>

#include <cstddef>

namespace boundary::dev {

inline constexpr unsigned kStrideBlock = 256;
inline constexpr unsigned kStrideMaxBlocks = 1024;  // grid-stride beyond: every block is resident at once

__device__ __forceinline__ std::size_t first_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::size_t grid_stride() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

// Launches kernel over `words`, with the PDL attribute or without.
template <class... Params, class... Args>
cudaError_t launch_grid_stride(void (*kernel)(Params...), std::size_t words, bool pdl, cudaStream_t stream,
                               Args... args) {
  const std::size_t blocks = (words + kStrideBlock - 1) / kStrideBlock;
  const auto grid = static_cast<unsigned>(blocks == 0 ? 1 : (blocks < kStrideMaxBlocks ? blocks : kStrideMaxBlocks));
  return launch_pdl(kernel, dim3(grid), dim3(kStrideBlock), pdl, stream, args...);
}

}  // namespace boundary::dev
