// One norm's constants as the kernels take them: a plain struct, shared by host and device code.
#pragma once

namespace boundary::dev {

enum class WeightKind : int { none = 0, bf16 = 1, fp16 = 2, fp32 = 3 };

struct NormArgs {
  const void* weight;     // [8192] of kind, or nullptr
  WeightKind kind;
  float gain;             // float(gain centre)
  float eps;              // float(eps)
  bool input_scale;
  bool fma_squares;
};

}  // namespace boundary::dev
