#include "bench_kernels.hpp"

#include <boundary/gpu/cuda_check.hpp>

#include <string>

namespace boundary::bench {

namespace {

__global__ void empty_kernel() {}

__global__ void __cluster_dims__(8, 1, 1) empty_cluster_kernel() {}

__global__ void __cluster_dims__(8, 1, 1) cluster_barriers_kernel() {
  for (int i = 0; i < 3; ++i) {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
  }
}

__global__ void __cluster_dims__(8, 1, 1) traffic_kernel(const TrafficParams p) {
  const std::size_t at = blockIdx.x * 128ull + threadIdx.x;  // 16-byte words of the BF16 tensors
  uint4 a = p.partials[0][at];
  for (int r = 1; r < p.ranks; ++r) {
    const uint4 b = p.partials[r][at];
    a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
  }
  const float4 s0 = p.stream[2 * at], s1 = p.stream[2 * at + 1];
  p.out[at] = a;
  p.new_stream[2 * at] = make_float4(s0.x + 1.0f, s0.y, s0.z, s0.w);
  p.new_stream[2 * at + 1] = s1;
}

// A grid-stride loop over a grid that fills the GPU, four 16-byte loads in flight per thread
// before the first store.
__global__ void sm_copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a, dst[i + stride] = b, dst[i + 2 * stride] = c, dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

// The SM copy of a boundary's own bytes: the branch to out and the stream to new_stream (the
// boundary reads and writes as much), one grid-stride loop over both on sm_copy_kernel's grid,
// waiting for the previous grid as the fused kernels do (PDL).
__global__ void boundary_copy_kernel(const uint4* __restrict__ branch, uint4* __restrict__ out, std::size_t n_branch,
                                     const uint4* __restrict__ stream, uint4* __restrict__ new_stream, std::size_t n) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const auto src = [&](std::size_t i) { return i < n_branch ? branch[i] : stream[i - n_branch]; };
  const auto store = [&](std::size_t i, const uint4& v) {
    if (i < n_branch) out[i] = v;
    else new_stream[i - n_branch] = v;
  };
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = src(i), b = src(i + stride), c = src(i + 2 * stride), d = src(i + 3 * stride);
    store(i, a), store(i + stride, b), store(i + 2 * stride, c), store(i + 3 * stride, d);
  }
  for (; i < n; i += stride) store(i, src(i));
}

__global__ void fill_pattern_kernel(std::uint32_t* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<std::uint32_t>(i * 0x9E3779B97F4A7C15ull >> 32);
}

// Launches kernel(args) on grid x block, with or without PDL.
template <class... Args>
void launch(const void* kernel, unsigned grid, unsigned block, bool pdl, cudaStream_t s, const char* what,
            Args*... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.stream = s;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = pdl ? 1 : 0;
  void* arguments[] = {args..., nullptr};
  // The C entry point: the variadic template would declare a zero-length argument array.
  gpu::cuda_check(cudaLaunchKernelExC(&config, kernel, arguments), (std::string("launching the ") + what).c_str());
}

}  // namespace

void launch_empty(std::int64_t m, bool pdl, cudaStream_t s) {
  launch(reinterpret_cast<const void*>(empty_kernel), static_cast<unsigned>(m), kThreads, pdl, s, "empty kernel");
}

void launch_cluster_floor(ClusterFloor floor, std::int64_t m, cudaStream_t s) {
  const auto grid = static_cast<unsigned>(m * 8);
  if (floor == ClusterFloor::empty)
    launch(reinterpret_cast<const void*>(empty_cluster_kernel), grid, 128, true, s, "empty cluster kernel");
  else
    launch(reinterpret_cast<const void*>(cluster_barriers_kernel), grid, 128, true, s, "cluster barriers kernel");
}

void launch_traffic(const TrafficParams& p, std::int64_t m, cudaStream_t s) {
  TrafficParams copy = p;
  launch(reinterpret_cast<const void*>(traffic_kernel), static_cast<unsigned>(m * 8), 128, true, s, "traffic kernel",
         &copy);
}

void launch_sm_copy(const void* src, void* dst, std::size_t bytes, int sm_count, cudaStream_t s) {
  const auto blocks = static_cast<unsigned>(sm_count * 8);  // 2048 threads per SM: a full GPU
  sm_copy_kernel<<<blocks, 256, 0, s>>>(static_cast<const uint4*>(src), static_cast<uint4*>(dst), bytes / 16);
  gpu::cuda_check(cudaGetLastError(), "launching the SM copy kernel");
}

void launch_boundary_copy(const BoundaryCopy& c, std::int64_t m, int sm_count, cudaStream_t s) {
  const std::size_t elements = static_cast<std::size_t>(m) * kH;
  BoundaryCopy k = c;  // the launch takes the arguments' addresses
  std::size_t n_branch = elements * 2 / 16, n = n_branch + elements * 4 / 16;
  launch(reinterpret_cast<const void*>(boundary_copy_kernel), static_cast<unsigned>(sm_count * 8), 256, true, s,
         "boundary copy kernel", &k.branch, &k.out, &n_branch, &k.stream, &k.new_stream, &n);
}

void fill_pattern(void* p, std::size_t bytes, cudaStream_t s) {
  fill_pattern_kernel<<<1024, 256, 0, s>>>(static_cast<std::uint32_t*>(p), bytes / 4);
  gpu::cuda_check(cudaGetLastError(), "launching fill_pattern");
}

void prepare_bench_kernels() {
  cudaFuncAttributes a{};
  gpu::cuda_check(cudaFuncGetAttributes(&a, empty_kernel), "loading the empty kernel");
  gpu::cuda_check(cudaFuncGetAttributes(&a, empty_cluster_kernel), "loading the empty cluster kernel");
  gpu::cuda_check(cudaFuncGetAttributes(&a, cluster_barriers_kernel), "loading the cluster barriers kernel");
  gpu::cuda_check(cudaFuncGetAttributes(&a, traffic_kernel), "loading the traffic kernel");
  gpu::cuda_check(cudaFuncGetAttributes(&a, sm_copy_kernel), "loading the SM copy kernel");
  gpu::cuda_check(cudaFuncGetAttributes(&a, boundary_copy_kernel), "loading the boundary copy kernel");
  gpu::cuda_check(cudaFuncGetAttributes(&a, fill_pattern_kernel), "loading the fill kernel");
}

}  // namespace boundary::bench
