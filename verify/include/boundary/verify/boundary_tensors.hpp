// The boundary's tensors in a safetensors file: their names, dtypes and shapes, checked once and
// bound to the emulator's Operands and Inputs (views into the file, no copies).
//
//   branch       BF16 [m, 8192]            or  partials BF16 [R, m, 8192], 1 <= R <= 8
//   stream       F32 or BF16 [m, 8192]
//   alpha, beta  F32 [8192]
//   post_weight  [8192] in post_weight_dtype, exactly when the post norm has a weight
//   pre_weight   [8192] in pre_weight_dtype, exactly when the pre norm has a weight
//
// Outputs and intermediates (emulate writes them, capture and replay read them):
//   out BF16 [m, 8192]; new_stream F32 [m, 8192]; branch (from partials) BF16 [m, 8192];
//   post_row_sum, r1, pre_row_sum, r2 F32 [m]; y_b, z BF16 [m, 8192]; res F32 [m, 8192]
#pragma once

#include <boundary/reference.hpp>
#include <boundary/verify/safetensors.hpp>

#include <string>
#include <vector>

namespace boundary {

struct BoundTensors {
  BoundTensors() = default;
  BoundTensors(BoundTensors&&) = default;  // moving keeps partial_rows' buffer, so the span stays valid
  BoundTensors(const BoundTensors&) = delete;
  BoundTensors& operator=(const BoundTensors&) = delete;

  std::int64_t m = 0;
  ref::Operands operands;
  ref::Inputs inputs;  // inputs.partials points into partial_rows
  std::vector<const std::uint16_t*> partial_rows;
};

// Throws InputError naming source and tensor for a missing, misshapen, mistyped or unexpected
// tensor. Tensors named in kOutputNames are allowed and ignored.
BoundTensors bind_inputs(const safetensors::File& file, const Constants& constants,
                         const std::string& source);

safetensors::Dtype weight_tensor_dtype(WeightDtype);

// The inverse of bind_inputs: the bound rows and operands copied into a file of input tensors
// (branch or partials, stream, alpha, beta, the weights the constants give), no metadata.
safetensors::File inputs_file(const Constants& constants, const BoundTensors& bound);

inline const std::vector<std::string> kOutputNames = {
    "out", "new_stream", "post_row_sum", "r1", "y_b", "z", "pre_row_sum", "r2", "res"};

}  // namespace boundary
