// The gate's input suites: the edge suite (TestFloat-style exponent x significand sweeps and
// named row families over realistic rows, with edge gates and weights in a few columns), the
// fuzz suite (realistic rows with random bit patterns), the edge constants, and the vacuity
// check that proves a suite can catch the planted bugs of the emulator.
#pragma once

#include <boundary/mutant.hpp>
#include <boundary/reference.hpp>
#include <boundary/verify/safetensors.hpp>
#include <boundary/types.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace boundary::suite {

struct Suite {
  std::string name;                      // "edge", "fuzz"
  safetensors::File inputs;              // branch, stream, alpha, beta, weights (boundary_tensors.hpp names)
  std::vector<std::string> row_family;   // one entry per row: the family or pattern that made it
};

// Level 1: the default edge suite (a few hundred rows); level 2: larger (every exponent x
// significand pair of the sweeps, more rows per family). Gates and weights are shared by all rows,
// so their edge values live in fixed columns (gate_edge_columns(), weight_edge_columns()) of the
// suite's alpha, beta and weights, and a weight whose gamma is 1 in the order rows' columns under
// input scale (order_rows.hpp); every other column keeps its realistic value. Only finite
// values go there: a NaN or infinite gate would make every row of the suite NaN (see
// make_operand_special_suite for those). The same seed gives the same bytes.
Suite make_edge_suite(const Constants& constants, int level, std::uint64_t seed, StreamDtype stream_dtype);

// Realistic rows (contract section 9) in which each element is, with probability 1/64, replaced
// by a uniformly random bit pattern of its dtype (NaN and infinity included). Deterministic in seed.
Suite make_fuzz_suite(const Constants& constants, std::int64_t rows, std::uint64_t seed, StreamDtype stream_dtype);

// NaN (quiet and signalling, both signs) and infinities in the gates and weights: one small suite
// per special operand column, a few realistic rows each (such a column makes whole rows NaN, so
// it cannot share a file with the edge suite). Suite::name says which operand holds what.
std::vector<Suite> make_operand_special_suites(const Constants& constants, std::uint64_t seed,
                                               StreamDtype stream_dtype);

// The columns that hold edge gates and edge weights in make_edge_suite.
std::vector<int> gate_edge_columns();
std::vector<int> weight_edge_columns();

// Edge constants: named variants of `base` that the constants file accepts (eps 0; eps the
// smallest normal float; gain centre 0 and 1 and every weight dtype for the norms that have a
// weight; fma_squares on). A variant equal to base is left out.
std::vector<std::pair<std::string, Constants>> edge_constants(const Constants& base);

// Rows of `inputs` in which a value lands exactly halfway between two BF16 numbers before its
// rounding, found from the emulator's outputs: y (the post norm's output before y_b), res (before
// z) and o (the pre norm's output before out).
struct TieRows { std::int64_t y = 0, res = 0, out = 0; };
TieRows count_tie_rows(const Constants& constants, const safetensors::File& inputs);

// Why planted bug `m` cannot change any output under `constants` on inputs of `ranks` rank
// partials (1 for a branch), derived from those alone; nullopt when it can. gain_unrounded skips
// the rounding of gamma = weight + centre to the weight's dtype: that rounding is the identity when
// no norm has a weight, when every weight is FP32, or when every centre is 0 (a BF16 or FP16 value
// plus 0 is that value; a NaN becomes the canonical NaN either way, and every use of gamma is a
// product, whose NaN is canonical too). rank_order adds the partials last rank first: with one
// partial there is no sum, and with two add_rn(a, b) == add_rn(b, a) bit for bit (a NaN is
// canonical), so it needs R >= 3.
std::optional<std::string> not_applicable(Mutant m, const Constants& constants, int ranks);
// The rank partials of bound inputs: their count, 1 for a branch.
int ranks_of(const ref::Inputs& inputs);

// Vacuity: for every mutant with an emulator twin, how many rows of `inputs` it changes (any bit
// of out or new_stream differs from the production emulator's); `not_applicable` the mutants that
// cannot change any output under the constants, with the reason; `uncaught` lists the applicable
// mutants that change no row, in mutant order. A mutant declared not applicable that changes a row
// contradicts its reason: check_vacuity throws std::logic_error (a defect of the tool).
struct Vacuity {
  std::map<std::string, std::int64_t> rows_caught;
  std::map<std::string, std::string> not_applicable;
  std::vector<std::string> uncaught;
};
Vacuity check_vacuity(const Constants& constants, const safetensors::File& inputs, unsigned threads);

// The first `per_mutant` rows that each emulator twin changes, in row order without repeats: a
// small set of rows that still catches every planted bug (capture --edge-suite writes them).
std::vector<std::int64_t> witness_rows(const Constants& constants, const safetensors::File& inputs, int per_mutant,
                                       unsigned threads);
// inputs with only these rows of every [m, H] tensor (the operands unchanged): a smaller file
// for captures and reruns.
safetensors::File select_rows(const safetensors::File& inputs, std::span<const std::int64_t> rows);

// inputs (with a branch) as kRankPartials rank partials for the all-reduce boundary: P_0 = c,
// P_1 = -c, P_2 = the branch, c = 2^100. In rank order c + -c = +0 exactly, then + b = b (a -0
// becomes +0 and a NaN the canonical NaN, which the emulator given the same partials sees too,
// and no output can show: every output is arithmetic on it), so every other planted bug meets the
// rows as they are. Summed last rank first (rank_order), b + -c rounds to -c wherever
// |b| < 2^76 (half an ulp of c) and -c + c leaves 0: a row with any such nonzero element loses it.
inline constexpr int kRankPartials = 3;
safetensors::File as_rank_partials(const safetensors::File& inputs);

}  // namespace boundary::suite
