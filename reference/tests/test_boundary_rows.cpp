// Whole boundary rows (contract sections 3, 5, 7): rows worked by hand, and the vectorized,
// threaded emulator against a column-at-a-time transcription of section 5 for every variant.
#include "bits.hpp"

#include <boundary/reference.hpp>
#include <boundary/results.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

using namespace boundary;
using namespace boundary::ref;
using namespace boundary::test;

namespace {

NormConstants no_weight(double eps) { return {.eps = eps}; }
NormConstants weighted(double eps, bool input_scale, WeightDtype dtype, bool fma = false, double gain = 1.0) {
  return {.eps = eps, .gain_center = gain, .weight_dtype = dtype, .input_scale = input_scale, .fma_squares = fma};
}

// Storage for one batch of operands and inputs, every tensor a plain vector.
struct Batch {
  std::int64_t m;
  std::vector<float> alpha = std::vector<float>(kH), beta = std::vector<float>(kH);
  std::vector<std::uint16_t> post_w16 = std::vector<std::uint16_t>(kH), pre_w16 = std::vector<std::uint16_t>(kH);
  std::vector<float> post_w32 = std::vector<float>(kH), pre_w32 = std::vector<float>(kH);
  std::vector<std::uint16_t> branch, stream_bf16;
  std::vector<float> stream_f32;
  explicit Batch(std::int64_t rows)
      : m(rows), branch(static_cast<std::size_t>(rows) * kH), stream_bf16(branch.size()), stream_f32(branch.size()) {}

  const void* weight(const NormConstants& n, bool post) const {
    if (!n.has_weight()) return nullptr;
    if (n.weight_dtype == WeightDtype::fp32) return post ? post_w32.data() : pre_w32.data();
    return post ? post_w16.data() : pre_w16.data();
  }
  Operands operands(const Constants& c) const {
    return {alpha.data(), beta.data(), weight(c.post, true), weight(c.pre, false)};
  }
  Inputs inputs(StreamDtype s) const {
    Inputs in;
    in.m = m;
    in.branch = branch.data();
    in.stream_dtype = s;
    in.stream = s == StreamDtype::f32 ? static_cast<const void*>(stream_f32.data()) : stream_bf16.data();
    return in;
  }
};

Results run(const Constants& c, const Batch& b, StreamDtype s, unsigned threads = 1) {
  Results r(b.m, Results::Wanted::everything);
  Boundary(c, b.operands(c)).run(b.inputs(s), r.outputs(), threads);
  return r;
}

// Contract section 5 for one row, one column at a time, from the contract's text.
void contract_row(const Constants& k, const Batch& b, StreamDtype sd, std::int64_t row,
                  std::vector<std::uint16_t>& out, std::vector<float>& new_stream) {
  const auto gp = gamma(k.post, b.weight(k.post, true));
  const auto gq = gamma(k.pre, b.weight(k.pre, false));
  const std::size_t base = static_cast<std::size_t>(row) * kH;
  std::vector<float> xs(kH), zs(kH);
  for (int c = 0; c < kH; ++c) {
    const float x = bf16_to_f32(b.branch[base + c]);
    xs[c] = k.post.has_weight() && k.post.input_scale ? mul_rn(gp[c], x) : x;
  }
  const float r1 = rsqrt_approx_ftz_f32(fma_rn(sum_of_squares(xs.data(), k.post.fma_squares), 0x1p-13f, static_cast<float>(k.post.eps)));
  for (int c = 0; c < kH; ++c) {
    float y = mul_rn(xs[c], r1);
    if (k.post.has_weight() && !k.post.input_scale) y = mul_rn(y, gp[c]);
    const float yb = bf16_to_f32(f32_to_bf16_rn(y));
    const float s = sd == StreamDtype::f32 ? b.stream_f32[base + c] : bf16_to_f32(b.stream_bf16[base + c]);
    const float res = add_rn(mul_rn(b.alpha[c], s), mul_rn(b.beta[c], yb));
    new_stream[c] = res;
    const float z = bf16_to_f32(f32_to_bf16_rn(res));
    zs[c] = k.pre.has_weight() && k.pre.input_scale ? mul_rn(z, gq[c]) : z;
  }
  const float r2 = rsqrt_approx_ftz_f32(fma_rn(sum_of_squares(zs.data(), k.pre.fma_squares), 0x1p-13f, static_cast<float>(k.pre.eps)));
  for (int c = 0; c < kH; ++c) {
    float o = mul_rn(zs[c], r2);
    if (k.pre.has_weight() && !k.pre.input_scale) o = mul_rn(o, gq[c]);
    out[c] = f32_to_bf16_rn(o);
  }
}

void fill_realistic(Batch& b, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  for (auto& v : b.branch) v = f32_to_bf16_rn(normal(rng) * 3.0f);
  for (std::size_t i = 0; i < b.stream_f32.size(); ++i) {
    b.stream_f32[i] = normal(rng);
    b.stream_bf16[i] = f32_to_bf16_rn(normal(rng));
  }
  for (int c = 0; c < kH; ++c) {
    b.alpha[c] = 0.8f + 0.05f * normal(rng);
    b.beta[c] = 0.6f + 0.05f * normal(rng);
    b.post_w16[c] = f32_to_bf16_rn(0.02f * normal(rng));
    b.pre_w16[c] = f32_to_f16_rn(0.02f * normal(rng));  // read as fp16 or bf16 bits: both valid
    b.post_w32[c] = 0.02f * normal(rng);
    b.pre_w32[c] = 0.02f * normal(rng);
  }
}

}  // namespace

