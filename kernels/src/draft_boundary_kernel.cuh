// The fused DraftBoundary kernel: post norm -> connection -> pre norm of one row per CTA of
// 256 threads, each thread four 8-column fragments (column 2048 k + 8 t + i, the contract's
// reference layout), 16-byte loads and stores, the row sums through the shared CTA layer.
//
// One source, several builds: the production kernel (draft_boundary_kernel.cu), the debug build
// that also writes the intermediates (draft_boundary_debug.cu), and the planted-bug builds
// (draft_boundary_mutant.cu, once per BOUNDARY_MUTANT). Everything here has internal linkage, so
// that the builds link side by side, each in its translation unit's own unnamed namespace.
#pragma once

#include "launch.hpp"

#include <boundary/device/fragment_stages.cuh>
#include <boundary/device/pdl_launch.cuh>
#include <boundary/gpu/diagnostics.hpp>
#include <boundary/mutant.hpp>

#include <type_traits>

namespace boundary::gpu::detail {

namespace {

using namespace boundary::dev;

__device__ __forceinline__ int column_of(int k) { return 2048 * k + kVec * static_cast<int>(threadIdx.x); }

// What the production build writes besides out and new_stream: nothing.
struct NoIntermediates {};

__device__ __forceinline__ void store_row_value(float* p, float v) {
  if (p && threadIdx.x == 0) p[blockIdx.x] = v;
}

// One row of the boundary; the kernels below differ only in what else they write (d).
template <bool kStreamF32, bool kStore, class Intermediates>
__device__ __forceinline__ void boundary_row(const BoundaryParams& p, const Intermediates& d, float* post_sums,
                                             float* pre_sums) {
  constexpr bool kDebug = !std::is_same_v<Intermediates, NoIntermediates>;
  const std::size_t row = static_cast<std::size_t>(blockIdx.x) * kH;
  int columns[kFragments];
#pragma unroll
  for (int k = 0; k < kFragments; ++k) columns[k] = column_of(k);
  Gates<kFragments> g;
  // Early gates overlap the previous grid's tail under PDL.
  if (!p.late_gates) load_gates(p.alpha, p.beta, p.post, p.pre, columns, false, g);
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
  if (p.late_gates) load_gates(p.alpha, p.beta, p.post, p.pre, columns, true, g);

  uint4 branch_raw[kFragments];
  float x[kFragments][kVec], s[kFragments][kVec];
#pragma unroll
  for (int k = 0; k < kFragments; ++k)
    branch_raw[k] = *reinterpret_cast<const uint4*>(p.branch + row + columns[k]);
#pragma unroll
  for (int k = 0; k < kFragments; ++k) {
    load_stream<kStreamF32>(p.stream, row + columns[k], s[k]);
    unpack_bf16x8(branch_raw[k], x[k]);
  }

  // Post norm -> y_b.
  const RowNorm post =
      norm_fragments(p.post, g.post_gamma, x, [&](float t) { return cta_row_sum(t, post_sums); }, post_factor);
  if constexpr (kDebug) {
    store_row_value(d.post_row_sum, post.row_sum);
    store_row_value(d.r1, post.factor);
#pragma unroll
    for (int k = 0; k < kFragments; ++k)
      if (d.y_b) *reinterpret_cast<uint4*>(d.y_b + row + columns[k]) = pack_bf16x8(x[k]);
  }
  // Connection: res (kept in s: it is the new stream), z = bf16(res) (in x).
  connect_fragments(g, x, s);
  if constexpr (kStore) {
#pragma unroll
    for (int k = 0; k < kFragments; ++k) store_f32x8(p.new_stream + row + columns[k], s[k]);
  }
  if constexpr (kDebug) {
#pragma unroll
    for (int k = 0; k < kFragments; ++k) {
      if (d.res) store_f32x8(d.res + row + columns[k], s[k]);
      if (d.z) *reinterpret_cast<uint4*>(d.z + row + columns[k]) = pack_bf16x8(x[k]);
    }
  }
  // Pre norm -> out.
  const RowNorm pre = norm_fragments(p.pre, g.pre_gamma, x, [&](float t) { return cta_row_sum(t, pre_sums); });
  if constexpr (kDebug) {
    store_row_value(d.pre_row_sum, pre.row_sum);
    store_row_value(d.r2, pre.factor);
  }
#pragma unroll
  for (int k = 0; k < kFragments; ++k)
    *reinterpret_cast<uint4*>(p.out + row + columns[k]) = pack_bf16x8(x[k]);
}

template <bool kStreamF32, bool kStore>
__global__ void __launch_bounds__(kThreads) draft_boundary_kernel(const BoundaryParams p) {
  __shared__ float post_sums[kWarps], pre_sums[kWarps];
  boundary_row<kStreamF32, kStore>(p, NoIntermediates{}, post_sums, pre_sums);
}

// The debug build: the same row, also writing the intermediates d asks for.
template <bool kStreamF32, bool kStore>
__global__ void __launch_bounds__(kThreads) draft_boundary_debug_kernel(const BoundaryParams p, const DeviceIntermediates d) {
  __shared__ float post_sums[kWarps], pre_sums[kWarps];
  boundary_row<kStreamF32, kStore>(p, d, post_sums, pre_sums);
}

// The instantiation for a variant's stream dtype and storage: pick(bool_constant<kStreamF32>,
// bool_constant<kStore>).
template <class Pick>
auto for_variant(const Variant& v, Pick pick) {
  using T = std::true_type;
  using F = std::false_type;
  if (v.stream == StreamDtype::f32) return v.store_stream ? pick(T{}, T{}) : pick(T{}, F{});
  return v.store_stream ? pick(F{}, T{}) : pick(F{}, F{});
}

// The production (kDebug false) or debug kernel of a variant. A template, so that a build
// instantiates only the kernels it launches.
template <bool kDebug>
auto kernel_for(const Variant& v) {
  return for_variant(v, [](auto f32, auto store) {
    constexpr bool kF32 = decltype(f32)::value, kStore = decltype(store)::value;
    if constexpr (kDebug) return draft_boundary_debug_kernel<kF32, kStore>;
    else return draft_boundary_kernel<kF32, kStore>;
  });
}

// m rows, one CTA each, with the variant's gates and PDL.
template <class... Extra>
cudaError_t launch_rows(void (*kernel)(BoundaryParams, Extra...), const BoundaryParams& p, std::int64_t m,
                        const Variant& v, cudaStream_t stream, const Extra&... extra) {
  BoundaryParams q = p;
  q.late_gates = v.late_gates;
  return launch_pdl(kernel, dim3(static_cast<unsigned>(m)), dim3(kThreads), v.pdl, stream, q, extra...);
}

// Loads the kernel's module now, not lazily at its first launch.
template <class Kernel>
cudaError_t prepare_kernel(Kernel kernel) {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, kernel);
}

}  // namespace

}  // namespace boundary::gpu::detail
