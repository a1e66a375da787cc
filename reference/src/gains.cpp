#include <boundary/mutant.hpp>
#include <boundary/reference.hpp>

namespace boundary::ref {
inline namespace BOUNDARY_REF_ABI {

// Whether gamma is rounded to the weight's dtype (the gain_unrounded mutant keeps the FP32 sum).
constexpr bool kRoundGain = kMutant != Mutant::gain_unrounded;

std::vector<float> gamma(const NormConstants& norm, const void* weight) {
  if (!norm.has_weight()) return {};
  const float g = static_cast<float>(*norm.gain_center);
  std::vector<float> out(kH);
  switch (norm.weight_dtype) {
    case WeightDtype::bf16: {
      const auto* w = static_cast<const std::uint16_t*>(weight);
      for (int c = 0; c < kH; ++c) {
        const float sum = add_rn(bf16_to_f32(w[c]), g);
        out[c] = kRoundGain ? bf16_to_f32(f32_to_bf16_rn(sum)) : sum;
      }
      break;
    }
    case WeightDtype::fp16: {
      const auto* w = static_cast<const std::uint16_t*>(weight);
      for (int c = 0; c < kH; ++c) {
        const float sum = add_rn(f16_to_f32(w[c]), g);
        out[c] = kRoundGain ? f16_to_f32(f32_to_f16_rn(sum)) : sum;
      }
      break;
    }
    case WeightDtype::fp32: {
      const auto* w = static_cast<const float*>(weight);
      for (int c = 0; c < kH; ++c) out[c] = add_rn(w[c], g);
      break;
    }
  }
  return out;
}

}  // inline namespace BOUNDARY_REF_ABI
}  // namespace boundary::ref
