// rsqrt_interpolated, the table-free model of MUFU.RSQ (issue 15), against the committed capture:
// every one of the 2^24 inputs of [1, 4) must give the captured bits (read through
// rsqrt_approx_ftz_f32, whose built-in table test_rsqrt checks against the provenance).
#include "../src/rsqrt_interpolated_table.hpp"
#include "bits.hpp"

#include <boundary/primitives.hpp>
#include <boundary/rsqrt_model.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <random>

using namespace boundary::ref;
using namespace boundary::test;
namespace model = boundary::rsqrt_model;
namespace interp = boundary::ref::rsqrt_interpolation;

TEST_CASE("equal to the capture on all 2^24 inputs of [1, 4)") {
  std::uint32_t mismatches = 0, first = 0;
  for (std::uint32_t i = 0; i < model::kTableSize; ++i) {
    const float x = from_bits(model::table_input_bits(i));
    if (bits(rsqrt_interpolated(x)) != bits(rsqrt_approx_ftz_f32(x)) && mismatches++ == 0) first = i;
  }
  if (mismatches != 0)
    std::printf("first mismatch: index %u (input 0x%08X)\n", first, model::table_input_bits(first));
  CHECK(mismatches == 0);
}

TEST_CASE("equal to the emulator on sampled bit patterns of all 2^32 (the shared scaling rules)") {
  std::mt19937 rng(15);
  for (int n = 0; n < 1000000; ++n) {
    const float x = from_bits(static_cast<std::uint32_t>(rng()));
    REQUIRE(bits(rsqrt_interpolated(x)) == bits(rsqrt_approx_ftz_f32(x)));
  }
}

TEST_CASE("the coefficients fit the widths docs/emulator.md states: at most 4 KB, 832 bytes packed") {
  static_assert(sizeof interp::kSegmentTable <= 4096);
  static_assert(sizeof(interp::Segment::c1) * 8 == interp::kC1Bits);  // c1's width is its type's
  static_assert(interp::kSegments * (interp::kC0Bits + interp::kC1Bits + interp::kC2Bits) == 832 * 8);
  for (const interp::Segment& s : interp::kSegmentTable) {
    const bool c0_has_26_bits = (s.c0 >> (interp::kC0Bits - 1)) == 1u;  // c0 in [2^25, 2^26)
    CHECK(c0_has_26_bits);
    CHECK(s.c2 < (1u << interp::kC2Bits));
  }
}
