#include "bench_kernels.hpp"

#include <boundary/gpu/cuda_check.hpp>

#include <stdexcept>
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

// What every fused kernel does first under PDL: wait for the previous grid, then let the next one
// start at once. The floors and copies that stand beside a boundary do it too: without the early
// trigger a successor's launch would not overlap them, and at small m they would time a launch
// latency the boundary does not pay.
__device__ __forceinline__ void wait_then_trigger() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
}

__global__ void __cluster_dims__(8, 1, 1) traffic_kernel(const TrafficParams p) {
  wait_then_trigger();
  const std::size_t at = blockIdx.x * 128ull + threadIdx.x;  // 16-byte words of the BF16 tensors
  // The partials' loads all issued before the first add, and unrolled, as the fused kernels'
  // (load_branch_fragment): a run-time index into the parameter array copied it to local memory,
  // 96 bytes a thread stored through the L2, which tripled the kernel's L2 write sectors (ncu,
  // H100, m = 132: 591,360 against the boundary's 202,752) and made it slower than the boundary
  // itself from m = 64.
  uint4 raw[kMaxRanks];
#pragma unroll
  for (int r = 0; r < kMaxRanks; ++r)
    if (r < p.ranks) raw[r] = p.partials[r][at];
  uint4 a = raw[0];
#pragma unroll
  for (int r = 1; r < kMaxRanks; ++r)
    if (r < p.ranks) a.x += raw[r].x, a.y += raw[r].y, a.z += raw[r].z, a.w += raw[r].w;
  // The F32 stream's 32 bytes a thread, moved as the fused kernels move them at their best: each
  // load and store instruction of a lane pair (2q, 2q + 1) covers one whole 32-byte sector, the
  // first the even lane's, the second the odd lane's (store_warp_f32x8). Each lane moving its own
  // 32 bytes in two 16-byte halves would touch every sector twice an instruction pair and cost
  // the L2 twice the requests, which a floor must not.
  const std::size_t pair = 2 * (at & ~std::size_t{1}) + (threadIdx.x & 1u);
  const float4 s0 = p.stream[pair], s1 = p.stream[pair + 2];
  p.out[at] = a;
  p.new_stream[pair] = make_float4(s0.x + 1.0f, s0.y, s0.z, s0.w);
  p.new_stream[pair + 2] = s1;
}

// Every copy runs 8 CTAs of this many threads a SM: 2048 threads, a full SM.
constexpr unsigned kCopyThreads = 256;

// The copies' word spaces: n 16-byte words, load(i) from the source, store(i, v) to the
// destination. Flat: one buffer to another.
struct FlatWords {
  const uint4* src;
  uint4* dst;
  std::size_t n;
  __device__ uint4 load(std::size_t i) const { return src[i]; }
  __device__ void store(std::size_t i, const uint4& v) const { dst[i] = v; }
};

// A boundary's own bytes: the branch to out, then the stream to new_stream (the boundary reads
// and writes as much), one word space over both. kWide: a BF16 stream, half the bytes of the F32
// new_stream, so each of its words is stored twice, into new_stream's first and second halves:
// what the boundary reads (2 + 2 bytes an element) and writes (2 + 4), every store a whole sector.
template <bool kWide>
struct BoundaryWords {
  const uint4* branch;
  uint4* out;
  std::size_t n_branch;
  const uint4* stream;
  uint4* new_stream;
  std::size_t n;
  __device__ uint4 load(std::size_t i) const { return i < n_branch ? branch[i] : stream[i - n_branch]; }
  __device__ void store(std::size_t i, const uint4& v) const {
    if (i < n_branch) {
      out[i] = v;
      return;
    }
    new_stream[i - n_branch] = v;
    if constexpr (kWide) new_stream[i - n_branch + (n - n_branch)] = v;
  }
};

// Work divided statically: a grid-stride loop over a grid that fills the GPU, four 16-byte loads
// in flight per thread before the first store. The kernel ends when its slowest SM does.
template <class Words>
__device__ void copy_grid_stride(const Words& w) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x, n = w.n;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = w.load(i), b = w.load(i + stride), c = w.load(i + 2 * stride), d = w.load(i + 3 * stride);
    w.store(i, a), w.store(i + stride, b), w.store(i + 2 * stride, c), w.store(i + 3 * stride, d);
  }
  for (; i < n; i += stride) w.store(i, w.load(i));
}

