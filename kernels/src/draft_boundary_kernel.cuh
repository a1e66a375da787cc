// The fused DraftBoundary kernel in its two layouts (Variant::layout): Layout::cta here, a
// persistent grid of one CTA of 1024 threads per SM, each CTA running rows blockIdx.x,
// blockIdx.x + gridDim.x, ... through a ring of row stages in shared memory that the copy engine
// fills (cp.async.bulk), so that the next rows stream in while one reduces; one 8-column fragment a
// thread (thread i: columns 8 i .. 8 i + 7, fragment i / 256 of reference thread i % 256), the
// row sums through the CTA layer of one fragment a thread (row_sum.cuh). Layout::cluster is in
// cluster_boundary_kernel.cuh.
//
// One source, several builds: the production kernel (draft_boundary_kernel.cu), the debug build
// that also writes the intermediates (draft_boundary_debug.cu), and the planted-bug builds
// (draft_boundary_mutant.cu, once per BOUNDARY_MUTANT). Everything here has internal linkage, so
// that the builds link side by side, each in its translation unit's own unnamed namespace.
#pragma once

#include "cluster_boundary_kernel.cuh"
#include "launch.hpp"

#include <boundary/device/bulk_copy.cuh>
#include <boundary/device/fragment_stages.cuh>
#include <boundary/device/pdl_launch.cuh>
#include <boundary/gpu/diagnostics.hpp>
#include <boundary/mutant.hpp>

#include <algorithm>
#include <type_traits>

