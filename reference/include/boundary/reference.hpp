// The CPU emulator of ../shared/contract.md: every operation, rounding and summation order of
// the boundary, bit for bit as an sm_90 GPU computes it. This is what every kernel is checked
// against.
#pragma once

#include <boundary/primitives.hpp>
#include <boundary/types.hpp>

#include <array>
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

// One value per reference thread t (0 .. 255): the row sum's steps below compute a step for all
// 256 threads at once, laid out by lane so that the threads' chains run side by side and vectorize.
using Lanes = std::array<float, kThreads>;

// A norm's row sum S and the norm factor r it applied (S1, r1 of the post norm; S2, r2 of the pre norm).
struct RowNorm {
  float s = 0.0f;
  float r = 0.0f;
};

// Each contract step is one function named as contract section 10 names it, the same name as the
// kernels' device function of that step (kernels/include/boundary/device/), so that one grep finds
// both; a planted bug (mutants.def) changes the step it names inside that step's function.
inline namespace BOUNDARY_REF_ABI {

// ---- Gains (section 3), `gamma`: gamma[c] = weight[c] + g in the weight's own dtype, one FP32 add
// then one rounding to that dtype (FP32: the add alone). weight holds kH elements of
// norm.weight_dtype. Empty when the norm has no weight.
std::vector<float> gamma(const NormConstants& norm, const void* weight);

// ---- The row sum (section 4), the stock single-tile order, a function per step. v holds kH values.

// `chunk_pair`: chunk_pair(t, k) for every thread t: the squares of fragment k's even and odd
// elements accumulated in two chains (fma when fma_squares), joined at the end.
void chunk_pair(const float* v, int k, bool fma_squares, Lanes& pairs);

// `thread_sum`: thread_sum(t) for every thread t: its 4 chunk pairs added in fragment order.
void thread_sum(const float* v, bool fma_squares, Lanes& sums);

// `warp_sum`: W[w], the xor butterfly (distances 16, 8, 4, 2, 1) over one warp's 32 thread sums
// (lanes[0 .. 32), i.e. &sums[32 * w]). Every lane ends with the same bits; this is lane 0's.
float warp_sum(const float* lanes);

// `row_sum`: S, the 8 warp totals W[0 .. 8) folded in warp order.
float row_sum(const std::array<float, kWarps>& warp_totals);

// The whole summation tree of section 4, S of v: chunk_pair -> thread_sum -> warp_sum per warp ->
// row_sum (what section 5 calls "the row sum of x'").
float sum_of_squares(const float* v, bool fma_squares);

// `norm_factor`: r = rsqrt_approx_ftz_f32(fma_rn(S, 2^-13, eps)).
float norm_factor(float s, float eps);

// ---- One boundary row (section 5), a function per step; gamma: that norm's gamma() (empty
// without a weight). Rows hold kH elements.

// `post_norm`: the branch (BF16) -> y_b: x = bf16_to_f32(branch), x' = gamma * x with an input
// scale, y = x' * r1, y * gamma with the weight after the norm, y_b = bf16(y), as FP32 values.
// Returns S1 and r1.
RowNorm post_norm(const NormConstants& norm, std::span<const float> gamma, const std::uint16_t* branch, float* y_b);

// `connection`: res = alpha * s + beta * y_b, each product rounded, then z = bf16(res) as FP32
// values. stream: the row's stream values in stream_dtype (a BF16 stream is widened exactly).
void connection(const float* alpha, const float* beta, StreamDtype stream_dtype, const void* stream,
                const float* y_b, float* res, float* z);

// `pre_norm`: z -> out (BF16): z' = z * gamma with an input scale, o = z' * r2, o * gamma with the
// weight after the norm, out = bf16(o). Works in z (left holding o). Returns S2 and r2.
RowNorm pre_norm(const NormConstants& norm, std::span<const float> gamma, float* z, std::uint16_t* out);

// ---- `all_reduce` (section 7) for one row: the branch as a one-shot all-reduce sums R partials
// (rank order, FP32 accumulation, one BF16 rounding; R = 1 passes P_0 unchanged). rows[r] points
// at the row of rank r.
void all_reduce(std::span<const std::uint16_t* const> rows, std::uint16_t* branch);

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
};

}  // namespace BOUNDARY_REF_ABI

}  // namespace boundary::ref