// Work handed out at run time: each CTA takes the next chunk from counter[0] until none is left,
// so an SM that streams faster copies more chunks and the copy ends with the GPU's average rate,
// not its slowest SM's. A chunk is one round of the grid-stride copy's four 16-byte loads in
// flight a thread (more would not fit the 32 registers of 8 CTAs a SM): 16 KB, so that even m =
// 1024 (48 MB) gives every CTA about three chunks and the tail is short. Thread 0 takes the next
// chunk's ticket before copying this one, so the atomic's latency hides behind the copy, and hands
// it over through shared memory (double-buffered: one barrier a chunk). counter[1] counts the CTAs
// done; the last sets both back to zero, so that the next launch (a graph replay) starts at chunk 0.
constexpr std::size_t kChunkWords = 4 * kCopyThreads;

template <class Words>
__device__ void copy_chunks(const Words& w, unsigned* counter) {
  __shared__ unsigned taken[2];
  const std::size_t n = w.n, chunks = (n + kChunkWords - 1) / kChunkWords;
  if (threadIdx.x == 0) taken[0] = atomicAdd(&counter[0], 1u);
  __syncthreads();
  for (int k = 0;; k ^= 1) {
    const std::size_t chunk = taken[k];
    if (chunk >= chunks) break;  // the same for every thread: they all read taken[k] here
    unsigned next = 0;
    if (threadIdx.x == 0) next = atomicAdd(&counter[0], 1u);  // used after the copy
    const std::size_t i = chunk * kChunkWords + threadIdx.x;
    if ((chunk + 1) * kChunkWords <= n) {
      const uint4 a = w.load(i), b = w.load(i + kCopyThreads), c = w.load(i + 2 * kCopyThreads),
                  d = w.load(i + 3 * kCopyThreads);
      w.store(i, a), w.store(i + kCopyThreads, b), w.store(i + 2 * kCopyThreads, c), w.store(i + 3 * kCopyThreads, d);
    } else {
      for (std::size_t j = i; j < n; j += kCopyThreads) w.store(j, w.load(j));  // the last chunk, cut short
    }
    if (threadIdx.x == 0) taken[k ^ 1] = next;
    __syncthreads();  // taken[k ^ 1] written; taken[k] read by all, so the next round may overwrite it
  }
  if (threadIdx.x != 0) return;
  __threadfence();  // this CTA's last take from counter[0] comes before its count in counter[1]
  if (atomicAdd(&counter[1], 1u) == gridDim.x - 1) {
    __threadfence();  // ... so every CTA's takes come before this reset
    counter[0] = 0;
    counter[1] = 0;
  }
}

__global__ void sm_copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, std::size_t n) {
  copy_grid_stride(FlatWords{src, dst, n});
}

// Every resident CTA takes chunks (8 of 256 threads a SM: the launch bounds keep them resident).
__global__ void __launch_bounds__(kCopyThreads, 8)
    sm_copy_chunks_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, std::size_t n, unsigned* counter) {
  copy_chunks(FlatWords{src, dst, n}, counter);
}

// The SM copy of a boundary's own bytes, waiting for the previous grid as the fused kernels do
// (PDL). The chunked one touches its counter only after the wait: the previous launch's reset
// is visible from then on.
template <bool kWide>
__global__ void boundary_copy_kernel(const uint4* __restrict__ branch, uint4* __restrict__ out, std::size_t n_branch,
                                     const uint4* __restrict__ stream, uint4* __restrict__ new_stream, std::size_t n) {
  wait_then_trigger();
  copy_grid_stride(BoundaryWords<kWide>{branch, out, n_branch, stream, new_stream, n});
}

template <bool kWide>
__global__ void __launch_bounds__(kCopyThreads, 8)
    boundary_copy_chunks_kernel(const uint4* __restrict__ branch, uint4* __restrict__ out, std::size_t n_branch,
                                const uint4* __restrict__ stream, uint4* __restrict__ new_stream, std::size_t n,
                                unsigned* counter) {
  wait_then_trigger();
  copy_chunks(BoundaryWords<kWide>{branch, out, n_branch, stream, new_stream, n}, counter);
}

