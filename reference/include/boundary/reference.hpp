// The CPU emulator of ../shared/contract.md: every operation, rounding and summation order of
// the boundary, bit for bit as an sm_90 GPU computes it. This is what every kernel is checked
// against.
#pragma once

#include <boundary/primitives.hpp>
#include <boundary/types.hpp>

#include <cstdint>
#include <span>
#include <vector>

// The code of each build of the emulator's sources sits in its own inline namespace: v1 for
// production, mutant_<n> for the planted-bug build with BOUNDARY_MUTANT = n (mutant.hpp), so that
// several builds link into one program (boundary_emulator_mutants) with distinct symbols while
// users keep writing boundary::ref::Boundary. Operands, Inputs and Outputs hold no code and stay
// outside, as do the primitives (never mutated): every build shares them.
#if !defined(BOUNDARY_MUTANT) || BOUNDARY_MUTANT == 0
#define BOUNDARY_REF_ABI v1
#else
#define BOUNDARY_REF_ABI_CAT(a, b) a##b
#define BOUNDARY_REF_ABI_NAME(n) BOUNDARY_REF_ABI_CAT(mutant_, n)
#define BOUNDARY_REF_ABI BOUNDARY_REF_ABI_NAME(BOUNDARY_MUTANT)
#endif

namespace boundary::ref {

// ---- Reference layout (section 1): the column of thread t, fragment k, element i.
constexpr int column(int t, int k, int i) { return 2048 * k + kVec * t + i; }

inline namespace BOUNDARY_REF_ABI {

// ---- The row sum (section 4), the stock single-tile order: per thread two interleaved chains
// per fragment, fragments added in order, a butterfly within each warp, warps added in order.
// v holds kH values.
float row_sum(const float* v, bool fma_squares);

// The norm factor: rsqrt_approx_ftz_f32(fma_rn(S, 2^-13, eps)).
float norm_factor(float row_sum, float eps);

// ---- Gains (section 3): gamma[c] = weight[c] + g in the weight's own dtype, one FP32 add then
// one rounding to that dtype (FP32: the add alone). weight holds kH elements of
// norm.weight_dtype. Empty when the norm has no weight.
std::vector<float> gamma(const NormConstants& norm, const void* weight);

}  // namespace BOUNDARY_REF_ABI

// ---- Whole boundary rows (sections 5 and 7).
struct Operands {
  const float* alpha = nullptr;        // F32 [H]
  const float* beta = nullptr;         // F32 [H]
  const void* post_weight = nullptr;   // [H] in constants.post.weight_dtype, exactly when post has a weight
  const void* pre_weight = nullptr;    // [H] likewise for pre
};

struct Inputs {
  std::int64_t m = 0;                              // rows, >= 1
  const std::uint16_t* branch = nullptr;           // BF16 [m, H]; or null and partials given
  std::span<const std::uint16_t* const> partials;  // R (1..8) rank partials, BF16 [m, H] each
  StreamDtype stream_dtype = StreamDtype::f32;
  const void* stream = nullptr;                    // [m, H] in stream_dtype
};

// Where the results go. out is required; every other pointer may be null (not wanted). The
// intermediates are the contract's symbols of section 5 (and the all-reduced branch of
// section 7); [m] per row, [m, H] per element.
struct Outputs {
  std::uint16_t* out = nullptr;        // BF16 [m, H]
  float* new_stream = nullptr;         // F32 [m, H] (res, the stored stream)
  std::uint16_t* branch = nullptr;     // BF16 [m, H]: the branch the post norm read
  float* post_row_sum = nullptr;       // F32 [m]: S1
  float* r1 = nullptr;                 // F32 [m]
  std::uint16_t* y_b = nullptr;        // BF16 [m, H]
  std::uint16_t* z = nullptr;          // BF16 [m, H]
  float* pre_row_sum = nullptr;        // F32 [m]: S2
  float* r2 = nullptr;                 // F32 [m]
};

inline namespace BOUNDARY_REF_ABI {

// The boundary for fixed constants and operands: the gains are computed once, alpha and beta
// copied, as the GPU host API holds them on the device.
class Boundary {
 public:
  // Throws InputError when a weight is missing that the constants need, or given where the
  // norm has none, or alpha/beta is missing.
  Boundary(const Constants& constants, const Operands& operands);

  // Computes inputs.m rows, spread over `threads` host threads (rows are independent).
  // Throws InputError for an inconsistent Inputs/Outputs.
  void run(const Inputs& inputs, const Outputs& outputs, unsigned threads = 1) const;

  const Constants& constants() const { return constants_; }
  const std::vector<float>& post_gamma() const { return post_gamma_; }
  const std::vector<float>& pre_gamma() const { return pre_gamma_; }

 private:
  void run_rows(const Inputs& inputs, const Outputs& outputs, std::int64_t begin,
                std::int64_t end) const;

  Constants constants_;
  std::vector<float> alpha_, beta_, post_gamma_, pre_gamma_;
  float post_eps_, pre_eps_;
};

// Section 7 for one row: the branch as a one-shot all-reduce sums R partials (rank order,
// FP32 accumulation, one BF16 rounding; R = 1 passes P_0 unchanged). rows[r] points at the
// row of rank r.
void all_reduce_row(std::span<const std::uint16_t* const> rows, std::uint16_t* branch);

}  // namespace BOUNDARY_REF_ABI

}  // namespace boundary::ref