TEST_CASE("gains: weight + centre rounded to the weight's own dtype") {
  NormConstants n = weighted(0.0, false, WeightDtype::bf16);
  std::vector<std::uint16_t> w16(kH, make_bf16(0, 120, 0x40));  // 3 * 2^-8
  CHECK(bits(gamma(n, w16.data())[0]) == bits(1.015625f));       // 1 + 3*2^-8 ties to 1 + 2^-6
  n.weight_dtype = WeightDtype::fp16;
  w16.assign(kH, make_f16(0, 8, 0x200));                          // 3 * 2^-8
  CHECK(bits(gamma(n, w16.data())[0]) == bits(1.01171875f));      // exact in FP16
  w16.assign(kH, make_f16(0, 4, 0));                              // 2^-11: 1 + 2^-11 ties to 1
  CHECK(bits(gamma(n, w16.data())[0]) == bits(1.0f));
  n.weight_dtype = WeightDtype::fp32;
  std::vector<float> w32(kH, 0x1p-11f);
  CHECK(bits(gamma(n, w32.data())[0]) == bits(1.0f + 0x1p-11f));
  n.gain_center = 0.0;
  CHECK(bits(gamma(n, w32.data())[0]) == bits(0x1p-11f));
  CHECK(gamma(no_weight(0.0), nullptr).empty());
}

