// The branch producer (boundary/gpu/diagnostics.hpp): a kernel in front of a boundary that lets
// it start early under programmatic dependent launch.
#include <boundary/device/grid_stride.cuh>
#include <boundary/gpu/diagnostics.hpp>

#include <cstdint>

namespace boundary::gpu {

namespace {

using namespace boundary::dev;

__global__ void producer_kernel(const uint4* src, uint4* dst, std::size_t words, unsigned delay_ns) {
  // Every block triggers before any copying, so the boundary (a PDL launch) can be resident
  // while dst still holds what it held before.
  asm volatile("griddepcontrol.launch_dependents;" :::);
  for (unsigned slept = 0; slept < delay_ns; slept += 1000) __nanosleep(1000);
  for (std::size_t i = first_index(); i < words; i += grid_stride()) dst[i] = src[i];
}

}  // namespace

cudaError_t launch_producer(const void* src, void* dst, std::size_t bytes, unsigned delay_ns, cudaStream_t stream) {
  const std::size_t words = bytes / 16;
  return launch_grid_stride(producer_kernel, words, false, stream, static_cast<const uint4*>(src),
                            static_cast<uint4*>(dst), words, delay_ns);
}

cudaError_t prepare_producer() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, producer_kernel);
}

}  // namespace boundary::gpu
