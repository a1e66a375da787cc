// The fused DraftBoundary kernel in its two layouts (Variant::layout): Layout::cta here, post
// norm -> connection -> pre norm of one row per CTA of 256 threads, each thread four 8-column
// fragments (column 2048 k + 8 t + i, the contract's reference layout), 16-byte loads and
// stores, the row sums through the shared CTA layer; Layout::cluster in cluster_boundary_kernel.cuh.
//
// One source, several builds: the production kernel (draft_boundary_kernel.cu), the debug build
// that also writes the intermediates (draft_boundary_debug.cu), and the planted-bug builds
// (draft_boundary_mutant.cu, once per BOUNDARY_MUTANT). Everything here has internal linkage, so
// that the builds link side by side, each in its translation unit's own unnamed namespace.
#pragma once

#include "cluster_boundary_kernel.cuh"
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

__device__ __forceinline__ void store_row_value(float* p, float v) {
  if (p && threadIdx.x == 0) p[blockIdx.x] = v;
}

// One row of the boundary; the kernels below differ only in what else they write (d).
//
// The gates and weights are loaded where they are used, not held: the same 96 KB serve every row,
// so after the first row on an SM they come from its L1, and without them in registers several
// CTAs fit on an SM, whose loads overlap each other's reductions. Early gates (m up to the SM
// count) are brought into L1 before the PDL wait, overlapping the previous grid's tail.
template <bool kStreamF32, bool kStore, class Intermediates>
__device__ __forceinline__ void boundary_row(const BoundaryParams& p, const Intermediates& d, float* post_sums,
                                             float* pre_sums) {
  constexpr bool kDebug = !std::is_same_v<Intermediates, NoIntermediates>;
  const std::size_t row = static_cast<std::size_t>(blockIdx.x) * kH;
  int columns[kFragments];
#pragma unroll
  for (int k = 0; k < kFragments; ++k) columns[k] = column_of(k);
  const bool late = p.late_gates;
  if (!late)
#pragma unroll
    for (int k = 0; k < kFragments; ++k) prefetch_gates_l1(p.alpha, p.beta, p.post, p.pre, columns[k]);
  pdl_wait();
  pdl_launch_dependents();
  // The row a CTA of the next wave will read: on its way into L2 while this row computes.
  const unsigned ahead = blockIdx.x + static_cast<unsigned>(p.prefetch_distance);
  if (threadIdx.x == 0 && ahead < gridDim.x) {
    prefetch_l2(p.branch + static_cast<std::size_t>(ahead) * kH, kH * sizeof(std::uint16_t));
    prefetch_l2(static_cast<const char*>(p.stream) + static_cast<std::size_t>(ahead) * kH * (kStreamF32 ? 4 : 2),
                kH * (kStreamF32 ? 4u : 2u));
  }

  // The whole row in flight at once: the stream's latency hides behind the post norm.
  uint4 branch_raw[kFragments];
  float x[kFragments][kVec], s[kFragments][kVec];
#pragma unroll
  for (int k = 0; k < kFragments; ++k) branch_raw[k] = load_row_16(p.branch + row + columns[k]);
#pragma unroll
  for (int k = 0; k < kFragments; ++k) {
    load_stream<kStreamF32>(p.stream, row + columns[k], s[k]);
    unpack_bf16x8(branch_raw[k], x[k]);
  }
  const auto gamma_of = [&](const NormArgs& n) {
    return [&n, &columns, late](int k, float (&g)[kVec]) { load_gamma(n, gate_column(columns[k], late), g); };
  };

  // Post norm -> y_b.
  const RowNorm post =
      norm_fragments(p.post, gamma_of(p.post), x, [&](float t) { return cta_row_sum(t, post_sums); }, post_factor);
  if constexpr (kDebug) {
    store_row_value(d.post_row_sum, post.row_sum);
    store_row_value(d.r1, post.factor);
#pragma unroll
    for (int k = 0; k < kFragments; ++k)
      if (d.y_b) *reinterpret_cast<uint4*>(d.y_b + row + columns[k]) = pack_bf16x8(x[k]);
  }
  // Connection: res (kept in s: it is the new stream), z = bf16(res) (in x).
#pragma unroll
  for (int k = 0; k < kFragments; ++k) {
    float alpha[kVec], beta[kVec];
    const int c = gate_column(columns[k], late);
    load_f32x8(p.alpha + c, alpha);
    load_f32x8(p.beta + c, beta);
    connect_fragment(alpha, beta, x[k], s[k]);
    if constexpr (kStore) store_f32x8(p.new_stream + row + columns[k], s[k]);
    if constexpr (kDebug) {
      if (d.res) store_f32x8(d.res + row + columns[k], s[k]);
      if (d.z) *reinterpret_cast<uint4*>(d.z + row + columns[k]) = pack_bf16x8(x[k]);
    }
  }
  // Pre norm -> out.
  const RowNorm pre = norm_fragments(p.pre, gamma_of(p.pre), x, [&](float t) { return cta_row_sum(t, pre_sums); });
  if constexpr (kDebug) {
    store_row_value(d.pre_row_sum, pre.row_sum);
    store_row_value(d.r2, pre.factor);
  }
#pragma unroll
  for (int k = 0; k < kFragments; ++k)
    *reinterpret_cast<uint4*>(p.out + row + columns[k]) = pack_bf16x8(x[k]);
}

