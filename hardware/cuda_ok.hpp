// The capture programs' CUDA error check: a failed call ends the program with exit code 2 and
// names the call's location and CUDA's error.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CUDA_OK(call)                                                                   \
  do {                                                                                  \
    const cudaError_t err_ = (call);                                                    \
    if (err_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_),      \
                   __FILE__, __LINE__, cudaGetErrorString(err_));                       \
      std::exit(2);                                                                     \
    }                                                                                   \
  } while (0)