TEST_CASE("worked by hand: powers of two through both norms, each constants variant") {
  // branch 2: S1 = 8192*4, r1 = rsqrt(4) = 1/2, y_b = 1. res = 0.5*1 + 0.5*1 = 1 = z.
  Batch b(1);
  b.branch.assign(kH, make_bf16(0, 128, 0));  // 2.0
  b.stream_f32.assign(kH, 1.0f);
  b.alpha.assign(kH, 0.5f);
  b.beta.assign(kH, 0.5f);
  b.post_w16.assign(kH, 0);                   // gamma = 0 + 1
  b.pre_w16.assign(kH, make_bf16(0, 127, 0)); // gamma = 1 + 1 = 2
  SUBCASE("post without weight; pre weight after the norm: out = 1 * 1 * 2") {
    const Results r = run({no_weight(0.0), weighted(0.0, false, WeightDtype::bf16)}, b, StreamDtype::f32);
    CHECK(bits(r.r1[0]) == bits(0.5f));
    CHECK(r.y_b[5] == make_bf16(0, 127, 0));
    CHECK(bits(r.new_stream[5]) == bits(1.0f));
    CHECK(bits(r.r2[0]) == bits(1.0f));
    CHECK(r.out[kH - 1] == make_bf16(0, 128, 0));
  }
  SUBCASE("pre weight before the norm: z' = 2, r2 = rsqrt(4) = 1/2, out = 1") {
    const Results r = run({no_weight(0.0), weighted(0.0, true, WeightDtype::bf16)}, b, StreamDtype::f32);
    CHECK(bits(r.pre_row_sum[0]) == bits(32768.0f));
    CHECK(r.out[0] == make_bf16(0, 127, 0));
  }
  SUBCASE("post weight 1 before the norm (post-ffn shape): x' = 2 * 2, r1 = 1/4, y_b = 1") {
    b.post_w16.assign(kH, make_bf16(0, 127, 0));  // gamma = 2
    const Results r = run({weighted(0.0, true, WeightDtype::bf16), weighted(0.0, false, WeightDtype::bf16)}, b,
                          StreamDtype::f32);
    CHECK(bits(r.post_row_sum[0]) == bits(8192.0f * 16.0f));
    CHECK(bits(r.r1[0]) == bits(0.25f));
    CHECK(r.y_b[0] == make_bf16(0, 127, 0));
    CHECK(r.out[0] == make_bf16(0, 128, 0));
  }
  SUBCASE("BF16 stream: the same values give the same bits") {
    b.stream_bf16.assign(kH, make_bf16(0, 127, 0));
    const Results r = run({no_weight(0.0), weighted(0.0, false, WeightDtype::bf16)}, b, StreamDtype::bf16);
    CHECK(bits(r.new_stream[9]) == bits(1.0f));
    CHECK(r.out[9] == make_bf16(0, 128, 0));
  }
  SUBCASE("eps 1e-8 vanishes next to 1: post-attention constants give the same out") {
    const Results r = run({no_weight(1e-8), weighted(0.0, false, WeightDtype::bf16)}, b, StreamDtype::f32);
    CHECK(r.out[3] == make_bf16(0, 128, 0));
  }
}

TEST_CASE("worked by hand: an all-zero row with eps 0 is NaN everywhere (0 * Inf)") {
  Batch b(1);
  b.branch.assign(kH, 0);
  b.alpha.assign(kH, 1.0f);
  b.beta.assign(kH, 1.0f);
  const Results r = run({no_weight(0.0), no_weight(0.0)}, b, StreamDtype::f32);
  CHECK(bits(r.r1[0]) == 0x7F800000u);
  for (int c = 0; c < kH; c += 97) {
    CHECK(r.y_b[c] == 0x7FFF);
    CHECK(bits(r.new_stream[c]) == 0x7FFFFFFFu);
    CHECK(r.out[c] == 0x7FFF);
  }
}

TEST_CASE("worked by hand: -0.0 flows through as -0.0") {
  Batch b(1);
  b.branch.assign(kH, make_bf16(1, 0, 0));
  b.stream_f32.assign(kH, -0.0f);
  b.alpha.assign(kH, 1.0f);
  b.beta.assign(kH, 1.0f);
  const Results r = run({no_weight(1e-8), no_weight(1e-5)}, b, StreamDtype::f32);
  CHECK(bits(r.post_row_sum[0]) == 0u);
  CHECK(r.y_b[1] == 0x8000);
  CHECK(bits(r.new_stream[1]) == 0x80000000u);
  CHECK(r.out[1] == 0x8000);
}