// CTAs per SM the registers are capped for: 3 with a BF16 stream (80 registers), 2 with an F32
// stream, whose row holds 32 more (capped for 3 it spills to local memory).
template <bool kStreamF32, bool kStore>
__global__ void __launch_bounds__(kThreads, kStreamF32 ? 2 : 3) draft_boundary_kernel(const BoundaryParams p) {
  __shared__ float post_sums[kWarps], pre_sums[kWarps];
  boundary_row<kStreamF32, kStore>(p, NoIntermediates{}, post_sums, pre_sums);
}

// The debug build: the same row, also writing the intermediates d asks for.
template <bool kStreamF32, bool kStore>
__global__ void __launch_bounds__(kThreads) draft_boundary_debug_kernel(const BoundaryParams p, const DeviceIntermediates d) {
  __shared__ float post_sums[kWarps], pre_sums[kWarps];
  boundary_row<kStreamF32, kStore>(p, d, post_sums, pre_sums);
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

// Loads the kernel's module now, not lazily at its first launch.
template <class Kernel>
cudaError_t prepare_kernel(Kernel kernel) {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, kernel);
}

// m rows in the variant's layout, with its gates and PDL; d: NoIntermediates (production and
// planted-bug builds) or the debug build's DeviceIntermediates.
template <class Intermediates>
cudaError_t launch_layout(const BoundaryParams& p, std::int64_t m, const Variant& v, cudaStream_t s,
                          const Intermediates& d) {
  if (v.layout == Layout::cluster) return launch_cluster_rows<true>(single_rank(p), m, v, s, d);
  BoundaryParams q = p;
  q.late_gates = v.late_gates;
  constexpr bool kDebug = !std::is_same_v<Intermediates, NoIntermediates>;
  // kernel_for<kDebug>: a dependent name, so that a build instantiates only its own kernels.
  if constexpr (kDebug)
    return launch_pdl(kernel_for<kDebug>(v), dim3(static_cast<unsigned>(m)), dim3(kThreads), v.pdl, s, q, d);
  else
    return launch_pdl(kernel_for<kDebug>(v), dim3(static_cast<unsigned>(m)), dim3(kThreads), v.pdl, s, q);
}

template <class Intermediates>
cudaError_t prepare_layout(const Variant& v) {
  if (v.layout == Layout::cluster) return prepare_cluster_rows<true, Intermediates>(v);
  return prepare_kernel(kernel_for<!std::is_same_v<Intermediates, NoIntermediates>>(v));
}

}  // namespace

}  // namespace boundary::gpu::detail
