// Values written as bit patterns, as the tests state them: make_f32(sign, biased exponent,
// fraction). A test reads like the IEEE encoding it exercises.
#pragma once

#include <bit>
#include <cstdint>

namespace boundary::test {

constexpr float make_f32(std::uint32_t sign, std::uint32_t exp, std::uint32_t frac) {
  return std::bit_cast<float>((sign << 31) | (exp << 23) | frac);
}
constexpr std::uint16_t make_bf16(std::uint32_t sign, std::uint32_t exp, std::uint32_t frac) {
  return static_cast<std::uint16_t>((sign << 15) | (exp << 7) | frac);
}
constexpr std::uint16_t make_f16(std::uint32_t sign, std::uint32_t exp, std::uint32_t frac) {
  return static_cast<std::uint16_t>((sign << 15) | (exp << 10) | frac);
}
constexpr std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }
constexpr float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }

}  // namespace boundary::test