TEST_CASE("worked by hand: one NaN in the branch makes the whole row the canonical NaN") {
  Batch b(1);
  b.branch.assign(kH, make_bf16(0, 127, 0));
  b.branch[4000] = make_bf16(1, 0xFF, 0x01);  // negative signalling NaN
  b.alpha.assign(kH, 1.0f);
  b.beta.assign(kH, 1.0f);
  const Results r = run({no_weight(1e-8), no_weight(1e-5)}, b, StreamDtype::f32);
  CHECK(bits(r.r1[0]) == 0x7FFFFFFFu);
  CHECK(bits(r.new_stream[0]) == 0x7FFFFFFFu);
  CHECK(r.out[8191] == 0x7FFF);
}

TEST_CASE("every variant equals the column-at-a-time transcription of section 5") {
  Batch b(3);
  fill_realistic(b, 5);
  b.branch[7] = make_bf16(0, 0, 3);          // a subnormal
  b.branch[kH + 9] = make_bf16(1, 0, 0);     // -0
  b.stream_f32[2 * kH + 11] = make_f32(0, 0, 5);
  for (WeightDtype dtype : {WeightDtype::bf16, WeightDtype::fp16, WeightDtype::fp32})
    for (bool post_scale : {false, true})
      for (bool pre_scale : {false, true})
        for (bool fma : {false, true})
          for (StreamDtype sd : {StreamDtype::f32, StreamDtype::bf16}) {
            const Constants k{weighted(1e-8, post_scale, dtype, fma), weighted(1e-5, pre_scale, dtype, !fma, 0.0)};
            const Results r = run(k, b, sd);
            std::vector<std::uint16_t> out(kH);
            std::vector<float> ns(kH);
            for (std::int64_t row = 0; row < b.m; ++row) {
              contract_row(k, b, sd, row, out, ns);
              for (int c = 0; c < kH; ++c) {
                const std::size_t i = static_cast<std::size_t>(row) * kH + c;
                REQUIRE(r.out[i] == out[c]);
                REQUIRE(bits(r.new_stream[i]) == bits(ns[c]));
              }
            }
          }
}

TEST_CASE("the steps one at a time: post_norm -> connection -> pre_norm is the transcription and run()") {
  Batch b(2);
  fill_realistic(b, 13);
  b.branch[kH + 3] = make_bf16(0, 0, 1);  // a subnormal
  for (bool post_scale : {false, true})
    for (StreamDtype sd : {StreamDtype::f32, StreamDtype::bf16}) {
      const Constants k{weighted(1e-8, post_scale, WeightDtype::bf16), weighted(1e-5, !post_scale, WeightDtype::fp16, true)};
      const auto gp = gamma(k.post, b.weight(k.post, true));
      const auto gq = gamma(k.pre, b.weight(k.pre, false));
      const Results r = run(k, b, sd);
      std::vector<std::uint16_t> out(kH), expected_out(kH);
      std::vector<float> y_b(kH), res(kH), z(kH), expected_ns(kH);
      for (std::int64_t row = 0; row < b.m; ++row) {
        const std::size_t base = static_cast<std::size_t>(row) * kH;
        const void* stream = sd == StreamDtype::f32 ? static_cast<const void*>(b.stream_f32.data() + base)
                                                    : b.stream_bf16.data() + base;
        const RowNorm post = post_norm(k.post, gp, b.branch.data() + base, y_b.data());
        connection(b.alpha.data(), b.beta.data(), sd, stream, y_b.data(), res.data(), z.data());
        std::vector<float> z_kept = z;
        const RowNorm pre = pre_norm(k.pre, gq, z.data(), out.data());
        contract_row(k, b, sd, row, expected_out, expected_ns);
        CHECK(bits(post.s) == bits(r.post_row_sum[row]));
        CHECK(bits(post.r) == bits(r.r1[row]));
        CHECK(bits(pre.s) == bits(r.pre_row_sum[row]));
        CHECK(bits(pre.r) == bits(r.r2[row]));
        for (int c = 0; c < kH; ++c) {
          REQUIRE(f32_to_bf16_rn(y_b[c]) == r.y_b[base + c]);
          REQUIRE(bits(y_b[c]) == bits(bf16_to_f32(r.y_b[base + c])));  // y_b is BF16 exactly
          REQUIRE(bits(res[c]) == bits(expected_ns[c]));
          REQUIRE(bits(z_kept[c]) == bits(bf16_to_f32(r.z[base + c])));
          REQUIRE(out[c] == expected_out[c]);
        }
      }
    }
}

