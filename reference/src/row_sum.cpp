// The contract's summation tree (section 4), the one named thing the kernels mirror in
// kernels/include/boundary/device/row_sum.cuh.
#include "product.hpp"
#include "simd_clones.hpp"

#include <boundary/mutant.hpp>
#include <boundary/reference.hpp>

#include <array>
#include <cmath>

namespace boundary::ref {
inline namespace BOUNDARY_REF_ABI {

namespace {

// Laid out by lane (thread t) so that the 256 threads' chains run side by side and vectorize:
// every loop below is over t with no dependence between threads.
using Lanes = std::array<float, kThreads>;

float sq(float a) { return product(a, a); }
float acc(float s, float a, bool fma_squares) {
  return fma_squares ? fma_rn(a, a, s) : add_rn(s, product(a, a));
}

// chunk_pair(t, k) for every t: even and odd elements in two chains, joined at the end.
BOUNDARY_INLINE void chunk_pairs(const float* v, int k, bool fma_squares, Lanes& pair) {
  Lanes even, odd;
  for (int t = 0; t < kThreads; ++t) {
    even[t] = sq(v[column(t, k, 0)]);
    odd[t] = sq(v[column(t, k, 1)]);
  }
  for (int j = 1; j < kVec / 2; ++j) {
    for (int t = 0; t < kThreads; ++t) {
      even[t] = acc(even[t], v[column(t, k, 2 * j)], fma_squares);
      odd[t] = acc(odd[t], v[column(t, k, 2 * j + 1)], fma_squares);
    }
  }
  for (int t = 0; t < kThreads; ++t) pair[t] = add_rn(even[t], odd[t]);
}

// The xor butterfly of one warp. Every lane ends with the same bits; lane 0's value is the
// tree below because add_rn is commutative bit for bit (NaN results are canonical).
BOUNDARY_INLINE float warp_butterfly(const float* lanes) {
  std::array<float, 16> u;
  if constexpr (kMutant == Mutant::warp_order) {
    // Distances 1, 2, 4, 8, 16: lane 0 adds its neighbour first, so adjacent pairs, level by level.
    for (int l = 0; l < 16; ++l) u[l] = add_rn(lanes[2 * l], lanes[2 * l + 1]);
    for (int n = 8; n >= 1; n /= 2)
      for (int l = 0; l < n; ++l) u[l] = add_rn(u[2 * l], u[2 * l + 1]);
    return u[0];
  }
  for (int l = 0; l < 16; ++l) u[l] = add_rn(lanes[l], lanes[l + 16]);
  for (int d = 8; d >= 1; d /= 2)
    for (int l = 0; l < d; ++l) u[l] = add_rn(u[l], u[l + d]);
  return u[0];
}

// The fragment whose chunk pair a thread adds i-th: 0 .. 3 (the fragment_order mutant: 3 .. 0).
constexpr int summed_fragment(int i) {
  if constexpr (kMutant == Mutant::fragment_order) return kFragments - 1 - i;
  return i;
}

// The warp whose total is added i-th: 0 .. 7 (the cross_warp_order mutant: 7 .. 0).
constexpr int summed_warp(int i) {
  if constexpr (kMutant == Mutant::cross_warp_order) return kWarps - 1 - i;
  return i;
}

}  // namespace

BOUNDARY_SIMD_CLONES float row_sum(const float* v, bool fma_squares) {
  Lanes thread_sum, pair;
  chunk_pairs(v, summed_fragment(0), fma_squares, thread_sum);
  for (int i = 1; i < kFragments; ++i) {
    chunk_pairs(v, summed_fragment(i), fma_squares, pair);
    for (int t = 0; t < kThreads; ++t) thread_sum[t] = add_rn(thread_sum[t], pair[t]);
  }
  float s = warp_butterfly(&thread_sum[32 * summed_warp(0)]);
  for (int i = 1; i < kWarps; ++i) s = add_rn(s, warp_butterfly(&thread_sum[32 * summed_warp(i)]));
  return s;
}

float norm_factor(float row_sum, float eps) {
  constexpr float kInvH = 0x1p-13f;  // 1/8192, exact
  const float mean = fma_rn(row_sum, kInvH, eps);
  if constexpr (kMutant == Mutant::rsqrt_recip_sqrt)  // IEEE sqrt, then a division: two roundings
    return canonicalize_nan_f32(1.0f / std::sqrt(mean));
  return rsqrt_approx_ftz_f32(mean);
}

}  // inline namespace BOUNDARY_REF_ABI
}  // namespace boundary::ref
