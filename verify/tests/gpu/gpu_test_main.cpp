// The GPU tests' main: without a CUDA device the tests are skipped (exit 77, which ctest reports
// as skipped through SKIP_RETURN_CODE), never passed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <boundary/gpu/draft_boundary.hpp>
#include <boundary/primitives.hpp>

#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (!boundary::gpu::device_available()) {
    std::puts("no CUDA device: GPU tests skipped");
    return 77;
  }
  // The emulator is the truth: a host that flushes subnormals would make it wrong.
  boundary::ref::check_host_float_environment();
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) == cudaSuccess && cudaGetDeviceProperties(&prop, device) == cudaSuccess)
    std::printf("device %d: %s, compute capability %d.%d, %d SMs\n", device, prop.name, prop.major, prop.minor,
                prop.multiProcessorCount);
  doctest::Context context(argc, argv);
  const int failed = context.run();
  // Only the missing device may look like a skip: any other non-zero result is a failure.
  return failed == 0 ? 0 : 1;
}
