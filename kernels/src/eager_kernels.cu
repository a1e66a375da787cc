// The stock eager chain's kernels (contract section 6): the single-tile RMSNorm (one CTA of 256
// threads per row, the reference layout) and the elementwise connection.
#include "launch.hpp"

#include <boundary/device/boundary_fragments.cuh>

namespace boundary::gpu::detail {

namespace {

using namespace boundary::dev;

__device__ __forceinline__ int column_of(int k) { return 2048 * k + kVec * static_cast<int>(threadIdx.x); }

__global__ void __launch_bounds__(kThreads) norm_kernel(const std::uint16_t* in, std::uint16_t* out, const NormArgs n) {
  __shared__ float sums[kWarps];
  const std::size_t row = static_cast<std::size_t>(blockIdx.x) * kH;
  float g[kFragments][kVec], x[kFragments][kVec];
#pragma unroll
  for (int k = 0; k < kFragments; ++k) {
    if (has_weight(n)) gamma(n, column_of(k), g[k]);
    unpack_bf16x8(*reinterpret_cast<const uint4*>(in + row + column_of(k)), x[k]);
  }
  norm_fragments(n, gains_in_registers(g), x, [&](float t) { return cta_row_sum(t, sums); });
#pragma unroll
  for (int k = 0; k < kFragments; ++k) *reinterpret_cast<uint4*>(out + row + column_of(k)) = pack_bf16x8(x[k]);
}

// One thread per 8 columns of one row.
template <bool kStreamF32>
__global__ void __launch_bounds__(kThreads) connection_kernel(const BoundaryParams p, const std::uint16_t* y_b,
                                                              std::uint16_t* z, std::int64_t groups) {
  const std::int64_t gidx = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (gidx >= groups) return;
  const std::size_t at = static_cast<std::size_t>(gidx) * kVec;
  const int c = static_cast<int>(at % kH);
  float y[kVec], s[kVec], res[kVec];
  unpack_bf16x8(*reinterpret_cast<const uint4*>(y_b + at), y);
  if constexpr (kStreamF32) {
    const float4 a = *reinterpret_cast<const float4*>(static_cast<const float*>(p.stream) + at);
    const float4 b = *(reinterpret_cast<const float4*>(static_cast<const float*>(p.stream) + at) + 1);
    s[0] = a.x, s[1] = a.y, s[2] = a.z, s[3] = a.w, s[4] = b.x, s[5] = b.y, s[6] = b.z, s[7] = b.w;
  } else {
    unpack_bf16x8(*reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(p.stream) + at), s);
  }
#pragma unroll
  for (int i = 0; i < kVec; ++i) res[i] = connection(__ldg(p.alpha + c + i), s[i], __ldg(p.beta + c + i), y[i]);
  if (p.new_stream) {
    float4* d = reinterpret_cast<float4*>(p.new_stream + at);
    d[0] = make_float4(res[0], res[1], res[2], res[3]);
    d[1] = make_float4(res[4], res[5], res[6], res[7]);
  }
  *reinterpret_cast<uint4*>(z + at) = pack_bf16x8(res);
}

}  // namespace

cudaError_t launch_norm(const std::uint16_t* in, std::uint16_t* out, const NormArgs& n, std::int64_t m, cudaStream_t s) {
  norm_kernel<<<static_cast<unsigned>(m), kThreads, 0, s>>>(in, out, n);
  return cudaGetLastError();
}

cudaError_t launch_connection(const BoundaryParams& p, const std::uint16_t* y_b, std::uint16_t* z, std::int64_t m,
                              StreamDtype stream_dtype, cudaStream_t s) {
  const std::int64_t groups = m * kH / kVec;
  const auto blocks = static_cast<unsigned>((groups + kThreads - 1) / kThreads);
  if (stream_dtype == StreamDtype::f32) connection_kernel<true><<<blocks, kThreads, 0, s>>>(p, y_b, z, groups);
  else connection_kernel<false><<<blocks, kThreads, 0, s>>>(p, y_b, z, groups);
  return cudaGetLastError();
}

cudaError_t prepare_eager() {
  cudaFuncAttributes a{};
  for (cudaError_t e : {cudaFuncGetAttributes(&a, norm_kernel), cudaFuncGetAttributes(&a, connection_kernel<true>),
                        cudaFuncGetAttributes(&a, connection_kernel<false>)})
    if (e != cudaSuccess) return e;
  return cudaSuccess;
}

}  // namespace boundary::gpu::detail
