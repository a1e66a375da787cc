// The boundary's rounded products: mul_rn, except that the ftz_products mutant flushes a subnormal
// result to a zero of its sign. In the build's inline namespace, since its definition differs
// between builds.
#pragma once

#include "simd_clones.hpp"

#include <boundary/mutant.hpp>
#include <boundary/reference.hpp>

#include <cmath>

namespace boundary::ref {
inline namespace BOUNDARY_REF_ABI {

BOUNDARY_INLINE float product(float a, float b) {
  const float p = mul_rn(a, b);
  if constexpr (kMutant == Mutant::ftz_products)
    if (std::fabs(p) < 0x1p-126f) return std::copysign(0.0f, p);
  return p;
}

}  // inline namespace BOUNDARY_REF_ABI
}  // namespace boundary::ref