TEST_CASE("batch invariance: a row's bits depend on neither m, its position, nor the thread count") {
  Batch big(37);
  fill_realistic(big, 9);
  const Constants k{weighted(1e-8, true, WeightDtype::bf16), weighted(1e-5, false, WeightDtype::bf16)};
  const Results all = run(k, big, StreamDtype::f32, 4);
  Batch one(1);
  one.alpha = big.alpha;
  one.beta = big.beta;
  one.post_w16 = big.post_w16;
  one.pre_w16 = big.pre_w16;
  for (std::int64_t row : {0, 17, 36}) {
    const std::size_t base = static_cast<std::size_t>(row) * kH;
    std::copy_n(big.branch.begin() + static_cast<std::ptrdiff_t>(base), kH, one.branch.begin());
    std::copy_n(big.stream_f32.begin() + static_cast<std::ptrdiff_t>(base), kH, one.stream_f32.begin());
    const Results single = run(k, one, StreamDtype::f32);
    for (int c = 0; c < kH; ++c) {
      REQUIRE(single.out[c] == all.out[base + c]);
      REQUIRE(bits(single.new_stream[c]) == bits(all.new_stream[base + c]));
    }
  }
}

TEST_CASE("all-reduce (section 7): R = 1 passes P_0 unchanged, R >= 2 sums in rank order") {
  std::vector<std::uint16_t> p0(kH, 0x7FA1), p1(kH, make_bf16(0, 127, 0)), p2(kH), out(kH);
  const std::uint16_t* one[] = {p0.data()};
  all_reduce(one, out.data());
  CHECK(out[0] == 0x7FA1);  // a NaN payload survives: no arithmetic happened
  // Rank order matters: FP32 loses a 1 added to 2^24 (tie to even) but not one added to 0.
  p0.assign(kH, make_bf16(0, 127 + 24, 0));  // 2^24
  p1.assign(kH, make_bf16(0, 127, 0));       // 1: lost against 2^24 (tie to even)
  p2.assign(kH, make_bf16(1, 127 + 24, 0));  // -2^24
  const std::uint16_t* order_a[] = {p0.data(), p1.data(), p2.data()};
  all_reduce(order_a, out.data());
  CHECK(out[0] == 0);
  const std::uint16_t* order_b[] = {p0.data(), p2.data(), p1.data()};
  all_reduce(order_b, out.data());
  CHECK(out[0] == make_bf16(0, 127, 0));
}

TEST_CASE("refusals: missing or unexpected weights, missing operands, bad inputs") {
  Batch b(1);
  const Constants k{no_weight(1e-8), weighted(1e-5, false, WeightDtype::bf16)};
  Operands ops = b.operands(k);
  ops.pre_weight = nullptr;
  CHECK_THROWS_WITH_AS(Boundary(k, ops), doctest::Contains("pre_weight"), InputError);
  ops = b.operands(k);
  ops.post_weight = b.post_w16.data();
  CHECK_THROWS_WITH_AS(Boundary(k, ops), doctest::Contains("post_weight"), InputError);
  ops = b.operands(k);
  ops.beta = nullptr;
  CHECK_THROWS_WITH_AS(Boundary(k, ops), doctest::Contains("beta"), InputError);
  Results r(1);
  Inputs in = b.inputs(StreamDtype::f32);
  in.m = 0;
  CHECK_THROWS_WITH_AS(Boundary(k, b.operands(k)).run(in, r.outputs()), doctest::Contains("m = 0"), InputError);
}
