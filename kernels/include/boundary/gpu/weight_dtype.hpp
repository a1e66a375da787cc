// A norm weight's dtype as the constants name it (WeightDtype) and as a tensor view carries it
// (Dtype): one map for the host API's checks, the verifier's uploads and the tests.
#pragma once

#include <boundary/gpu/draft_boundary.hpp>

namespace boundary::gpu {

constexpr Dtype weight_dtype(WeightDtype d) {
  return d == WeightDtype::bf16 ? Dtype::bf16 : d == WeightDtype::fp16 ? Dtype::f16 : Dtype::f32;
}

}  // namespace boundary::gpu
