// The row sum's order (contract section 4): each step (chunk_pair, thread_sum, warp_sum, row_sum)
// and the whole tree (sum_of_squares) checked against a transcription of the contract's text that
// simulates the 256 threads and the 32-lane butterfly literally, on rows that reveal any change of
// order (FPRev-style), and on rows worked by hand.
#include "bits.hpp"

#include <boundary/reference.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

using namespace boundary;
using namespace boundary::ref;
using namespace boundary::test;

namespace {

// Contract section 4, word for word, a member a step.
struct Contract {
  const std::vector<float>& v;
  bool fma_squares;

  static int c(int t, int k, int i) { return 2048 * k + 8 * t + i; }
  float sq(float a) const { return mul_rn(a, a); }
  float acc(float s, float a) const { return fma_squares ? fma_rn(a, a, s) : add_rn(s, mul_rn(a, a)); }
  float chunk_pair(int t, int k) const {
    float e = sq(v[c(t, k, 0)]), o = sq(v[c(t, k, 1)]);
    for (int j = 1; j <= 3; ++j) {
      e = acc(e, v[c(t, k, 2 * j)]);
      o = acc(o, v[c(t, k, 2 * j + 1)]);
    }
    return add_rn(e, o);
  }
  float thread_sum(int t) const {
    return add_rn(add_rn(add_rn(chunk_pair(t, 0), chunk_pair(t, 1)), chunk_pair(t, 2)), chunk_pair(t, 3));
  }
  // The 32 lanes at once, every lane's value checked equal.
  static float warp_sum(std::array<float, 32> u) {
    for (int d = 16; d >= 1; d /= 2) {
      std::array<float, 32> next{};
      for (int l = 0; l < 32; ++l) next[l] = add_rn(u[l], u[l ^ d]);
      u = next;
    }
    for (int l = 1; l < 32; ++l) REQUIRE(bits(u[l]) == bits(u[0]));
    return u[0];
  }
  float warp_total(int w) const {
    std::array<float, 32> u{};
    for (int l = 0; l < 32; ++l) u[l] = thread_sum(32 * w + l);
    return warp_sum(u);
  }
  static float row_sum(const std::array<float, 8>& W) {
    float S = W[0];
    for (int w = 1; w < 8; ++w) S = add_rn(S, W[w]);
    return S;
  }
  float sum_of_squares() const {
    std::array<float, 8> W{};
    for (int w = 0; w < 8; ++w) W[w] = warp_total(w);
    return row_sum(W);
  }
};

float contract_sum_of_squares(const std::vector<float>& v, bool fma_squares) {
  return Contract{v, fma_squares}.sum_of_squares();
}

// Rows of normal values scaled by 2^-30 .. 2^30 each, so that the order of the sum shows in its bits.
struct MixedMagnitudeRows {
  explicit MixedMagnitudeRows(unsigned seed) : rng(seed) {}
  std::vector<float> next() {
    std::vector<float> v(kH);
    for (float& a : v) a = std::ldexp(normal(rng), exp(rng));
    return v;
  }
  std::mt19937 rng;
  std::uniform_int_distribution<int> exp{-30, 30};
  std::normal_distribution<float> normal;
};

// A plausible wrong order: the columns one after another.
float sequential_row_sum(const std::vector<float>& v) {
  float s = 0.0f;
  for (float a : v) s = add_rn(s, mul_rn(a, a));
  return s;
}

}  // namespace

TEST_CASE("worked by hand: ones with one 2^12 at thread 0, fragment 0, element 0") {
  std::vector<float> v(kH, 1.0f);
  v[column(0, 0, 0)] = 4096.0f;  // its square 2^24 swallows each 1 added to it alone
  // thread 0: chunk 0 = (2^24 [+1 lost x3]) + 4 = 2^24+4; + 8 + 8 + 8 = 2^24+28; other threads 32.
  // warp 0 butterfly: 2^24+28 -> +32 -> +64 -> +128 -> +256 -> +512 = 2^24+1020; warps 1..7: 1024.
  CHECK(bits(sum_of_squares(v.data(), false)) == bits(16777216.0f + 1020.0f + 7.0f * 1024.0f));
  CHECK(bits(sequential_row_sum(v)) == bits(16777216.0f));  // an order that loses every 1
}

TEST_CASE("worked by hand: all ones sum to 8192; one 3 adds 8") {
  std::vector<float> v(kH, 1.0f);
  CHECK(bits(sum_of_squares(v.data(), false)) == bits(8192.0f));
  v[column(200, 3, 7)] = 3.0f;
  CHECK(bits(sum_of_squares(v.data(), true)) == bits(8200.0f));
}

TEST_CASE("fma_squares changes the bits: one rounding instead of two") {
  std::vector<float> v(kH, 0.0f);
  v[column(0, 0, 0)] = make_f32(0, 115, 0);         // 2^-12: square 2^-24, exact
  v[column(0, 0, 2)] = make_f32(0, 127, 0x000800);  // 1 + 2^-12: square 1 + 2^-11 + 2^-24
  CHECK(bits(sum_of_squares(v.data(), true)) == bits(make_f32(0, 127, 0x001001)));
  CHECK(bits(sum_of_squares(v.data(), false)) == bits(make_f32(0, 127, 0x001000)));
}

