// The edge suite's row families, as the two files that build them share them: edge_suite.cpp (the
// operands, the value patterns, the plan) and edge_ties.cpp (the BF16 ties and FPRev rows, which
// ask the emulator for the row's own norm factors while the row is built).
#pragma once

#include <boundary/verify/edge_rows.hpp>
#include <boundary/primitives.hpp>
#include <boundary/reference.hpp>

#include <bit>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace boundary::suite::edge_detail {

constexpr std::uint32_t kBias = 127;

inline std::uint16_t pow2_bf16(int exponent) {
  return bf16_bits(0, static_cast<std::uint32_t>(static_cast<int>(kBias) + exponent), 0);
}

// ---- What a family may read while it builds a row: the operands and the emulator.
struct Context {
  const Constants& constants;
  const ref::Boundary& boundary;
  const float* alpha;
  const float* beta;
};

using Edit = std::function<void(const RowEdit&, const Context&)>;
struct Planned {
  std::string family;
  Edit edit;
};

inline bool is_bf16_tie(float v) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(v);
  return (bits & 0x7F800000u) != 0x7F800000u && (bits & 0xFFFFu) == 0x8000u;
}

// v as the norm's output stage gives it, for the norm factor r: gamma before or after, as the
// constants say.
float norm_output(const NormConstants& norm, const std::vector<float>& gamma, int c, float v, float r);

void add_ties(std::vector<Planned>& plan, int level);
void add_fprev(std::vector<Planned>& plan, int level);

}  // namespace boundary::suite::edge_detail
