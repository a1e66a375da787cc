// Device twins of the emulator's primitives (<boundary/reference.hpp>), each pinned to the one
// PTX instruction the contract names, so that nvcc can neither contract nor approximate it.
// Named like the emulator function it matches: one grep finds both. Pure: no planted bug lives
// here (the steps that use them hold the seams).
#pragma once

#include <cstdint>

namespace boundary::dev {

__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }

__device__ __forceinline__ float rsqrt_approx_ftz_f32(float x) {
  float r;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ float bf16_to_f32(std::uint16_t h) {
  return __uint_as_float(static_cast<std::uint32_t>(h) << 16);
}

__device__ __forceinline__ std::uint16_t f32_to_bf16_rn(float x) {
  std::uint16_t r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
  return r;
}

// cvt.rn.bf16x2.f32 d, a, b puts a in the high half: hi is the higher column.
__device__ __forceinline__ std::uint32_t f32x2_to_bf16x2_rn(float hi, float lo) {
  std::uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ std::uint16_t f32_to_f16_rn(float x) {
  std::uint16_t r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ float f16_to_f32(std::uint16_t h) {
  float r;
  asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
  return r;
}

}  // namespace boundary::dev
