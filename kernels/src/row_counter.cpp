#include "row_counter.hpp"

#include <boundary/gpu/cuda_check.hpp>

#include <cuda_runtime_api.h>

namespace boundary::gpu::detail {

RowCounter::RowCounter() {
  cuda_check(cudaMalloc(reinterpret_cast<void**>(&words_), 2 * sizeof(unsigned long long)), "cudaMalloc(row counter)");
  // A copy from pageable memory may return before its bytes land: a memset, then a wait for it,
  // on a stream of its own: the legacy stream would wait for (and join) every blocking stream.
  cudaStream_t s = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaMemsetAsync(words_, 0, 2 * sizeof(unsigned long long), s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (s) cudaStreamDestroy(s);
  if (e != cudaSuccess) cudaFree(words_);
  cuda_check(e, "zeroing the row counter");
}

RowCounter::~RowCounter() { cudaFree(words_); }

dev::RowHandout RowCounter::next_launch() {
  std::uint32_t tag = ++last_tag_;
  while (tag == 0) tag = ++last_tag_;  // after 2^32 launches
  return {words_, tag};
}

}  // namespace boundary::gpu::detail
