// The fused DraftBoundary kernel: post norm -> connection -> pre norm of one row per CTA of
// 256 threads, each thread four 8-column fragments (column 2048 k + 8 t + i, the contract's
// reference layout), 16-byte loads and stores, the row sums through the shared CTA layer.
#include "launch.hpp"

#include <boundary/device/boundary_fragments.cuh>

namespace boundary::gpu::detail {

namespace {

using namespace boundary::dev;

__device__ __forceinline__ int column_of(int k) { return 2048 * k + kVec * static_cast<int>(threadIdx.x); }

struct Gates {
  float alpha[kFragments][kVec], beta[kFragments][kVec];
  float post_gamma[kFragments][kVec], pre_gamma[kFragments][kVec];
};

__device__ __forceinline__ void load_f32x8(const float* p, float (&v)[kVec]) {
  const float4 a = __ldg(reinterpret_cast<const float4*>(p));
  const float4 b = __ldg(reinterpret_cast<const float4*>(p) + 1);
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}

__device__ __forceinline__ void load_gates(const BoundaryParams& p, Gates& g) {
#pragma unroll
  for (int k = 0; k < kFragments; ++k) {
    const int c = column_of(k);
    load_f32x8(p.alpha + c, g.alpha[k]);
    load_f32x8(p.beta + c, g.beta[k]);
    if (has_weight(p.post)) load_gamma(p.post, c, g.post_gamma[k]);
    if (has_weight(p.pre)) load_gamma(p.pre, c, g.pre_gamma[k]);
  }
}

template <bool kStreamF32, bool kStore>
__global__ void __launch_bounds__(kThreads) draft_boundary_kernel(const BoundaryParams p) {
  __shared__ float post_sums[kWarps], pre_sums[kWarps];
  const std::size_t row = static_cast<std::size_t>(blockIdx.x) * kH;
  Gates g;
  if (!p.late_gates) load_gates(p, g);  // overlaps the previous grid's tail under PDL
  pdl_wait();
  pdl_launch_dependents();
  // The row a CTA of the next wave will read: on its way into L2 while this row computes, so
  // that HBM streams during the reductions (one CTA per SM leaves none of its own loads in flight).
  const unsigned ahead = blockIdx.x + static_cast<unsigned>(p.prefetch_distance);
  if (threadIdx.x == 0 && ahead < gridDim.x) {
    prefetch_l2(p.branch + static_cast<std::size_t>(ahead) * kH, kH * sizeof(std::uint16_t));
    prefetch_l2(static_cast<const char*>(p.stream) + static_cast<std::size_t>(ahead) * kH * (kStreamF32 ? 4 : 2),
                kH * (kStreamF32 ? 4u : 2u));
  }
  if (p.late_gates) load_gates(p, g);

  uint4 branch_raw[kFragments];
  float x[kFragments][kVec], s[kFragments][kVec];
#pragma unroll
  for (int k = 0; k < kFragments; ++k)
    branch_raw[k] = *reinterpret_cast<const uint4*>(p.branch + row + column_of(k));
#pragma unroll
  for (int k = 0; k < kFragments; ++k) {
    if constexpr (kStreamF32) {
      const float* sp = static_cast<const float*>(p.stream) + row + column_of(k);
      const float4 a = *reinterpret_cast<const float4*>(sp), b = *(reinterpret_cast<const float4*>(sp) + 1);
      s[k][0] = a.x, s[k][1] = a.y, s[k][2] = a.z, s[k][3] = a.w;
      s[k][4] = b.x, s[k][5] = b.y, s[k][6] = b.z, s[k][7] = b.w;
    } else {
      unpack_bf16x8(*reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(p.stream) + row + column_of(k)),
                    s[k]);
    }
    unpack_bf16x8(branch_raw[k], x[k]);
  }

  // Post norm -> y_b.
  norm_fragments(p.post, g.post_gamma, x, [&](float t) { return cta_row_sum(t, post_sums); });
  // Connection: res (kept in s: it is the new stream), z = bf16(res) (in x).
#pragma unroll
  for (int k = 0; k < kFragments; ++k)
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      s[k][i] = connection(g.alpha[k][i], s[k][i], g.beta[k][i], round_bf16(x[k][i]));
      x[k][i] = round_bf16(s[k][i]);
    }
  if constexpr (kStore) {
#pragma unroll
    for (int k = 0; k < kFragments; ++k) {
      float4* d = reinterpret_cast<float4*>(p.new_stream + row + column_of(k));
      d[0] = make_float4(s[k][0], s[k][1], s[k][2], s[k][3]);
      d[1] = make_float4(s[k][4], s[k][5], s[k][6], s[k][7]);
    }
  }
  // Pre norm -> out.
  norm_fragments(p.pre, g.pre_gamma, x, [&](float t) { return cta_row_sum(t, pre_sums); });
#pragma unroll
  for (int k = 0; k < kFragments; ++k)
    *reinterpret_cast<uint4*>(p.out + row + column_of(k)) = pack_bf16x8(x[k]);
}

template <bool kStreamF32, bool kStore>
cudaError_t launch_variant(const BoundaryParams& p, std::int64_t m, bool pdl, cudaStream_t stream) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(m));
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  cudaLaunchAttribute attribute[1] = {};
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&config, draft_boundary_kernel<kStreamF32, kStore>, p);
}

template <bool kStreamF32, bool kStore>
cudaError_t prepare_variant() {
  cudaFuncAttributes attributes{};  // loads the kernel's module now, not lazily at first launch
  return cudaFuncGetAttributes(&attributes, draft_boundary_kernel<kStreamF32, kStore>);
}

}  // namespace

cudaError_t launch_draft_boundary(const BoundaryParams& p, std::int64_t m, const Variant& v, cudaStream_t s) {
  BoundaryParams q = p;
  q.late_gates = v.late_gates;
  const bool f32 = v.stream == StreamDtype::f32;
  if (f32) return v.store_stream ? launch_variant<true, true>(q, m, v.pdl, s) : launch_variant<true, false>(q, m, v.pdl, s);
  return v.store_stream ? launch_variant<false, true>(q, m, v.pdl, s) : launch_variant<false, false>(q, m, v.pdl, s);
}

cudaError_t prepare_draft_boundary(const Variant& v) {
  const bool f32 = v.stream == StreamDtype::f32;
  if (f32) return v.store_stream ? prepare_variant<true, true>() : prepare_variant<true, false>();
  return v.store_stream ? prepare_variant<false, true>() : prepare_variant<false, false>();
}

}  // namespace boundary::gpu::detail
