// The contract's summation tree (section 4), the one named thing the kernels mirror in
// kernels/include/boundary/device/row_sum.cuh.
#include "simd_clones.hpp"

#include <boundary/reference.hpp>

#include <array>

namespace boundary::ref {

namespace {

// Laid out by lane (thread t) so that the 256 threads' chains run side by side and vectorize:
// every loop below is over t with no dependence between threads.
using Lanes = std::array<float, kThreads>;

float sq(float a) { return mul_rn(a, a); }
float acc(float s, float a, bool fma_squares) {
  return fma_squares ? fma_rn(a, a, s) : add_rn(s, mul_rn(a, a));
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
  for (int l = 0; l < 16; ++l) u[l] = add_rn(lanes[l], lanes[l + 16]);
  for (int d = 8; d >= 1; d /= 2)
    for (int l = 0; l < d; ++l) u[l] = add_rn(u[l], u[l + d]);
  return u[0];
}

}  // namespace

BOUNDARY_SIMD_CLONES float row_sum(const float* v, bool fma_squares) {
  Lanes thread_sum, pair;
  chunk_pairs(v, 0, fma_squares, thread_sum);
  for (int k = 1; k < kFragments; ++k) {
    chunk_pairs(v, k, fma_squares, pair);
    for (int t = 0; t < kThreads; ++t) thread_sum[t] = add_rn(thread_sum[t], pair[t]);
  }
  float s = warp_butterfly(&thread_sum[0]);
  for (int w = 1; w < kWarps; ++w) s = add_rn(s, warp_butterfly(&thread_sum[32 * w]));
  return s;
}

float norm_factor(float row_sum, float eps) {
  constexpr float kInvH = 0x1p-13f;  // 1/8192, exact
  return rsqrt_approx_ftz_f32(fma_rn(row_sum, kInvH, eps));
}

}  // namespace boundary::ref
