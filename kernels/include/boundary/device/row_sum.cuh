// The contract's summation tree (section 4) on the device, in named layers shared by every
// kernel: thread (chunk pairs of one fragment, fragments in order), warp (the xor butterfly),
// CTA (warp totals added in warp order). The steps carry the contract's names (section 10:
// chunk_pair, thread_sum, warp_sum, row_sum, norm_factor), as their emulator twins in
// boundary::ref do; ref::sum_of_squares is the whole tree.
#pragma once

#include <boundary/device/primitives.cuh>
#include <boundary/mutant.hpp>
#include <boundary/types.hpp>

namespace boundary::dev {

// The boundary's rounded products (ref::product): mul_rn, except that the ftz_products planted bug
// flushes a subnormal product to a zero of its sign.
__device__ __forceinline__ float product(float a, float b) {
  const float p = mul_rn(a, b);
  if constexpr (kMutant == Mutant::ftz_products)
    if (fabsf(p) < 0x1p-126f) return copysignf(0.0f, p);
  return p;
}

__device__ __forceinline__ float square_acc(float s, float a, bool fma_squares) {
  return fma_squares ? fma_rn(a, a, s) : add_rn(s, product(a, a));
}

// Thread layer: chunk_pair of one 8-column fragment, even and odd elements in two chains.
__device__ __forceinline__ float chunk_pair(const float (&v)[kVec], bool fma_squares) {
  float e = product(v[0], v[0]);
  float o = product(v[1], v[1]);
#pragma unroll
  for (int j = 1; j < kVec / 2; ++j) {
    e = square_acc(e, v[2 * j], fma_squares);
    o = square_acc(o, v[2 * j + 1], fma_squares);
  }
  return add_rn(e, o);
}

// Thread layer: the thread's fragments added in fragment order.
template <int kFragments>
__device__ __forceinline__ float thread_sum(const float (&v)[kFragments][kVec], bool fma_squares) {
  float s = chunk_pair(v[0], fma_squares);
#pragma unroll
  for (int k = 1; k < kFragments; ++k) s = add_rn(s, chunk_pair(v[k], fma_squares));
  return s;
}

// Warp layer: u = u + u[lane ^ d] for d = 16, 8, 4, 2, 1; every lane ends with the same bits.
__device__ __forceinline__ float warp_sum(float u) {
  if constexpr (kMutant == Mutant::warp_order) {
#pragma unroll
    for (int d = 1; d <= 16; d *= 2) u = add_rn(u, __shfl_xor_sync(0xFFFFFFFFu, u, d));
  } else {
#pragma unroll
    for (int d = 16; d >= 1; d /= 2) u = add_rn(u, __shfl_xor_sync(0xFFFFFFFFu, u, d));
  }
  return u;
}

// The warp totals of a row added in warp order: S = W[0] + W[1] + ... + W[7].
__device__ __forceinline__ float row_sum(const float* totals) {
  if constexpr (kMutant == Mutant::cross_warp_order) {
    float s = totals[kWarps - 1];
#pragma unroll
    for (int i = kWarps - 2; i >= 0; --i) s = add_rn(s, totals[i]);
    return s;
  } else {
    float s = totals[0];
#pragma unroll
    for (int i = 1; i < kWarps; ++i) s = add_rn(s, totals[i]);
    return s;
  }
}

// CTA layer: the warp layer, then the warp totals in warp order. scratch: 8 floats of shared
// memory used by this sum alone (one barrier, no reuse).
__device__ __forceinline__ float cta_row_sum(float thread_total, float* scratch) {
  const float w = warp_sum(thread_total);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = w;
  __syncthreads();
  return row_sum(scratch);
}

// Thread layer when a reference thread's fragments sit in four threads: its chunk pairs, stored at
// first[k * stride] for fragment k, added in fragment order (thread_sum of the contract).
__device__ __forceinline__ float thread_sum(const float* first, int stride) {
  // The fragment_order mutant adds them last first (3 .. 0): every fused layout's fold of a
  // reference thread's fragments is this one.
  constexpr bool kReversed = kMutant == Mutant::fragment_order;
  float s = first[(kReversed ? kFragments - 1 : 0) * stride];
#pragma unroll
  for (int i = 1; i < kFragments; ++i) s = add_rn(s, first[(kReversed ? kFragments - 1 - i : i) * stride]);
  return s;
}

// One fragment a thread: kRowThreads = 1024 fragments on a row, fragment i (columns 8 i .. 8 i + 7)
// being fragment i / 256 of reference thread i % 256.
inline constexpr int kRowThreads = kFragments * kThreads;

// Which fragment thread u of CTA j computes when a row runs on kCtas CTAs of 1024 / kCtas threads.
// CTA j holds reference warps W j .. W j + W - 1 (W = 8 / kCtas) whole, all four fragments of
// each: its warp w holds fragment w / W of reference warp W j + w % W. So a reference thread's four
// chunk pairs meet in one CTA, and only warp totals cross CTAs (one float a reference warp). With
// kCtas = 1 it is fragment u: thread i holds fragment i.
template <int kCtas>
__host__ __device__ constexpr int row_fragment(int cta, int thread) {
  constexpr int kCtaWarps = kWarps / kCtas;  // W: reference warps a CTA
  const int warp = thread / 32, lane = thread % 32;
  return kThreads * (warp / kCtaWarps) + 32 * (kCtaWarps * cta + warp % kCtaWarps) + lane;
}

// Thread layer, then warp layer, for the reference warp whose four fragments sit in this CTA's
// warps w, w + W, w + 2 W, w + 3 W (W = warps_apart), their chunk pairs at chunk_pairs[32 w' +
// lane] (row_fragment's layout): its warp total, in every lane of warp w.
__device__ __forceinline__ float reference_warp_total(const float* chunk_pairs, unsigned warp, unsigned warps_apart) {
  return warp_sum(thread_sum(&chunk_pairs[32 * warp + (threadIdx.x & 31)], 32 * warps_apart));
}

struct FragmentSumScratch {
  float chunk_pairs[kRowThreads];
  float warp_totals[kWarps];
};

// CTA layer with one fragment a thread: 1024 threads on a row, thread i holding fragment i; warps
// 0 .. 7 fold the reference warps, and the warp totals are added in warp order. Two barriers, none
// at entry: one scratch serves every row sum of a CTA, since a thread writes the next sum's chunk
// pairs only after the second barrier of this one, which every read of this sum's chunk pairs
// precedes, and the next sum's warp totals only after its first barrier, which every read of this
// sum's totals precedes.
__device__ __forceinline__ float cta_fragment_row_sum(float chunk_pair, FragmentSumScratch& scratch) {
  scratch.chunk_pairs[threadIdx.x] = chunk_pair;
  __syncthreads();
  const unsigned warp = threadIdx.x >> 5;
  if (warp < kWarps) {
    const float w = reference_warp_total(scratch.chunk_pairs, warp, kWarps);
    if ((threadIdx.x & 31) == 0) scratch.warp_totals[warp] = w;
  }
  __syncthreads();
  return row_sum(scratch.warp_totals);
}

// rsqrt(fma(S, 2^-13, eps)).
__device__ __forceinline__ float norm_factor(float s, float eps) {
  if constexpr (kMutant == Mutant::rsqrt_recip_sqrt) return __frcp_rn(__fsqrt_rn(fma_rn(s, 0x1p-13f, eps)));
  else return rsqrt_approx_ftz_f32(fma_rn(s, 0x1p-13f, eps));
}

}  // namespace boundary::dev
