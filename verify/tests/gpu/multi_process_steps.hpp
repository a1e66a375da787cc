// The multi-process GPU tests' step data: every rank's partial of every step is a function of
// (seed, rank, step, element), computed the same on the device (by the step's partial writer) and
// on the host (for the emulator), so that each step's partials differ from the last's everywhere.
#pragma once

#include <boundary/types.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace gpu_test::multi_process {

#if defined(__CUDACC__)
#define MULTI_PROCESS_HD __host__ __device__
#else
#define MULTI_PROCESS_HD
#endif

// splitmix64's finalizer: every input bit moves every output bit. (boundary::Rng is a host-side
// sequence; the device needs a stateless hash of the element's coordinates.)
MULTI_PROCESS_HD inline std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A finite BF16 of either sign with its exponent in 2^-20 .. 2^20 (as generate_partials spreads
// them): R of them sum in FP32 with rank-order-dependent roundings, and never to Inf or NaN.
MULTI_PROCESS_HD inline std::uint16_t step_partial(std::uint64_t seed, int rank, std::uint64_t step, std::uint64_t element) {
  const std::uint64_t x = mix(seed ^ mix(static_cast<std::uint64_t>(rank) + 0x9E3779B97F4A7C15ull * (step + 1)) ^
                              (element * 0xD6E8FEB86659FD93ull));
  const auto sign = static_cast<std::uint32_t>(x & 1u);
  const auto exponent = static_cast<std::uint32_t>(127 - 20 + (x >> 1) % 41);
  const auto fraction = static_cast<std::uint32_t>((x >> 8) & 0x7Fu);
  return static_cast<std::uint16_t>((sign << 15) | (exponent << 7) | fraction);
}

// The step's partial writer: dst = rank `rank`'s partial of step *epoch + 1, m rows. Waits (PDL)
// for the kernel before it, which is wait_writable.
cudaError_t launch_write_step_partial(std::uint16_t* dst, std::int64_t m, int rank, std::uint64_t seed,
                                      const std::uint64_t* epoch, cudaStream_t s);

// Copies the step's outputs (fused and eager, m rows each) into slot *epoch - 1 of the histories
// ([steps, m, 8192] each); a slot past `steps` is not written.
struct StepOutputs {
  const std::uint16_t* out[2];
  const float* new_stream[2];
  std::uint16_t* out_history[2];
  float* new_stream_history[2];
};
cudaError_t launch_record_step(const StepOutputs& o, std::int64_t m, std::int64_t steps, const std::uint64_t* epoch,
                               cudaStream_t s);
cudaError_t prepare_step_kernels();

}  // namespace gpu_test::multi_process
