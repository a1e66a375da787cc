// The contract's summation tree (section 4), a function per step as contract section 10 names them:
// chunk_pair, thread_sum, warp_sum, row_sum (the fold of the warp totals), and sum_of_squares, the
// whole tree. The kernels' steps of the same names are in kernels/include/boundary/device/row_sum.cuh.
#include "product.hpp"
#include "simd_clones.hpp"

#include <boundary/mutant.hpp>
#include <boundary/reference.hpp>

#include <array>
#include <cmath>

namespace boundary::ref {
inline namespace BOUNDARY_REF_ABI {

namespace {

float sq(float a) { return product(a, a); }
float acc(float s, float a, bool fma_squares) {
  return fma_squares ? fma_rn(a, a, s) : add_rn(s, product(a, a));
}

}  // namespace

// Every loop is over the threads t, with no dependence between threads: they vectorize.
BOUNDARY_SIMD_CLONES void chunk_pair(const float* v, int k, bool fma_squares, Lanes& pairs) {
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
  for (int t = 0; t < kThreads; ++t) pairs[t] = add_rn(even[t], odd[t]);
}

BOUNDARY_SIMD_CLONES void thread_sum(const float* v, bool fma_squares, Lanes& sums) {
  // The fragment whose chunk pair is added i-th: 0 .. 3 (the fragment_order mutant: 3 .. 0).
  const auto fragment = [](int i) {
    if constexpr (kMutant == Mutant::fragment_order) return kFragments - 1 - i;
    else return i;
  };
  Lanes pairs;
  chunk_pair(v, fragment(0), fma_squares, sums);
  for (int i = 1; i < kFragments; ++i) {
    chunk_pair(v, fragment(i), fma_squares, pairs);
    for (int t = 0; t < kThreads; ++t) sums[t] = add_rn(sums[t], pairs[t]);
  }
}

// Lane 0's value is the tree below because add_rn is commutative bit for bit (NaN results are
// canonical): at distance d, lane l < d adds lane l + d.
float warp_sum(const float* lanes) {
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

float row_sum(const std::array<float, kWarps>& warp_totals) {
  if constexpr (kMutant == Mutant::cross_warp_order) {  // warp totals added 7 .. 0
    float s = warp_totals[kWarps - 1];
    for (int w = kWarps - 2; w >= 0; --w) s = add_rn(s, warp_totals[w]);
    return s;
  }
  float s = warp_totals[0];
  for (int w = 1; w < kWarps; ++w) s = add_rn(s, warp_totals[w]);
  return s;
}

BOUNDARY_SIMD_CLONES float sum_of_squares(const float* v, bool fma_squares) {
  Lanes sums;
  thread_sum(v, fma_squares, sums);
  std::array<float, kWarps> warp_totals;
  for (int w = 0; w < kWarps; ++w) warp_totals[w] = warp_sum(&sums[32 * w]);
  return row_sum(warp_totals);
}

float norm_factor(float s, float eps) {
  constexpr float kInvH = 0x1p-13f;  // 1/8192, exact
  const float mean = fma_rn(s, kInvH, eps);
  if constexpr (kMutant == Mutant::rsqrt_recip_sqrt)  // IEEE sqrt, then a division: two roundings
    return canonicalize_nan_f32(1.0f / std::sqrt(mean));
  return rsqrt_approx_ftz_f32(mean);
}

}  // inline namespace BOUNDARY_REF_ABI
}  // namespace boundary::ref
