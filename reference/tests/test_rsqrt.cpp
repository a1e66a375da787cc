// rsqrt_approx_ftz_f32: the model of MUFU.RSQ built from the H200 capture (fixtures/rsqrt).
// The device check (hardware/, verify/device.sh) compares it with the hardware on all
// 2^32 inputs; here: its rules, and that the built-in table is the captured one.
#include "bits.hpp"

#include <boundary/primitives.hpp>
#include <boundary/rsqrt_model.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <fstream>
#include <random>

using namespace boundary::ref;
using namespace boundary::test;
namespace model = boundary::rsqrt_model;

TEST_CASE("special values: zeros and subnormals flush to signed infinity, the rest per contract") {
  CHECK(bits(rsqrt_approx_ftz_f32(make_f32(0, 0, 0))) == 0x7F800000u);
  CHECK(bits(rsqrt_approx_ftz_f32(make_f32(1, 0, 0))) == 0xFF800000u);
  CHECK(bits(rsqrt_approx_ftz_f32(make_f32(0, 0, 1))) == 0x7F800000u);
  CHECK(bits(rsqrt_approx_ftz_f32(make_f32(1, 0, 0x7FFFFF))) == 0xFF800000u);
  CHECK(bits(rsqrt_approx_ftz_f32(make_f32(0, 0xFF, 0))) == 0u);             // +Inf -> +0
  CHECK(bits(rsqrt_approx_ftz_f32(make_f32(1, 0xFF, 0))) == 0x7FFFFFFFu);    // -Inf
  CHECK(bits(rsqrt_approx_ftz_f32(make_f32(1, 127, 0))) == 0x7FFFFFFFu);     // -1
  CHECK(bits(rsqrt_approx_ftz_f32(make_f32(1, 1, 0))) == 0x7FFFFFFFu);       // smallest negative normal
  for (std::uint32_t nan : {0x7FC00000u, 0x7F800001u, 0xFFC00000u, 0xFFFFFFFFu})
    CHECK(bits(rsqrt_approx_ftz_f32(from_bits(nan))) == 0x7FFFFFFFu);
}

TEST_CASE("powers of four are exact: rsqrt(4^k) = 2^-k, the smallest normal and the largest finite") {
  CHECK(bits(rsqrt_approx_ftz_f32(1.0f)) == bits(1.0f));  // measured: MUFU.RSQ(1) = 1
  for (int k = -63; k <= 63; ++k)
    CHECK(bits(rsqrt_approx_ftz_f32(make_f32(0, static_cast<std::uint32_t>(127 + 2 * k), 0))) ==
          bits(make_f32(0, static_cast<std::uint32_t>(127 - k), 0)));
  CHECK(bits(rsqrt_approx_ftz_f32(make_f32(0, 1, 0))) == bits(make_f32(0, 127 + 63, 0)));
  const float big = rsqrt_approx_ftz_f32(make_f32(0, 254, 0x7FFFFF));
  CHECK(std::isnormal(big));
}

TEST_CASE("scaling: rsqrt(x * 4^k) = rsqrt(x) * 2^-k exactly, for sampled x") {
  std::mt19937 rng(7);
  for (int n = 0; n < 100000; ++n) {
    const auto mant = static_cast<std::uint32_t>(rng() & 0x7FFFFF);
    const auto e0 = static_cast<std::uint32_t>(127 + (rng() & 1));  // x in [1, 4)
    const float r = rsqrt_approx_ftz_f32(make_f32(0, e0, mant));
    const int k = static_cast<int>(rng() % 127) - 63;
    const float scaled = rsqrt_approx_ftz_f32(make_f32(0, static_cast<std::uint32_t>(static_cast<int>(e0) + 2 * k), mant));
    REQUIRE(bits(scaled) == bits(std::ldexp(r, -k)));
  }
}

TEST_CASE("the built-in table is the capture: its delta histogram equals the provenance's") {
  std::ifstream f(BOUNDARY_SOURCE_DIR "/fixtures/rsqrt/provenance.json");
  REQUIRE(f.good());
  const auto provenance = nlohmann::json::parse(f);
  std::array<long long, 4> histogram{};
  for (std::uint32_t i = 0; i < model::kTableSize; ++i) {
    const float r = rsqrt_approx_ftz_f32(from_bits(model::table_input_bits(i)));
    const long long delta = static_cast<long long>(bits(r)) - static_cast<long long>(model::nearest_bits(i));
    REQUIRE(delta >= model::kMinDelta);
    REQUIRE(delta <= model::kMaxDelta);
    ++histogram[static_cast<std::size_t>(delta - model::kMinDelta)];
  }
  for (int d = model::kMinDelta; d <= model::kMaxDelta; ++d)
    CHECK(histogram[static_cast<std::size_t>(d - model::kMinDelta)] ==
          provenance["delta_histogram"][std::to_string(d)].get<long long>());
}

TEST_CASE("within -2 .. +1 ulp of the correctly rounded 1/sqrt (contract section 2)") {
  std::mt19937 rng(11);
  for (int n = 0; n < 200000; ++n) {
    const float x = from_bits(0x00800000u + static_cast<std::uint32_t>(rng() % (0x7F800000u - 0x00800000u)));  // positive normal
    const double exact = 1.0 / std::sqrt(static_cast<double>(x));
    const long long d = static_cast<long long>(bits(rsqrt_approx_ftz_f32(x))) -
                        static_cast<long long>(bits(static_cast<float>(exact)));
    REQUIRE(d >= -2);
    REQUIRE(d <= 1);
  }
}
