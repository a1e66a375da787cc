// The coefficients of rsqrt_interpolated (<boundary/rsqrt_model.hpp>): one quadratic per segment of
// [1, 4), segment = (exponent parity << 6) | top 6 mantissa bits.
#pragma once

#include <cstdint>

namespace boundary::ref::rsqrt_interpolation {

inline constexpr int kSegmentBits = 7;  // exponent parity + 6 mantissa bits
inline constexpr int kSegments = 1 << kSegmentBits;
inline constexpr int kOffsetBits = 23 - (kSegmentBits - 1);  // dx: the 17 low mantissa bits

// Widths the hardware needs (checked by the test): c0 26 bits (top bit always set), c1 16, c2 10:
// 52 bits a segment, 832 bytes packed. Stored in 8 bytes a segment: 1 KB.
inline constexpr int kC0Bits = 26, kC1Bits = 16, kC2Bits = 10;

struct Segment {
  std::uint32_t c0;  // value at dx = 0: 1/sqrt(f) ~ c0 * 2^-26 (2 bits below the result's last place)
  std::uint16_t c1;  // |slope|, subtracted: c1 * dx * 2^-40
  std::uint16_t c2;  // curvature: c2 * truncated dx^2 * 2^-57
};

extern const Segment kSegmentTable[kSegments];

}  // namespace boundary::ref::rsqrt_interpolation