namespace boundary::gpu::detail {

namespace {

using namespace boundary::dev;

// One row's inputs as the copy engine lands them.
template <bool kStreamF32>
struct RowStage {
  using Stream = std::conditional_t<kStreamF32, float, std::uint16_t>;
  std::uint16_t branch[kH];
  Stream stream[kH];
};

// A CTA's shared memory: the ring of row stages (as many as fit beside the rest: 3 rows with an
// F32 stream, 4 with BF16), the weights' gamma (computed once per CTA, each thread's own
// columns: shared memory as room the registers lack), the row sums' scratch, and one barrier a
// stage. Over half an SM's shared memory: one CTA per SM.
template <bool kStreamF32>
struct CtaShared {
  static constexpr int kStages = kStreamF32 ? 3 : 4;
  RowStage<kStreamF32> stage[kStages];
  float post_gamma[kH], pre_gamma[kH];
  FragmentSumScratch sum;
  std::uint64_t landed[kStages];
};
static_assert(sizeof(CtaShared<true>) <= 227 * 1024 && sizeof(CtaShared<false>) <= 227 * 1024,
              "a CTA's shared memory must fit an sm_90 SM");

template <bool kStreamF32>
__device__ __forceinline__ CtaShared<kStreamF32>& cta_shared() {
  extern __shared__ __align__(128) unsigned char shared_bytes[];
  return *reinterpret_cast<CtaShared<kStreamF32>*>(shared_bytes);
}

// Starts the copy of row `row`'s branch and stream into stage `slot`.
template <bool kStreamF32>
__device__ __forceinline__ void load_row(const BoundaryParams& p, std::int64_t row, CtaShared<kStreamF32>& sh,
                                         int slot) {
  RowStage<kStreamF32>& st = sh.stage[slot];
  const auto at = static_cast<std::size_t>(row) * kH;
  barrier_arrive_expect_bytes(&sh.landed[slot], sizeof(st.branch) + sizeof(st.stream));
  bulk_copy_to_shared(st.branch, p.branch + at, sizeof(st.branch), &sh.landed[slot]);
  bulk_copy_to_shared(st.stream, static_cast<const typename RowStage<kStreamF32>::Stream*>(p.stream) + at,
                      sizeof(st.stream), &sh.landed[slot]);
}

// This thread's fragment of a landed stage: the branch in x, the stream in s (as FP32).
template <bool kStreamF32>
__device__ __forceinline__ void read_stage(const RowStage<kStreamF32>& st, int column, float (&x)[kVec],
                                           float (&s)[kVec]) {
  unpack_bf16x8(*reinterpret_cast<const uint4*>(st.branch + column), x);
  if constexpr (kStreamF32) {
    read_f32x8(st.stream + column, s);
  } else {
    unpack_bf16x8(*reinterpret_cast<const uint4*>(st.stream + column), s);
  }
}

// A norm's gamma for this thread's columns, from the CTA's copy (norm_fragments' Gamma).
__device__ __forceinline__ auto gamma_in_shared(const float* gamma, int column) {
  return [gamma, column](int, float (&g)[kVec]) { read_f32x8(gamma + column, g); };
}

__device__ __forceinline__ void store_row_value(float* p, std::int64_t row, float v) {
  if (p && threadIdx.x == 0) p[row] = v;
}

// The rows of one CTA; the kernels below differ only in what else they write (d).
//
// The gates stay in registers and the gammas in shared memory for all the CTA's rows: loaded
// once, before the PDL wait (overlapping the previous grid's tail) unless late. Thread 0 keeps
// kStages rows in flight: it refills a stage as soon as the post norm's row sum has passed its
// barriers, by which time every thread has read that stage.
template <bool kStreamF32, bool kStore, class Intermediates>
__device__ __forceinline__ void boundary_rows(const BoundaryParams& p, const Intermediates& d) {
  constexpr bool kDebug = !std::is_same_v<Intermediates, NoIntermediates>;
  using Shared = CtaShared<kStreamF32>;
  constexpr int kStages = Shared::kStages;
  Shared& sh = cta_shared<kStreamF32>();
  const int column = kVec * static_cast<int>(threadIdx.x);
  if (threadIdx.x == 0) {
#pragma unroll
    for (int i = 0; i < kStages; ++i) barrier_init(&sh.landed[i], 1);
    fence_proxy_async_shared();
  }
  float alpha[kVec], beta[kVec];
  const bool late = p.late_gates;
  const auto load_gates = [&] {
    const int c = gate_column(column, late);
    load_f32x8(p.alpha + c, alpha);
    load_f32x8(p.beta + c, beta);
    float g[kVec];
    if (has_weight(p.post)) load_gamma(p.post, c, g), store_f32x8(sh.post_gamma + column, g);
    if (has_weight(p.pre)) load_gamma(p.pre, c, g), store_f32x8(sh.pre_gamma + column, g);
  };
  if (!late) load_gates();
  __syncthreads();  // the barriers are initialised
  pdl_wait();
  pdl_launch_dependents();
  const std::int64_t first = blockIdx.x, step = gridDim.x;
  if (threadIdx.x == 0)
#pragma unroll
    for (int i = 0; i < kStages; ++i)
      if (first + i * step < p.rows) load_row(p, first + i * step, sh, i);
  if (late) load_gates();  // while the first rows' copies are under way

  int slot = 0;
  std::uint32_t parity = 0;
  for (std::int64_t row = first; row < p.rows; row += step) {
    barrier_wait(&sh.landed[slot], parity);
    float x[1][kVec], s[1][kVec];
    read_stage(sh.stage[slot], column, x[0], s[0]);
    const auto row_sum = [&](float t) { return cta_fragment_row_sum(t, sh.sum); };

    // Post norm -> y_b.
    const RowNorm post = norm_fragments(p.post, gamma_in_shared(sh.post_gamma, column), x, row_sum, post_factor);
    if (threadIdx.x == 0 && row + kStages * step < p.rows) {
      fence_proxy_async_shared();
      load_row(p, row + kStages * step, sh, slot);
    }
    const std::size_t at = static_cast<std::size_t>(row) * kH + column;
    if constexpr (kDebug) {
      store_row_value(d.post_row_sum, row, post.row_sum);
      store_row_value(d.r1, row, post.factor);
      if (d.y_b) *reinterpret_cast<uint4*>(d.y_b + at) = pack_bf16x8(x[0]);
    }
    // Connection: res (kept in s: it is the new stream), z = bf16(res) (in x).
    connect_fragment(alpha, beta, x[0], s[0]);
    if constexpr (kStore) store_warp_f32x8(p.new_stream + at, s[0]);
    if constexpr (kDebug) {
      if (d.res) store_warp_f32x8(d.res + at, s[0]);
      if (d.z) *reinterpret_cast<uint4*>(d.z + at) = pack_bf16x8(x[0]);
    }
    // Pre norm -> out.
    const RowNorm pre = norm_fragments(p.pre, gamma_in_shared(sh.pre_gamma, column), x, row_sum);
    if constexpr (kDebug) {
      store_row_value(d.pre_row_sum, row, pre.row_sum);
      store_row_value(d.r2, row, pre.factor);
    }
    *reinterpret_cast<uint4*>(p.out + at) = pack_bf16x8(x[0]);
    if (++slot == kStages) slot = 0, parity ^= 1u;
  }
}

template <bool kStreamF32, bool kStore>
__global__ void __launch_bounds__(kRowThreads, 1) draft_boundary_kernel(const BoundaryParams p) {
  boundary_rows<kStreamF32, kStore>(p, NoIntermediates{});
}

// The debug build: the same rows, also writing the intermediates d asks for.
template <bool kStreamF32, bool kStore>
__global__ void __launch_bounds__(kRowThreads, 1) draft_boundary_debug_kernel(const BoundaryParams p,
                                                                             const DeviceIntermediates d) {
  boundary_rows<kStreamF32, kStore>(p, d);
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

inline std::size_t cta_shared_bytes(const Variant& v) {
  return v.stream == StreamDtype::f32 ? sizeof(CtaShared<true>) : sizeof(CtaShared<false>);
}

// Lets the variant's kernel have its shared memory (above the 48 KB default) and loads its module
// now, not lazily at its first launch. Host-side only: also allowed during a capture.
template <bool kDebug>
cudaError_t allow_cta_kernel(const Variant& v) {
  return cudaFuncSetAttribute(kernel_for<kDebug>(v), cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(cta_shared_bytes(v)));
}

// m rows in the variant's layout, with its gates and PDL; d: NoIntermediates (production and
// planted-bug builds) or the debug build's DeviceIntermediates. The cta layout runs
// min(m, p.ctas) CTAs.
template <class Intermediates>
cudaError_t launch_layout(const BoundaryParams& p, std::int64_t m, const Variant& v, cudaStream_t s,
                          const Intermediates& d) {
  if (v.layout == Layout::cluster) return launch_cluster_rows<true>(single_rank(p), m, v, s, d);
  BoundaryParams q = p;
  q.late_gates = v.late_gates;
  q.rows = m;
  constexpr bool kDebug = !std::is_same_v<Intermediates, NoIntermediates>;
  if (const cudaError_t e = allow_cta_kernel<kDebug>(v); e != cudaSuccess) return e;
  const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>(m, p.ctas)));
  // kernel_for<kDebug>: a dependent name, so that a build instantiates only its own kernels.
  if constexpr (kDebug)
    return launch_pdl_shared(kernel_for<kDebug>(v), grid, dim3(kRowThreads), cta_shared_bytes(v), v.pdl, s, q, d);
  else
    return launch_pdl_shared(kernel_for<kDebug>(v), grid, dim3(kRowThreads), cta_shared_bytes(v), v.pdl, s, q);
}

template <class Intermediates>
cudaError_t prepare_layout(const Variant& v) {
  if (v.layout == Layout::cluster) return prepare_cluster_rows<true, Intermediates>(v);
  return allow_cta_kernel<!std::is_same_v<Intermediates, NoIntermediates>>(v);
}

}  // namespace

}  // namespace boundary::gpu::detail
