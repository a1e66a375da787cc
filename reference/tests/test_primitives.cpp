// The contract's primitives (section 2), from bit patterns.
#include "bits.hpp"

#include <boundary/primitives.hpp>

#include <doctest/doctest.h>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <ios>
#include <limits>
#include <stdexcept>
#include <vector>

using namespace boundary::ref;
using namespace boundary::test;

namespace {

constexpr std::uint32_t kCanon = 0x7FFFFFFFu;
const float kQuietNan = make_f32(0, 0xFF, 0x400000);
const float kSignallingNan = make_f32(0, 0xFF, 0x000001);
const float kNegativeNan = make_f32(1, 0xFF, 0x400123);
const float kInf = make_f32(0, 0xFF, 0);
const float kMinSubnormal = make_f32(0, 0, 1);

// An oracle independent of the bit tricks under test: the nearest entry of a sorted table of
// every finite value of a 16-bit format (and infinity one ulp past the largest, as the formats'
// overflow rule implies), ties to the even bit pattern.
struct Nearest16 {
  std::vector<std::pair<double, std::uint16_t>> values;  // non-negative, ascending
  std::uint16_t operator()(float x) const {
    const double a = std::fabs(static_cast<double>(x));
    const auto hi = std::lower_bound(values.begin(), values.end(), std::make_pair(a, std::uint16_t{0}));
    std::uint16_t r;
    if (hi == values.begin()) r = hi->second;
    else if (hi == values.end()) r = values.back().second;
    else {
      const auto lo = hi - 1;
      const double dlo = a - lo->first, dhi = hi->first - a;
      r = dlo < dhi ? lo->second : dhi < dlo ? hi->second : ((lo->second & 1) ? hi->second : lo->second);
    }
    return static_cast<std::uint16_t>(r | (std::signbit(x) ? 0x8000 : 0));
  }
};

Nearest16 nearest_table(double (*decode)(std::uint16_t), std::uint16_t inf_bits, double inf_value) {
  Nearest16 t;
  for (std::uint32_t h = 0; h < inf_bits; ++h) t.values.emplace_back(decode(static_cast<std::uint16_t>(h)), static_cast<std::uint16_t>(h));
  t.values.emplace_back(inf_value, inf_bits);
  return t;
}
double decode_bf16(std::uint16_t h) { return static_cast<double>(bf16_to_f32(h)); }
double decode_f16(std::uint16_t h) {  // by the format's definition, not by f16_to_f32
  const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  return e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
}

// Inputs that hit every rounding case: a prime stride over all 2^32 patterns, plus the
// patterns just around each tie of a 16-bit format.
template <class F>
void for_sampled_f32(std::uint32_t drop_bits, F f) {
  for (std::uint64_t b = 0; b < (1ull << 32); b += 4093) f(from_bits(static_cast<std::uint32_t>(b)));
  for (std::uint32_t hi = 0; hi < (1u << (32 - drop_bits)); hi += 7) {
    const std::uint32_t tie = (hi << drop_bits) | (1u << (drop_bits - 1));
    for (std::uint32_t b : {tie - 1, tie, tie + 1}) f(from_bits(b));
  }
}

}  // namespace

TEST_CASE("bf16_to_f32 then f32_to_bf16_rn returns every BF16 value; NaNs become 0x7FFF") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    const bool nan = (h & 0x7F80) == 0x7F80 && (h & 0x7F);
    CHECK(bits(bf16_to_f32(b)) == h << 16);  // exact, payload kept
    CHECK(f32_to_bf16_rn(bf16_to_f32(b)) == (nan ? 0x7FFF : h));
  }
}

