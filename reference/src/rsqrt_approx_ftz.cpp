#include "mufu_rsq_table.hpp"

#include <boundary/primitives.hpp>
#include <boundary/rsqrt_model.hpp>

#include <bit>
#include <cfenv>
#include <stdexcept>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace boundary::ref {

namespace {

std::uint32_t captured_bits(std::uint32_t index) {
  const unsigned code = (boundary_mufu_rsq_delta[index >> 2] >> (2 * (index & 3u))) & 3u;
  return rsqrt_model::nearest_bits(index) +
         static_cast<std::uint32_t>(static_cast<int>(code) + rsqrt_model::kMinDelta);
}

}  // namespace

float rsqrt_approx_ftz_f32(float x) {
  return std::bit_cast<float>(
      rsqrt_model::rsqrt_approx_ftz_bits(std::bit_cast<std::uint32_t>(x), captured_bits));
}

void check_host_float_environment() {
#if defined(__SSE__)
  constexpr unsigned kFlushToZero = 0x8000u, kDenormalsAreZero = 0x0040u;
  if (_mm_getcsr() & (kFlushToZero | kDenormalsAreZero))
    throw std::runtime_error(
        "the host flushes subnormals (MXCSR FTZ/DAZ set, as -ffast-math startup code does): "
        "the emulator's results would not be the contract's");
#endif
  if (std::fegetround() != FE_TONEAREST)
    throw std::runtime_error("the host rounding mode is not round-to-nearest-even");
}

}  // namespace boundary::ref