// Differing 16-byte words of a and b, added to *count: one atomic a thread at most.
__global__ void count_differences_kernel(const uint4* a, const uint4* b, std::size_t n, unsigned long long* count) {
  unsigned long long differing = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const uint4 x = a[i], y = b[i];
    differing += (x.x != y.x || x.y != y.y || x.z != y.z || x.w != y.w) ? 1 : 0;
  }
  if (differing != 0) atomicAdd(count, differing);
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

const char* division_name(Division d) {
  return d == Division::grid_stride ? "grid-stride" : "chunks handed out at run time";
}

void launch_sm_copy(Division d, const void* src, void* dst, std::size_t bytes, unsigned* counter, int sm_count,
                    cudaStream_t s) {
  const auto blocks = static_cast<unsigned>(sm_count * 8);  // 2048 threads per SM: a full GPU
  const auto* from = static_cast<const uint4*>(src);
  auto* to = static_cast<uint4*>(dst);
  if (d == Division::grid_stride) sm_copy_kernel<<<blocks, kCopyThreads, 0, s>>>(from, to, bytes / 16);
  else sm_copy_chunks_kernel<<<blocks, kCopyThreads, 0, s>>>(from, to, bytes / 16, counter);
  gpu::cuda_check(cudaGetLastError(), "launching the SM copy kernel");
}

void launch_boundary_copy(Division d, StreamDtype stream, const BoundaryCopy& c, std::int64_t m, unsigned* counter,
                          int sm_count, cudaStream_t s) {
  const std::size_t elements = static_cast<std::size_t>(m) * kH;
  BoundaryCopy k = c;  // the launch takes the arguments' addresses
  const bool wide = stream == StreamDtype::bf16;
  std::size_t n_branch = elements * 2 / 16, n = n_branch + elements * (wide ? 2 : 4) / 16;
  const auto blocks = static_cast<unsigned>(sm_count * 8);
  if (d == Division::grid_stride)
    launch(wide ? reinterpret_cast<const void*>(boundary_copy_kernel<true>)
                : reinterpret_cast<const void*>(boundary_copy_kernel<false>),
           blocks, kCopyThreads, true, s, "boundary copy kernel", &k.branch, &k.out, &n_branch, &k.stream,
           &k.new_stream, &n);
  else
    launch(wide ? reinterpret_cast<const void*>(boundary_copy_chunks_kernel<true>)
                : reinterpret_cast<const void*>(boundary_copy_chunks_kernel<false>),
           blocks, kCopyThreads, true, s, "chunked boundary copy kernel", &k.branch, &k.out, &n_branch, &k.stream,
           &k.new_stream, &n, &counter);
}

void launch_count_differences(const void* a, const void* b, std::size_t bytes, unsigned long long* count,
                              cudaStream_t s) {
  count_differences_kernel<<<1024, 256, 0, s>>>(static_cast<const uint4*>(a), static_cast<const uint4*>(b), bytes / 16,
                                                count);
  gpu::cuda_check(cudaGetLastError(), "launching count_differences");
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
  // A floor with a stack times its own local-memory traffic: 96 bytes a thread (its parameter
  // array indexed at run time) kept the traffic kernel above the boundary from m = 64.
  if (a.localSizeBytes != 0)
    throw std::runtime_error("the traffic kernel has " + std::to_string(a.localSizeBytes) +
                             " bytes of local memory a thread: its floor would time their traffic");
  gpu::cuda_check(cudaFuncGetAttributes(&a, sm_copy_kernel), "loading the SM copy kernel");
  gpu::cuda_check(cudaFuncGetAttributes(&a, sm_copy_chunks_kernel), "loading the chunked SM copy kernel");
  gpu::cuda_check(cudaFuncGetAttributes(&a, boundary_copy_kernel<false>), "loading the boundary copy kernel");
  gpu::cuda_check(cudaFuncGetAttributes(&a, boundary_copy_kernel<true>), "loading the widening boundary copy kernel");
  gpu::cuda_check(cudaFuncGetAttributes(&a, boundary_copy_chunks_kernel<false>),
                  "loading the chunked boundary copy kernel");
  gpu::cuda_check(cudaFuncGetAttributes(&a, boundary_copy_chunks_kernel<true>),
                  "loading the chunked widening boundary copy kernel");
  gpu::cuda_check(cudaFuncGetAttributes(&a, count_differences_kernel), "loading the compare kernel");
  gpu::cuda_check(cudaFuncGetAttributes(&a, fill_pattern_kernel), "loading the fill kernel");
}

}  // namespace boundary::bench
