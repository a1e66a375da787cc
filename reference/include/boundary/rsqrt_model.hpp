// The model of rsqrt.approx.ftz.f32 (SASS MUFU.RSQ) on sm_90, contract section 2.
//
// The hardware's values on [1, 4) are a table of 2^24 results captured from an H200
// (hardware/mufu_rsq_capture.cu). Every other input follows from that table by the
// scaling and special-value rules below; the capture program checks those rules against the
// hardware for all 2^32 inputs. This header is shared by the emulator (host) and the capture
// program (device), so both apply one rule.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define BOUNDARY_HD __host__ __device__
#else
#define BOUNDARY_HD
#endif

namespace boundary::rsqrt_model {

inline constexpr std::uint32_t kTableSize = 1u << 24;
inline constexpr std::uint32_t kNanBits = 0x7FFFFFFFu;  // canonical NaN of sm_90 FP32 results

// The delta of a captured value from the nearest float to 1/sqrt(f), in units of the result's
// bit pattern, lies in [kMinDelta, kMaxDelta]; packed as delta - kMinDelta in 2 bits.
inline constexpr int kMinDelta = -2;
inline constexpr int kMaxDelta = 1;
inline constexpr std::uint32_t kPackedBytes = kTableSize / 4;

// Table index i stands for f in [1, 4): exponent field 127 + (i >> 23), mantissa i & 0x7FFFFF.
BOUNDARY_HD inline std::uint32_t table_input_bits(std::uint32_t index) {
  return ((127u + (index >> 23)) << 23) | (index & 0x7FFFFFu);
}

// Bits of float(1.0 / sqrt(double(f))): IEEE sqrt and division in double, one rounding to
// float. Deterministic on any IEEE machine, which is all the packing needs of it.
inline std::uint32_t nearest_bits(std::uint32_t index) {
  const std::uint32_t in = table_input_bits(index);
  float f;
  std::memcpy(&f, &in, sizeof f);
  const float r = static_cast<float>(1.0 / std::sqrt(static_cast<double>(f)));
  std::uint32_t out;
  std::memcpy(&out, &r, sizeof out);
  return out;
}

// The whole function from its values on [1, 4). lookup(index) returns the result bits for
// table_input_bits(index).
//   NaN, a negative normal, -Inf      -> 0x7FFFFFFF
//   +-0 and subnormals (flushed)      -> infinity with the input's sign
//   +Inf                              -> +0
//   x = f * 4^k, f in [1, 4)          -> lookup(f) * 2^-k, exact (the result stays normal)
template <class Lookup>
BOUNDARY_HD inline std::uint32_t rsqrt_approx_ftz_bits(std::uint32_t x, Lookup lookup) {
  const std::uint32_t sign = x & 0x80000000u;
  const std::uint32_t exp_field = (x >> 23) & 0xFFu;
  const std::uint32_t mantissa = x & 0x7FFFFFu;
  if (exp_field == 0xFFu) return (mantissa != 0 || sign) ? kNanBits : 0u;
  if (exp_field == 0) return sign | 0x7F800000u;
  if (sign) return kNanBits;
  const int e = static_cast<int>(exp_field) - 127;  // -126 .. 127
  const int k = (e >= 0) ? e / 2 : -((1 - e) / 2);   // floor(e / 2)
  const std::uint32_t index = (static_cast<std::uint32_t>(e - 2 * k) << 23) | mantissa;
  const std::int32_t r = static_cast<std::int32_t>(lookup(index));
  return static_cast<std::uint32_t>(r - k * (1 << 23));
}

}  // namespace boundary::rsqrt_model

namespace boundary::ref {

// rsqrt.approx.ftz.f32 without the captured table (issue 15): the same rules as above around a
// quadratic interpolator for f in [1, 4) (reference/src/rsqrt_interpolated.cpp), 128 segments
// indexed by the exponent's parity and the top 6 mantissa bits, dx = the low 17 mantissa bits:
//   y = floor((c0 * 2^14 - c1 * dx - 1 + 4 * c2 * sq(dx)) / 2^16),  result = y * 2^-24,
// c0 26 bits, c1 16, c2 10 (832 bytes packed), sq(dx) = dx^2 from a squarer array with the
// columns below 2^19 dropped, divided by 2^19; f = 1 gives 1 exactly. Equal to the capture (and
// so to rsqrt_approx_ftz_f32) on all 2^24 inputs of [1, 4), hence, by the rules, on all 2^32.
// Host only; the emulator keeps using the captured table.
float rsqrt_interpolated(float x);

}  // namespace boundary::ref
