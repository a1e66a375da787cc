// The contract's primitive operations (section 2) as an sm_90 GPU computes them, on the host.
// One primitive per function, each with its contract: domain, rounding, NaN, flush. Inline, so
// that the emulator's elementwise loops vectorize through them. Their device twins, named
// alike, are in kernels/include/boundary/device/primitives.cuh.
//
// Host requirements: IEEE binary32 arithmetic with subnormals (no FTZ/DAZ in MXCSR) and no
// contraction (-ffp-contract=off); boundary::ref::check_host_float_environment() checks the
// former at run time.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace boundary::ref {

// ---- The target's NaN rules: the one place they live (measured on an H200 by
// hardware/nan_probe.cu, every NaN input pattern of each operation).
inline constexpr std::uint32_t kNanF32 = 0x7FFFFFFFu;  // any NaN result of FP32 add/mul/fma and cvt.f32.f16
inline constexpr std::uint16_t kNanBf16 = 0x7FFFu;     // any NaN result of cvt.rn.bf16.f32
inline constexpr std::uint16_t kNanF16 = 0x7FFFu;      // any NaN result of cvt.rn.f16.f32

inline float nan_f32() { return std::bit_cast<float>(kNanF32); }

// A NaN (whatever its payload and sign) becomes the canonical NaN; other values pass.
inline float canonicalize_nan_f32(float x) { return std::isnan(x) ? nan_f32() : x; }

// ---- FP32 arithmetic: IEEE round to nearest even, subnormal operands and results kept.
// NaN: any NaN result is 0x7FFFFFFF, including Inf*0 and Inf-Inf (x86 would give 0xFFC00000
// or propagate a payload).
inline float mul_rn(float a, float b) { return canonicalize_nan_f32(a * b); }
inline float add_rn(float a, float b) { return canonicalize_nan_f32(a + b); }
// One rounding of a*b+c.
inline float fma_rn(float a, float b, float c) { return canonicalize_nan_f32(std::fma(a, b, c)); }

// ---- BF16.
// Exact: the bits shifted left by 16. A NaN keeps its payload (no arithmetic happens).
inline float bf16_to_f32(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

// cvt.rn.bf16.f32: round to nearest even on the bit pattern; subnormals rounded, never
// flushed; overflow rounds to infinity; any NaN gives 0x7FFF.
inline std::uint16_t f32_to_bf16_rn(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return kNanBf16;
  // Adding 0x7FFF plus the kept LSB rounds half to even; a carry into the exponent is the
  // correct next binade (or infinity).
  return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// ---- FP16.
// cvt.f32.f16: exact for every finite value (subnormals included) and infinity; any NaN
// gives 0x7FFFFFFF.
inline float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  const std::uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return mant ? nan_f32() : std::bit_cast<float>(sign | 0x7F800000u);
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
  // Subnormal or zero: mant * 2^-24, exact in FP32.
  const float magnitude = std::ldexp(static_cast<float>(mant), -24);
  return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(magnitude));
}

// cvt.rn.f16.f32: round to nearest even; FP16 subnormals kept; overflow rounds to infinity
// (65520, the tie between 65504 and 2^16, included); any NaN gives 0x7FFF.
inline std::uint16_t f32_to_f16_rn(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return kNanF16;
  if (abs >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // >= 65520
  std::uint32_t mant, shift;
  if (abs >= 0x38800000u) {  // FP16 normal: rebias the exponent, drop 13 bits
    mant = abs - 0x38000000u;
    shift = 13;
  } else {                   // FP16 subnormal or zero: the significand over 2^-24
    const std::uint32_t exp = abs >> 23;
    shift = 126u - exp;      // >= 14
    if (shift > 24) return static_cast<std::uint16_t>(sign);  // below half of 2^-24
    mant = (abs & 0x7FFFFFu) | 0x800000u;
  }
  const std::uint32_t kept = mant >> shift;
  const std::uint32_t rest = mant & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  const std::uint32_t rounded = kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
  return static_cast<std::uint16_t>(sign | rounded);
}

// ---- rsqrt.approx.ftz.f32 (MUFU.RSQ), from the table captured on an H200 (fixtures/rsqrt)
// and the rules of <boundary/rsqrt_model.hpp>:
//   NaN, a negative normal, -Inf -> 0x7FFFFFFF; +-0 and subnormal inputs (flushed) -> infinity
//   of the input's sign; +Inf -> +0; x = f * 4^k with f in [1, 4) -> rsqrt(f) * 2^-k exactly.
float rsqrt_approx_ftz_f32(float x);

// Throws std::runtime_error when the host's floating-point environment would change bits:
// flush-to-zero or denormals-are-zero set (as -ffast-math's startup code does).
void check_host_float_environment();

}  // namespace boundary::ref
