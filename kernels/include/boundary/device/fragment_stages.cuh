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

__device__ __forceinline__ void store_f32x8(float* p, const float (&v)[kVec]) {
  float4* d = reinterpret_cast<float4*>(p);
  d[0] = make_float4(v[0], v[1], v[2], v[3]);
  d[1] = make_float4(v[4], v[5], v[6], v[7]);
}

// The per-column operands of a thread's kF fragments.
template <int kF>
struct Gates {
  float alpha[kF][kVec], beta[kF][kVec];
  float post_gamma[kF][kVec], pre_gamma[kF][kVec];
};

// columns[k]: the first column of fragment k. late: loaded after the PDL wait (where the
// planted late-gates bug reads 8 columns off, wrapping within the row).
template <int kF>
__device__ __forceinline__ void load_gates(const float* alpha, const float* beta, const NormArgs& post,
                                           const NormArgs& pre, const int (&columns)[kF], bool late, Gates<kF>& g) {
#pragma unroll
  for (int k = 0; k < kF; ++k) {
    int c = columns[k];
    if constexpr (kMutant == Mutant::late_gates_wrong_columns)
      if (late) c = (c + kVec) % kH;
    load_f32x8(alpha + c, g.alpha[k]);
    load_f32x8(beta + c, g.beta[k]);
    if (has_weight(post)) load_gamma(post, c, g.post_gamma[k]);
    if (has_weight(pre)) load_gamma(pre, c, g.pre_gamma[k]);
  }
}

// The stream's 8 values at element offset `at`, as FP32 (a BF16 stream exactly widened).
template <bool kStreamF32>
__device__ __forceinline__ void load_stream(const void* stream, std::size_t at, float (&s)[kVec]) {
  if constexpr (kStreamF32) {
    const float4* q = reinterpret_cast<const float4*>(static_cast<const float*>(stream) + at);
    const float4 a = q[0], b = q[1];
    s[0] = a.x, s[1] = a.y, s[2] = a.z, s[3] = a.w, s[4] = b.x, s[5] = b.y, s[6] = b.z, s[7] = b.w;
  } else {
    unpack_bf16x8(*reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(stream) + at), s);
  }
}

// Contract section 7 for one fragment: the ranks' values summed in rank order in FP32, one BF16
// rounding; one rank passes P_0 unchanged. raw[r]: rank r's 8 BF16 values.
__device__ __forceinline__ void all_reduce_fragment(const uint4 (&raw)[kMaxRanks], int ranks, float (&x)[kVec]) {
  unpack_bf16x8(raw[0], x);
  if (ranks == 1) return;
#pragma unroll
  for (int r = 1; r < kMaxRanks; ++r) {
    if (r >= ranks) break;
    float v[kVec];
    unpack_bf16x8(raw[r], v);
#pragma unroll
    for (int i = 0; i < kVec; ++i) x[i] = add_rn(x[i], v[i]);
  }
#pragma unroll
  for (int i = 0; i < kVec; ++i) x[i] = round_bf16(x[i]);
}

// r1 as the post norm applies it (norm_fragments' adjust).
__device__ __forceinline__ float post_factor(float r) {
  if constexpr (kMutant == Mutant::r1_ulp_off) return isfinite(r) ? nextafterf(r, INFINITY) : r;
  else return r;
}

// y_b = bf16(y) and z = bf16(res) of the contract, as the connection and the pre norm read them.
__device__ __forceinline__ float y_b_of(float y) {
  if constexpr (kMutant == Mutant::y_b_unrounded) return y;
  else return round_bf16(y);
}
__device__ __forceinline__ float z_of(float res) {
  if constexpr (kMutant == Mutant::z_unrounded) return res;
  else return round_bf16(res);
}

// The connection on a thread's fragments: y holds y (post norm) and becomes z = bf16(res); s
// holds the stream and becomes res, the new stream.
template <int kF>
__device__ __forceinline__ void connect_fragments(const Gates<kF>& g, float (&y)[kF][kVec], float (&s)[kF][kVec]) {
#pragma unroll
  for (int k = 0; k < kF; ++k)
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      s[k][i] = connection(g.alpha[k][i], s[k][i], g.beta[k][i], y_b_of(y[k][i]));
      y[k][i] = z_of(s[k][i]);
    }
}

}  // namespace boundary::dev