TEST_CASE("each step equals the contract's: chunk_pair, thread_sum, warp_sum, row_sum") {
  MixedMagnitudeRows rows(11);
  for (int n = 0; n < 4; ++n) {
    const std::vector<float> v = rows.next();
    for (bool fma : {false, true}) {
      const Contract contract{v, fma};
      Lanes pairs, sums;
      for (int k = 0; k < kFragments; ++k) {
        chunk_pair(v.data(), k, fma, pairs);
        for (int t = 0; t < kThreads; ++t) REQUIRE(bits(pairs[t]) == bits(contract.chunk_pair(t, k)));
      }
      thread_sum(v.data(), fma, sums);
      for (int t = 0; t < kThreads; ++t) REQUIRE(bits(sums[t]) == bits(contract.thread_sum(t)));
      std::array<float, kWarps> W{};
      for (int w = 0; w < kWarps; ++w) {
        W[w] = warp_sum(&sums[32 * w]);
        REQUIRE(bits(W[w]) == bits(contract.warp_total(w)));
      }
      CHECK(bits(row_sum(W)) == bits(Contract::row_sum(W)));
      CHECK(bits(sum_of_squares(v.data(), fma)) == bits(row_sum(W)));
    }
  }
}

TEST_CASE("worked by hand: warp_sum is the butterfly, row_sum folds the warps in warp order") {
  // Lane 0 = 2^24, the other 31 lanes 1: the butterfly adds 1 + 1 first (lanes 1 .. 15 and 17 .. 31),
  // so only lane 16's 1 is lost against 2^24: 2^24 + 2 + 4 + 8 + 16 = 2^24 + 30. One lane after
  // another would lose every 1.
  std::array<float, 32> lanes;
  lanes.fill(1.0f);
  lanes[0] = 16777216.0f;
  CHECK(bits(warp_sum(lanes.data())) == bits(16777216.0f + 30.0f));
  CHECK(bits(warp_sum(lanes.data())) == bits(Contract::warp_sum(lanes)));
  // W[0] = 2^24 first: each 1 added alone is lost (ties to even). Last: 7 ones first, then 2^24 + 7
  // rounds to 2^24 + 8.
  std::array<float, kWarps> W;
  W.fill(1.0f);
  W[0] = 16777216.0f;
  CHECK(bits(row_sum(W)) == bits(16777216.0f));
  std::swap(W[0], W[7]);
  CHECK(bits(row_sum(W)) == bits(16777216.0f + 8.0f));
}

TEST_CASE("FPRev rows: a 2^12 at every column; the contract's order is followed exactly") {
  int differs_from_sequential = 0;
  for (bool fma : {false, true}) {
    std::vector<float> v(kH, 1.0f);
    for (int p = 0; p < kH; ++p) {
      v[p] = 4096.0f;
      const float s = sum_of_squares(v.data(), fma);
      if (p % 61 == 0 || p < 64) REQUIRE(bits(s) == bits(contract_sum_of_squares(v, fma)));
      differs_from_sequential += bits(s) != bits(sequential_row_sum(v));
      v[p] = 1.0f;
    }
  }
  CHECK(differs_from_sequential > 0);
}

// FPRev's question for a sum of squares: with A^2 = 2^24 at p and 1s at q and r (zeros
// elsewhere), S = 2^24 + 2 exactly when q and r are added together before either meets p
// (each 1 alone is lost against 2^24). The answers over many (q, r) spell out the tree.
TEST_CASE("FPRev triples: which columns meet first is the contract's tree") {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> col(0, kH - 1);
  int joined_first = 0, joined_late = 0, differs_from_sequential = 0;
  for (int n = 0; n < 300; ++n) {
    const int p = n < 150 ? column(0, 0, 0) : col(rng), q = col(rng), r = col(rng);
    if (p == q || p == r || q == r) continue;
    std::vector<float> v(kH, 0.0f);
    v[p] = 4096.0f;
    v[q] = v[r] = 1.0f;
    const float s = sum_of_squares(v.data(), false);
    REQUIRE(bits(s) == bits(contract_sum_of_squares(v, false)));
    (bits(s) == bits(16777218.0f) ? joined_first : joined_late)++;
    differs_from_sequential += bits(s) != bits(sequential_row_sum(v));
  }
  // Both answers occur, so the rows can tell orders apart, and a sequential sum disagrees.
  CHECK(joined_first > 0);
  CHECK(joined_late > 0);
  CHECK(differs_from_sequential > 0);
}

TEST_CASE("random rows of mixed magnitudes equal the contract's transcription") {
  MixedMagnitudeRows rows(3);
  for (int n = 0; n < 40; ++n) {
    const std::vector<float> v = rows.next();
    for (bool fma : {false, true}) REQUIRE(bits(sum_of_squares(v.data(), fma)) == bits(contract_sum_of_squares(v, fma)));
  }
}

TEST_CASE("special values: NaN anywhere gives the canonical NaN; overflow gives infinity") {
  std::vector<float> v(kH, 1.0f);
  v[column(17, 2, 5)] = from_bits(0xFFC00001u);
  CHECK(bits(sum_of_squares(v.data(), false)) == 0x7FFFFFFFu);
  v.assign(kH, make_f32(0, 200, 0));  // 2^73: squares overflow
  CHECK(bits(sum_of_squares(v.data(), true)) == 0x7F800000u);
  v.assign(kH, make_f32(0, 10, 0));   // squares underflow to 0
  CHECK(bits(sum_of_squares(v.data(), false)) == 0u);
  v.assign(kH, make_f32(0, 64, 0));   // 2^-63: squares 2^-126, sums stay exact
  CHECK(bits(sum_of_squares(v.data(), false)) == bits(make_f32(0, 14, 0)));
}

TEST_CASE("norm_factor is rsqrt(S * 2^-13 + eps) with one rounding") {
  CHECK(bits(norm_factor(8192.0f * 4.0f, 0.0f)) == bits(0.5f));
  CHECK(bits(norm_factor(0.0f, 0.0f)) == 0x7F800000u);
  CHECK(bits(norm_factor(8192.0f, 1e-8f)) == bits(1.0f));  // 1 + 1e-8 rounds to 1
}
