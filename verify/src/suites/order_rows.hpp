// The edge suite's order rows (edge_suite.cpp): rows whose row sum is finite in the contract's
// summation order and overflows to infinity in a changed order (or the reverse), so that any order
// bug of the warp butterfly, the warp totals or the fragments of a thread changes a norm factor from
// a finite value to 0 and with it whole outputs, under every legal constants set: with or without
// weights of any dtype, input scale, fma squares, any eps. The FPRev rows beside them need a BF16
// tie to break, which a norm without a rounded gain often does not admit.
#pragma once

#include <boundary/verify/edge_rows.hpp>
#include <boundary/types.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace boundary::suite::order {

// What an order row may read while it is built: the constants, the suite's gains (empty without a
// weight) and gates.
struct Operands {
  const Constants& constants;
  const std::vector<float>& post_gamma;
  const std::vector<float>& pre_gamma;
  const float* alpha;
  const float* beta;
};

struct Family {
  std::string name;
  std::function<void(const RowEdit&, const Operands&)> edit;
};

// The order rows, in the branch (post norm) and in the stream (pre norm); beta_zero_column: a
// column of the suite whose gate beta is 0 and alpha 1.
std::vector<Family> families(int beta_zero_column);

// The columns the order rows use. Under input scale (x' = gamma * x) a weighted element is exact
// only where gamma is exactly 1: the suite gives the weight of these columns unit_weight_bits.
std::vector<int> unit_gain_columns();
// The weight, in the norm's dtype, whose gamma (weight + centre, rounded to the dtype) is 1: 1 -
// centre (exact for the centres 0 and 1).
std::uint32_t unit_weight_bits(const NormConstants& norm);

// The stream element whose z = bf16(alpha * s) is `target` (branch zero, so y_b = 0): the BF16
// value nearest target / alpha, or a neighbour that hits target exactly.
float stream_for_z(float alpha, float target);
// Whether stream_for_z hits target exactly in a column of gate alpha.
bool z_exact(float alpha, float target);

}  // namespace boundary::suite::order
