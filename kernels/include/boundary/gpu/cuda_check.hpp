// The one check of a CUDA runtime call, for the host code of the kernels, the verifier and the
// tests: the message names the call and CUDA's error (name and text).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace boundary::gpu {

// "what: cudaErrorName (text)".
std::string cuda_error_message(const char* what, cudaError_t e);

// Throws CudaError with cuda_error_message unless e is cudaSuccess, after clearing CUDA's last
// error: a reported error must not resurface in the next launch's check.
void cuda_check(cudaError_t e, const char* what);

}  // namespace boundary::gpu