TEST_CASE("f32_to_bf16_rn rounds to nearest even, keeps subnormals, overflows to infinity") {
  CHECK(f32_to_bf16_rn(make_f32(0, 127, 0x008000)) == make_bf16(0, 127, 0x00));  // tie, even below
  CHECK(f32_to_bf16_rn(make_f32(0, 127, 0x018000)) == make_bf16(0, 127, 0x02));  // tie, even above
  CHECK(f32_to_bf16_rn(make_f32(0, 127, 0x008001)) == make_bf16(0, 127, 0x01));
  CHECK(f32_to_bf16_rn(make_f32(1, 127, 0x007FFF)) == make_bf16(1, 127, 0x00));
  CHECK(f32_to_bf16_rn(make_f32(0, 0, 0x008000)) == 0x0000);                    // subnormal tie
  CHECK(f32_to_bf16_rn(make_f32(0, 0, 0x018000)) == 0x0002);
  CHECK(f32_to_bf16_rn(make_f32(0, 0, 0x00FFFF)) == 0x0001);
  CHECK(f32_to_bf16_rn(make_f32(0, 0, 0x7FFFFF)) == make_bf16(0, 1, 0));         // up into the normals
  CHECK(f32_to_bf16_rn(make_f32(1, 0, 0)) == 0x8000);                            // -0
  CHECK(f32_to_bf16_rn(make_f32(0, 254, 0x7FFFFF)) == 0x7F80);                   // overflow
  CHECK(f32_to_bf16_rn(make_f32(1, 254, 0x7F8000)) == 0xFF80);                   // tie at the top
  CHECK(f32_to_bf16_rn(make_f32(0, 254, 0x7F7FFF)) == 0x7F7F);
  CHECK(f32_to_bf16_rn(kInf) == 0x7F80);
  for (float nan : {kQuietNan, kSignallingNan, kNegativeNan}) CHECK(f32_to_bf16_rn(nan) == 0x7FFF);
}

TEST_CASE("f32_to_bf16_rn equals the nearest-value oracle on sampled and tie inputs") {
  const Nearest16 oracle = nearest_table(decode_bf16, 0x7F80, std::ldexp(1.0, 128));
  long checked = 0;
  for_sampled_f32(16, [&](float x) {
    if (std::isnan(x)) return;
    if (f32_to_bf16_rn(x) != oracle(x)) FAIL_CHECK("x bits 0x" << std::hex << bits(x));
    ++checked;
  });
  CHECK(checked > 1000000);
}

TEST_CASE("FP16: every value round-trips; NaN rules; ties and overflow") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto v = static_cast<std::uint16_t>(h);
    const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF);
    if (nan) {
      CHECK(bits(f16_to_f32(v)) == kCanon);
    } else {
      const double exact = decode_f16(static_cast<std::uint16_t>(h & 0x7FFF));
      const double expected = (h & 0x7C00) == 0x7C00 ? INFINITY : exact;
      CHECK(static_cast<double>(std::fabs(f16_to_f32(v))) == expected);
      CHECK(std::signbit(f16_to_f32(v)) == ((h & 0x8000) != 0));
      CHECK(f32_to_f16_rn(f16_to_f32(v)) == h);
    }
  }
  CHECK(f32_to_f16_rn(65520.0f) == make_f16(0, 31, 0));         // the tie at the top -> infinity
  CHECK(f32_to_f16_rn(-65520.0f) == make_f16(1, 31, 0));
  CHECK(f32_to_f16_rn(std::nextafter(65520.0f, 0.0f)) == make_f16(0, 30, 0x3FF));
  CHECK(f32_to_f16_rn(make_f32(0, 102, 0)) == 0x0000);           // 2^-25: tie -> even 0
  CHECK(f32_to_f16_rn(make_f32(0, 102, 1)) == 0x0001);
  CHECK(f32_to_f16_rn(make_f32(0, 103, 0x400000)) == 0x0002);    // 3 * 2^-25: tie -> even 2
  CHECK(f32_to_f16_rn(make_f32(1, 1, 0)) == 0x8000);             // far below: signed zero
  CHECK(f32_to_f16_rn(make_f32(0, 127, 0x001000)) == make_f16(0, 15, 0));  // normal tie, even
  CHECK(f32_to_f16_rn(make_f32(0, 127, 0x003000)) == make_f16(0, 15, 2));
  for (float nan : {kQuietNan, kSignallingNan, kNegativeNan}) CHECK(f32_to_f16_rn(nan) == 0x7FFF);
}

