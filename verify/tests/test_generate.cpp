// The realistic input generator (contract section 9).
#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/edge_rows.hpp>
#include <boundary/verify/generate.hpp>
#include <boundary/primitives.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <string_view>

using namespace boundary;
namespace st = boundary::safetensors;

namespace {
Constants stock_ffn() { return read_constants(BOUNDARY_SOURCE_DIR "/fixtures/constants/muse-spark-post-ffn.json"); }
Constants stock_attention() {
  return read_constants(BOUNDARY_SOURCE_DIR "/fixtures/constants/muse-spark-post-attention.json");
}
}  // namespace

TEST_CASE("Rng is the fixed splitmix64 sequence (the same numbers on every standard library)") {
  Rng rng(1234567);
  // splitmix64's published first output for seed 1234567.
  CHECK(rng.next() == 6457827717110365317ull);
  CHECK(rng.next() == 3203168211198807973ull);
}

TEST_CASE("same seed, same bytes; another seed, other bytes") {
  const auto a = generate_inputs(stock_ffn(), 3, 42);
  const auto b = generate_inputs(stock_ffn(), 3, 42);
  const auto c = generate_inputs(stock_ffn(), 3, 43);
  CHECK(st::serialize(a) == st::serialize(b));
  CHECK(st::serialize(a) != st::serialize(c));
}

TEST_CASE("tensors and dtypes follow the constants: weights exactly where a norm has one") {
  const auto ffn = generate_inputs(stock_ffn(), 2, 1, StreamDtype::bf16);
  CHECK(ffn.tensors.count("post_weight") == 1);
  CHECK(ffn.tensors.at("pre_weight").dtype == st::Dtype::BF16);
  CHECK(ffn.tensors.at("stream").dtype == st::Dtype::BF16);
  CHECK(ffn.tensors.at("branch").shape == std::vector<std::int64_t>{2, kH});
  const auto attn = generate_inputs(stock_attention(), 1, 1);
  CHECK(attn.tensors.count("post_weight") == 0);
  CHECK(attn.tensors.at("stream").dtype == st::Dtype::F32);
  Constants fp16 = stock_ffn();
  fp16.pre.weight_dtype = WeightDtype::fp16;
  CHECK(generate_inputs(fp16, 1, 1).tensors.at("pre_weight").dtype == st::Dtype::F16);
}

TEST_CASE("gates are the norm-preserving sigmoid pair; weights are small and zero-centred") {
  const auto f = generate_inputs(stock_ffn(), 1, 7);
  const float* alpha = f.tensors.at("alpha").data<float>();
  const float* beta = f.tensors.at("beta").data<float>();
  int spread = 0;
  for (int c = 0; c < kH; ++c) {
    REQUIRE(beta[c] > 0.0f);
    REQUIRE(beta[c] < 1.0f);
    REQUIRE(alpha[c] >= std::sqrt(1e-3f) * 0.999f);
    const float norm = alpha[c] * alpha[c] + beta[c] * beta[c];
    REQUIRE(norm > 0.75f);  // sqrt(sigmoid(-u)(1+beta)) keeps alpha^2 + beta^2 near 1
    REQUIRE(norm < 1.25f);
    spread += beta[c] < 0.2f || beta[c] > 0.8f;
  }
  CHECK(spread > 100);  // q / 0.3 spreads the gates over the sigmoid's range
  const std::uint16_t* w = f.tensors.at("post_weight").data<std::uint16_t>();
  int nonzero = 0;
  for (int c = 0; c < kH; ++c) {
    REQUIRE(std::fabs(ref::bf16_to_f32(w[c])) < 0.2f);
    nonzero += w[c] != 0;
  }
  CHECK(nonzero > kH / 2);
}

TEST_CASE("edge rows: one row per pattern, each holding its special values") {
  const auto patterns = edge_patterns();
  const auto f = generate_edge_inputs(stock_ffn(), 5, StreamDtype::f32);
  REQUIRE(f.tensors.at("branch").shape == std::vector<std::int64_t>{static_cast<std::int64_t>(patterns.size()), kH});
  const auto row_of = [&](std::string_view prefix) {
    for (std::size_t i = 0; i < patterns.size(); ++i)
      if (std::string_view(patterns[i].name).starts_with(prefix)) return static_cast<std::int64_t>(i);
    FAIL("no pattern " << std::string(prefix));
    return std::int64_t{-1};
  };
  const std::uint16_t* b = f.tensors.at("branch").data<std::uint16_t>();
  CHECK(b[row_of("branch: one negative NaN") * kH + 4000] == 0xFF81);
  CHECK(b[row_of("branch: +Inf in the first") * kH] == 0x7F80);
  const std::int64_t zeros = row_of("branch and stream all -0.0");
  for (int c = 0; c < kH; c += 511) CHECK(b[zeros * kH + c] == 0x8000);
  int big = 0, ones = 0;
  const std::int64_t fprev = row_of("FPRev: ones with one 2^12");
  for (int c = 0; c < kH; ++c) {
    big += b[fprev * kH + c] == 0x4580;
    ones += b[fprev * kH + c] == 0x3F80;
  }
  CHECK(big == 1);
  CHECK(ones == kH - 1);
  const auto bf = generate_edge_inputs(stock_ffn(), 5, StreamDtype::bf16);
  CHECK(bf.tensors.at("stream").dtype == st::Dtype::BF16);
  CHECK(bf.tensors.at("stream").data<std::uint16_t>()[row_of("stream: one signalling NaN") * kH + 123] == 0x7F81);
}
