// The multi-process tests' own kernels around a step: the partial writer and the recorder.
#include "multi_process_steps.hpp"

#include <boundary/device/pdl_launch.cuh>

namespace gpu_test::multi_process {

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) write_step_partial(std::uint16_t* dst, std::int64_t n, int rank,
                                                               std::uint64_t seed, const std::uint64_t* epoch) {
  asm volatile("griddepcontrol.wait;" ::: "memory");  // wait_writable has completed: peers are done reading
  const std::uint64_t step = *epoch + 1;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * kThreads)
    dst[i] = step_partial(seed, rank, step, static_cast<std::uint64_t>(i));
}

__global__ void __launch_bounds__(kThreads) record_step(const StepOutputs o, std::int64_t n, std::int64_t steps,
                                                        const std::uint64_t* epoch) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const auto slot = static_cast<std::int64_t>(*epoch) - 1;
  if (slot < 0 || slot >= steps) return;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * kThreads)
    for (int k = 0; k < 2; ++k) {
      o.out_history[k][slot * n + i] = o.out[k][i];
      o.new_stream_history[k][slot * n + i] = o.new_stream[k][i];
    }
}

unsigned blocks_for(std::int64_t n) { return static_cast<unsigned>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, 1024)); }

}  // namespace

cudaError_t launch_write_step_partial(std::uint16_t* dst, std::int64_t m, int rank, std::uint64_t seed,
                                      const std::uint64_t* epoch, cudaStream_t s) {
  const std::int64_t n = m * boundary::kH;
  return boundary::dev::launch_pdl(write_step_partial, dim3(blocks_for(n)), dim3(kThreads), true, s, dst, n, rank, seed, epoch);
}

cudaError_t launch_record_step(const StepOutputs& o, std::int64_t m, std::int64_t steps, const std::uint64_t* epoch,
                               cudaStream_t s) {
  const std::int64_t n = m * boundary::kH;
  return boundary::dev::launch_pdl(record_step, dim3(blocks_for(n)), dim3(kThreads), true, s, o, n, steps, epoch);
}

cudaError_t prepare_step_kernels() {
  cudaFuncAttributes a{};
  if (const cudaError_t e = cudaFuncGetAttributes(&a, write_step_partial); e != cudaSuccess) return e;
  return cudaFuncGetAttributes(&a, record_step);
}

}  // namespace gpu_test::multi_process
