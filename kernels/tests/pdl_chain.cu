// The producer, consumer and poison kernels of the GPU tests (see pdl_chain.hpp).
#include "pdl_chain.hpp"

#include <cstdint>

namespace boundary::gpu::test {

namespace {

constexpr unsigned kBlock = 256;
constexpr unsigned kMaxBlocks = 1024;  // grid-stride beyond: every block is resident at once

unsigned blocks_for(std::size_t words) {
  const std::size_t b = (words + kBlock - 1) / kBlock;
  return static_cast<unsigned>(b == 0 ? 1 : (b < kMaxBlocks ? b : kMaxBlocks));
}

__device__ __forceinline__ std::size_t first_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::size_t grid_stride() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

__global__ void producer_kernel(const uint4* src, uint4* dst, std::size_t words, unsigned delay_ns) {
  // Every block triggers before any copying, so the boundary (a PDL launch) can be resident
  // while the branch still holds the previous step's rows.
  asm volatile("griddepcontrol.launch_dependents;" :::);
  for (unsigned slept = 0; slept < delay_ns; slept += 1000) __nanosleep(1000);
  for (std::size_t i = first_index(); i < words; i += grid_stride()) dst[i] = src[i];
}

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

// cudaLaunchKernelEx returns this launch's own error, never one left over from an earlier call.
template <class... Params, class... Args>
cudaError_t launch(void (*kernel)(Params...), std::size_t words, bool pdl, cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(blocks_for(words));
  config.blockDim = dim3(kBlock);
  config.stream = stream;
  cudaLaunchAttribute attribute[1]{};
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, args...);
}

}  // namespace

cudaError_t launch_producer(const void* src, void* dst, std::size_t bytes, unsigned delay_ns, cudaStream_t stream) {
  const std::size_t words = bytes / 16;
  return launch(producer_kernel, words, false, stream, static_cast<const uint4*>(src), static_cast<uint4*>(dst), words,
                delay_ns);
}

cudaError_t launch_consumer(const void* a, void* a_copy, std::size_t a_bytes, const void* b, void* b_copy,
                            std::size_t b_bytes, cudaStream_t stream) {
  const std::size_t a_words = a_bytes / 16, b_words = b_bytes / 16;
  return launch(consumer_kernel, a_words > b_words ? a_words : b_words, true, stream, static_cast<const uint4*>(a),
                static_cast<uint4*>(a_copy), a_words, static_cast<const uint4*>(b), static_cast<uint4*>(b_copy), b_words);
}

cudaError_t launch_poison(void* dst, std::size_t bytes, cudaStream_t stream) {
  const std::size_t words = bytes / 16;
  return launch(poison_kernel, words, false, stream, static_cast<uint4*>(dst), words);
}

cudaError_t prepare_kernels() {
  cudaFuncAttributes attributes{};
  for (cudaError_t e : {cudaFuncGetAttributes(&attributes, producer_kernel), cudaFuncGetAttributes(&attributes, consumer_kernel),
                        cudaFuncGetAttributes(&attributes, poison_kernel)})
    if (e != cudaSuccess) return e;
  return cudaSuccess;
}

}  // namespace boundary::gpu::test
