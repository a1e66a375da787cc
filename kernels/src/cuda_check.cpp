#include <boundary/gpu/cuda_check.hpp>

#include <boundary/gpu/draft_boundary.hpp>

namespace boundary::gpu {

std::string cuda_error_message(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

void cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  throw CudaError(cuda_error_message(what, e));
}

}  // namespace boundary::gpu
