// The consumer and poison kernels of the GPU tests (see pdl_chain.hpp).
#include "pdl_chain.hpp"

#include <boundary/device/grid_stride.cuh>
#include <boundary/gpu/diagnostics.hpp>

#include <cstdint>

namespace boundary::gpu::test {

namespace {

using namespace boundary::dev;

__global__ void consumer_kernel(const uint4* a, uint4* a_copy, std::size_t a_words, const uint4* b, uint4* b_copy,
                                std::size_t b_words) {
  // The memory clobber keeps every load below after the wait.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  for (std::size_t i = first_index(); i < a_words; i += grid_stride()) a_copy[i] = a[i];
  for (std::size_t i = first_index(); i < b_words; i += grid_stride()) b_copy[i] = b[i];
}

__global__ void poison_kernel(uint4* dst, std::size_t words) {
  for (std::size_t i = first_index(); i < words; i += grid_stride())
    dst[i] = make_uint4(0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu);
}

}  // namespace

cudaError_t launch_consumer(const void* a, void* a_copy, std::size_t a_bytes, const void* b, void* b_copy,
                            std::size_t b_bytes, cudaStream_t stream) {
  const std::size_t a_words = a_bytes / 16, b_words = b_bytes / 16;
  return launch_grid_stride(consumer_kernel, a_words > b_words ? a_words : b_words, true, stream,
                            static_cast<const uint4*>(a), static_cast<uint4*>(a_copy), a_words,
                            static_cast<const uint4*>(b), static_cast<uint4*>(b_copy), b_words);
}

cudaError_t launch_poison(void* dst, std::size_t bytes, cudaStream_t stream) {
  const std::size_t words = bytes / 16;
  return launch_grid_stride(poison_kernel, words, false, stream, static_cast<uint4*>(dst), words);
}

cudaError_t prepare_kernels() {
  cudaFuncAttributes attributes{};
  for (cudaError_t e : {prepare_producer(), cudaFuncGetAttributes(&attributes, consumer_kernel),
                        cudaFuncGetAttributes(&attributes, poison_kernel)})
    if (e != cudaSuccess) return e;
  return cudaSuccess;
}

}  // namespace boundary::gpu::test
