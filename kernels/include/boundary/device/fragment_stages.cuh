// The stages of a boundary row that every fused kernel runs on its fragments in the same way:
// gates in, the all-reduce of contract section 7, stream in, the connection, new stream out.
// A kernel differs from another only in which columns a thread owns and how a row sum completes.
// The planted-bug switches of these stages (boundary/mutant.hpp) compile away in production.
#pragma once

#include <boundary/device/boundary_fragments.cuh>
#include <boundary/mutant.hpp>

#include <cmath>

namespace boundary::dev {

__device__ __forceinline__ void load_f32x8(const float* p, float (&v)[kVec]) {
  const float4 a = __ldg(reinterpret_cast<const float4*>(p));
  const float4 b = __ldg(reinterpret_cast<const float4*>(p) + 1);
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}

// 8 FP32 values at p, 16-byte aligned, by plain loads and stores (shared memory; the __ldg above
// is for read-only global memory).
__device__ __forceinline__ void read_f32x8(const float* p, float (&v)[kVec]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0];
  const float4 b = reinterpret_cast<const float4*>(p)[1];
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
__device__ __forceinline__ void store_f32x8(float* p, const float (&v)[kVec]) {
  reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}

// Stores 8 FP32 values from each lane of a warp whose lane l holds the 8 at p = base + 8 l: lanes
// 2q and 2q + 1 swap halves, so that each of the two store instructions writes whole 32-byte
// sectors (16 of them) instead of half of each of 32. Half sectors cost the L2 twice the write
// requests, which was what bounded the fused kernels at large m. Every lane of the warp must call it.
__device__ __forceinline__ void store_warp_f32x8(float* p, const float (&v)[kVec]) {
  const bool odd = threadIdx.x & 1u;
  float mine[4], theirs[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    // Even lanes keep v[0..3] and send v[4..7]; odd lanes the other way round.
    mine[j] = odd ? v[4 + j] : v[j];
    theirs[j] = __shfl_xor_sync(0xFFFFFFFFu, odd ? v[j] : v[4 + j], 1);
  }
  // Lane 2q: columns 16 q + 0..3 (its own) and 16 q + 8..11 (its partner's first half); lane
  // 2q + 1: 16 q + 4..7 (its partner's second half) and 16 q + 12..15 (its own).
  float4* first = reinterpret_cast<float4*>(odd ? p - 4 : p);
  float4* second = reinterpret_cast<float4*>(odd ? p + 4 : p + 8);
  *first = odd ? make_float4(theirs[0], theirs[1], theirs[2], theirs[3])
               : make_float4(mine[0], mine[1], mine[2], mine[3]);
  *second = odd ? make_float4(mine[0], mine[1], mine[2], mine[3])
                : make_float4(theirs[0], theirs[1], theirs[2], theirs[3]);
}

// Whether a row's 16-byte load leaves its sector in L1. A row is read once (no_allocate), except
// where a thread's two loads share a sector (the F32 stream: 32 bytes a thread in two halves, each
// instruction of a warp touching one half of 32 sectors): through L1 (allocate) the second load
// hits the sector the first brought in, where no_allocate asks the L2 for every sector twice
// (H100, 2026-12-07: the fused F32 boundary 0.946x at m = 132).
enum class InL1 : bool { no_allocate, allocate };

// 16 bytes of a row (branch, stream, a partial).
template <InL1 kL1 = InL1::no_allocate>
__device__ __forceinline__ uint4 load_row_16(const void* p) {
  uint4 v;
  if constexpr (kL1 == InL1::no_allocate)
    asm volatile("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  else
    asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// The per-column operands of a thread's kF fragments.
template <int kF>
struct Gates {
  float alpha[kF][kVec], beta[kF][kVec];
  float post_gamma[kF][kVec], pre_gamma[kF][kVec];
};

// The column a gate or weight load of column c reads. late: loaded after the PDL wait (where the
// planted late-gates bug reads 8 columns off, wrapping within the row).
__device__ __forceinline__ int gate_column(int c, bool late) {
  if constexpr (kMutant == Mutant::late_gates_wrong_columns)
    if (late) return (c + kVec) % kH;
  return c;
}

// columns[k]: the first column of fragment k.
template <int kF>
__device__ __forceinline__ void load_gates(const float* alpha, const float* beta, const NormArgs& post,
                                           const NormArgs& pre, const int (&columns)[kF], bool late, Gates<kF>& g) {
#pragma unroll
  for (int k = 0; k < kF; ++k) {
    const int c = gate_column(columns[k], late);
    load_f32x8(alpha + c, g.alpha[k]);
    load_f32x8(beta + c, g.beta[k]);
    if (has_weight(post)) gamma(post, c, g.post_gamma[k]);
    if (has_weight(pre)) gamma(pre, c, g.pre_gamma[k]);
  }
}

// 0, computed from a sum of squares (never below zero; a NaN compares false): a load whose
// address adds it is issued only once the sum is known. An empty asm tying the address to the
// sum would vanish from the PTX and leave ptxas free to hoist the load; this comparison stays.
__device__ __forceinline__ std::size_t zero_after(float sum_of_squares) { return sum_of_squares < 0.0f ? kVec : 0; }

// The stream's 8 values at element offset `at`, as FP32 (a BF16 stream exactly widened).
template <bool kStreamF32>
__device__ __forceinline__ void load_stream(const void* stream, std::size_t at, float (&s)[kVec]) {
  if constexpr (kStreamF32) {
    const float* q = static_cast<const float*>(stream) + at;
    unpack_f32x8(load_row_16<InL1::allocate>(q), load_row_16<InL1::allocate>(q + 4), s);
  } else {
    unpack_bf16x8(load_row_16(static_cast<const std::uint16_t*>(stream) + at), s);
  }
}

// Contract section 7 for one fragment: the ranks' values summed in rank order in FP32, one BF16
// rounding; one rank passes P_0 unchanged. rank(r): rank r's 8 BF16 values (a uint4), asked for
// in rank order, each once.
// The rank_order mutant adds them last rank first (R-1 .. 0).
template <class Rank>
__device__ __forceinline__ void all_reduce(int ranks, Rank rank, float (&x)[kVec]) {
  constexpr bool kReversed = kMutant == Mutant::rank_order;
  unpack_bf16x8(rank(kReversed ? ranks - 1 : 0), x);
  if (ranks == 1) return;
#pragma unroll
  for (int r = 1; r < kMaxRanks; ++r) {
    if (r >= ranks) break;
    float v[kVec];
    unpack_bf16x8(rank(kReversed ? ranks - 1 - r : r), v);
#pragma unroll
    for (int i = 0; i < kVec; ++i) x[i] = add_rn(x[i], v[i]);
  }
#pragma unroll
  for (int i = 0; i < kVec; ++i) x[i] = round_bf16(x[i]);
}

// The post norm (contract section 5): x -> y_b in x, the input scale, S1 and r1 (r1_ulp_off: one
// ulp up), y, the gain, y_b = bf16(y) (y_b_unrounded: y itself).
template <int kF, class Gains, class CompleteSum>
__device__ __forceinline__ RowNorm post_norm(const NormArgs& n, Gains gains, float (&x)[kF][kVec],
                                             CompleteSum complete_sum) {
  const RowNorm norm = norm_fragments(n, gains, x, complete_sum, [](float r1) {
    if constexpr (kMutant == Mutant::r1_ulp_off) return isfinite(r1) ? nextafterf(r1, INFINITY) : r1;
    else return r1;
  });
  if constexpr (kMutant != Mutant::y_b_unrounded)
#pragma unroll
    for (int k = 0; k < kF; ++k)
#pragma unroll
      for (int i = 0; i < kVec; ++i) x[k][i] = round_bf16(x[k][i]);
  return norm;
}

// The connection on one fragment: res = alpha * s + beta * y_b (each product rounded), z =
// bf16(res) (z_unrounded: res itself). y_b becomes z; s, the stream, becomes res, the new stream.
__device__ __forceinline__ void connection(const float (&alpha)[kVec], const float (&beta)[kVec], float (&y_b)[kVec],
                                           float (&s)[kVec]) {
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    s[i] = connection(alpha[i], s[i], beta[i], y_b[i]);
    if constexpr (kMutant == Mutant::z_unrounded) y_b[i] = s[i];
    else y_b[i] = round_bf16(s[i]);
  }
}

// The same on all of a thread's fragments, the gates in registers.
template <int kF>
__device__ __forceinline__ void connection(const Gates<kF>& g, float (&y_b)[kF][kVec], float (&s)[kF][kVec]) {
#pragma unroll
  for (int k = 0; k < kF; ++k) connection(g.alpha[k], g.beta[k], y_b[k], s[k]);
}

// The pre norm (contract section 5): z -> out, the input scale, S2 and r2, o, the gain, out =
// bf16(o), packed for the 16-byte stores.
template <int kF, class Gains, class CompleteSum>
__device__ __forceinline__ RowNorm pre_norm(const NormArgs& n, Gains gains, float (&z)[kF][kVec], CompleteSum complete_sum,
                                            uint4 (&out)[kF]) {
  const RowNorm norm = norm_fragments(n, gains, z, complete_sum);
#pragma unroll
  for (int k = 0; k < kF; ++k) out[k] = pack_bf16x8(z[k]);
  return norm;
}

}  // namespace boundary::dev