TEST_CASE("f32_to_f16_rn equals the nearest-value oracle on sampled and tie inputs") {
  const Nearest16 oracle = nearest_table(decode_f16, 0x7C00, 65536.0);
  long checked = 0;
  for_sampled_f32(13, [&](float x) {
    if (std::isnan(x)) return;
    if (f32_to_f16_rn(x) != oracle(x)) FAIL_CHECK("x bits 0x" << std::hex << bits(x));
    ++checked;
  });
  CHECK(checked > 1000000);
}

TEST_CASE("mul, add and fma give the canonical NaN for every NaN input and invalid operation") {
  for (float nan : {kQuietNan, kSignallingNan, kNegativeNan}) {
    CHECK(bits(mul_rn(nan, 2.0f)) == kCanon);
    CHECK(bits(mul_rn(-3.0f, nan)) == kCanon);
    CHECK(bits(add_rn(nan, 1.0f)) == kCanon);
    CHECK(bits(add_rn(-1.0f, nan)) == kCanon);
    CHECK(bits(fma_rn(nan, 1.0f, 1.0f)) == kCanon);
    CHECK(bits(fma_rn(1.0f, 1.0f, nan)) == kCanon);
  }
  CHECK(bits(mul_rn(kInf, 0.0f)) == kCanon);
  CHECK(bits(mul_rn(-0.0f, -kInf)) == kCanon);
  CHECK(bits(add_rn(kInf, -kInf)) == kCanon);
  CHECK(bits(fma_rn(kInf, 0.0f, 1.0f)) == kCanon);
  CHECK(bits(fma_rn(1.0f, kInf, -kInf)) == kCanon);
}

TEST_CASE("arithmetic keeps subnormal operands and results") {
  CHECK(bits(mul_rn(make_f32(0, 1, 0), 0.5f)) == bits(make_f32(0, 0, 0x400000)));
  CHECK(bits(mul_rn(kMinSubnormal, 0.5f)) == 0u);                           // tie -> even 0
  CHECK(bits(mul_rn(kMinSubnormal, 0.75f)) == 1u);
  CHECK(bits(mul_rn(kMinSubnormal, 3.0f)) == 3u);
  CHECK(bits(add_rn(kMinSubnormal, kMinSubnormal)) == 2u);
  CHECK(bits(mul_rn(-kMinSubnormal, 0.25f)) == 0x80000000u);                // -0
  CHECK(bits(fma_rn(make_f32(0, 52, 0), make_f32(0, 52, 0), 0.0f)) == 0u);  // 2^-150: tie -> 0
  CHECK(bits(fma_rn(make_f32(0, 52, 0), make_f32(0, 52, 0), kMinSubnormal)) == 2u);
}

TEST_CASE("fma rounds once; mul then add rounds twice") {
  const float a = make_f32(0, 127, 0x000800);  // 1 + 2^-12: a*a = 1 + 2^-11 + 2^-24
  const float s = make_f32(0, 103, 0);         // 2^-24
  CHECK(bits(fma_rn(a, a, s)) == bits(make_f32(0, 127, 0x001001)));
  CHECK(bits(add_rn(s, mul_rn(a, a))) == bits(make_f32(0, 127, 0x001000)));
}

TEST_CASE("the host float environment is the one the emulator needs") {
  CHECK_NOTHROW(check_host_float_environment());
}

// The guard itself: each environment that would change the emulator's bits is refused, and the
// environment is restored after each (the other tests need the default one).
TEST_CASE("the host float environment check refuses FTZ, DAZ and a rounding mode other than nearest") {
#if defined(__SSE__)
  const unsigned saved = _mm_getcsr();
  for (const unsigned flag : {0x8000u /* FTZ */, 0x0040u /* DAZ */}) {
    _mm_setcsr(saved | flag);
    CHECK_THROWS_WITH_AS(check_host_float_environment(), doctest::Contains("flushes subnormals"), std::runtime_error);
    _mm_setcsr(saved);
  }
#endif
  for (const int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
    REQUIRE(std::fesetround(mode) == 0);
    CHECK_THROWS_WITH_AS(check_host_float_environment(), doctest::Contains("round-to-nearest-even"), std::runtime_error);
    std::fesetround(FE_TONEAREST);
  }
  CHECK_NOTHROW(check_host_float_environment());
}
