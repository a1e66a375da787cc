// rsqrt_interpolated: MUFU.RSQ on [1, 4) as the quadratic interpolator it appears to be, from
// 1 KB of coefficients instead of the 4 MB capture (issue 15). Equal to the capture on all 2^24
// inputs of [1, 4) (tests/test_rsqrt_interpolated.cpp), hence on all 2^32 by the model's rules.
#include "rsqrt_interpolated_table.hpp"

#include <boundary/rsqrt_model.hpp>

#include <algorithm>
#include <bit>

namespace boundary::ref {

namespace {

namespace interp = rsqrt_interpolation;

// dx^2 as a squarer's partial-product array holds it (b_i b_j for i < j once, at 2^(i+j+1); b_i
// at 2^(2i)), with every bit of weight below 2^19 dropped before the carries are summed; returns
// the kept sum / 2^19 (15 bits). This is not floor(dx^2 / 2^19): the dropped columns' carries are
// lost too, and the capture rejects the exact square's truncation in every segment.
std::uint32_t truncated_square(std::uint32_t dx) {
  constexpr int kDropped = 19;
  std::uint64_t sum = 0;
  for (int i = 0; i < interp::kOffsetBits; ++i) {
    if (((dx >> i) & 1u) == 0) continue;
    if (2 * i >= kDropped) sum += std::uint64_t{1} << (2 * i);
    const int j0 = std::max(i + 1, kDropped - 1 - i);  // first j > i with i + j + 1 >= kDropped
    sum += std::uint64_t{dx >> j0 << j0} << (i + 1);
  }
  return static_cast<std::uint32_t>(sum >> kDropped);
}

// Result bits for table_input_bits(index), as rsqrt_model::rsqrt_approx_ftz_bits needs them.
std::uint32_t interpolated_bits(std::uint32_t index) {
  // f = 1 is exact (rsqrt = 1, exponent 127); the quadratic alone gives 1 - 2^-24 there.
  if (index == 0) return 0x3F800000u;
  const interp::Segment& c = interp::kSegmentTable[index >> interp::kOffsetBits];
  const std::uint32_t dx = index & ((1u << interp::kOffsetBits) - 1);
  // The sum in units of 2^-40, 16 bits below the result's last place (2^-24). The c1 product
  // enters inverted (~p = -p - 1), without the +1 of a two's complement negation: the capture
  // needs exactly that one unit. The c2 product is 2 bits coarser than the c1 product.
  const std::int64_t acc = (std::int64_t{c.c0} << 14) + ~(std::int64_t{c.c1} * dx) +
                           (std::int64_t{c.c2} * truncated_square(dx) << 2);
  // Truncate to the 24-bit significand y of a result in [0.5, 1): y * 2^-24, exponent 126.
  const auto y = static_cast<std::uint32_t>(acc >> 16);
  return (126u << 23) + (y - (1u << 23));
}

}  // namespace

float rsqrt_interpolated(float x) {
  return std::bit_cast<float>(
      rsqrt_model::rsqrt_approx_ftz_bits(std::bit_cast<std::uint32_t>(x), interpolated_bits));
}

}  // namespace boundary::ref
