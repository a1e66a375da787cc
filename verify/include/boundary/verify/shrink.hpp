// Shrinking a failing row to a minimal reproducer: first the fewest non-trivial elements (delta
// debugging over every element of every input tensor), then the simplest values (positive sign,
// fewer significand bits, exponent towards that of 1), keeping the predicate true throughout.
//
// Trivial values, the ones a reader skips: branch +0, stream +0, alpha 1 and beta 0 (res = s),
// weights +0. The result is deterministic, and it is a fixed point: shrinking it again changes
// nothing (unless max_predicate_calls ran out).
#pragma once

#include <boundary/reference.hpp>
#include <boundary/verify/safetensors.hpp>
#include <boundary/types.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace boundary::shrink {

// One row's inputs (m = 1) with its operands. The stream is in stream_f32 or stream_bf16 by
// stream_dtype (the other is empty); weights are raw bytes in their dtype, empty without a weight.
struct Case {
  Constants constants;
  std::vector<std::uint16_t> branch;
  std::vector<float> stream_f32;
  std::vector<std::uint16_t> stream_bf16;
  StreamDtype stream_dtype = StreamDtype::f32;
  std::vector<float> alpha, beta;
  std::vector<std::uint8_t> post_weight, pre_weight;
};

// Does the candidate still fail the same way (same tensor, same first divergent stage)?
using StillFails = std::function<bool(const Case&)>;

struct Result {
  Case minimal;
  int steps = 0;             // accepted simplifications
  int predicate_calls = 0;
  std::int64_t nontrivial_before = 0, nontrivial_after = 0;
};

Result shrink(const Case& failing, const StillFails& still_fails, int max_predicate_calls = 2000);

// Elements that differ from their trivial value (bit patterns: -0 is not trivial).
std::int64_t nontrivial_elements(const Case&);

// Row `row` of a file holding the boundary's input tensors (bind_inputs' names); InputError as
// bind_inputs gives it.
Case case_from_inputs(const Constants& constants, const safetensors::File& inputs, std::int64_t row);

// The fixture's input tensors (boundary_tensors.hpp names, m = 1).
safetensors::File to_inputs(const Case&);

// Views of the case for the emulator (pointers into the case).
ref::Operands operands(const Case&);
ref::Inputs inputs(const Case&);

}  // namespace boundary::shrink
