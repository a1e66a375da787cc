// One boundary row (contract section 5, with section 7's all-reduce in front), a function per step
// as contract section 10 names them: post_norm -> connection -> pre_norm, and all_reduce. Each is a
// loop over the row's columns through the inline primitives, which the compiler vectorizes; the
// roundings are exactly the contract's.
#include "product.hpp"
#include "simd_clones.hpp"

#include <boundary/mutant.hpp>
#include <boundary/reference.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <thread>

namespace boundary::ref {
inline namespace BOUNDARY_REF_ABI {

namespace {

// x' = gamma * x with an input scale; else x as is.
BOUNDARY_INLINE void scale_input(const NormConstants& norm, std::span<const float> g, float* x) {
  if (norm.has_weight() && norm.input_scale)
    for (int c = 0; c < kH; ++c) x[c] = product(g[c], x[c]);
}

// y = x' * r, then * gamma when the weight is applied after the norm.
BOUNDARY_INLINE void normalize(const NormConstants& norm, std::span<const float> g, float r, float* x) {
  for (int c = 0; c < kH; ++c) x[c] = product(x[c], r);
  if (norm.has_weight() && !norm.input_scale)
    for (int c = 0; c < kH; ++c) x[c] = product(x[c], g[c]);
}

void check_weight(const NormConstants& norm, const void* weight, const char* name) {
  if (norm.has_weight() && weight == nullptr)
    throw InputError(std::string("operand '") + name + "': the constants give this norm a weight, none was given");
  if (!norm.has_weight() && weight != nullptr)
    throw InputError(std::string("operand '") + name + "': given, but the constants give this norm no weight (gain centre null)");
}

}  // namespace

BOUNDARY_SIMD_CLONES RowNorm post_norm(const NormConstants& norm, std::span<const float> gamma,
                                       const std::uint16_t* branch, float* y_b) {
  float* x = y_b;  // x, then x', then y, then y_b
  for (int c = 0; c < kH; ++c) x[c] = bf16_to_f32(branch[c]);
  scale_input(norm, gamma, x);
  const float s1 = sum_of_squares(x, norm.fma_squares);
  float r1 = norm_factor(s1, static_cast<float>(norm.eps));
  if constexpr (kMutant == Mutant::r1_ulp_off)  // r1 the next float up, when finite
    if (std::isfinite(r1)) r1 = std::nextafter(r1, std::numeric_limits<float>::infinity());
  normalize(norm, gamma, r1, x);
  if constexpr (kMutant != Mutant::y_b_unrounded)  // the mutant's connection reads y itself
    for (int c = 0; c < kH; ++c) x[c] = bf16_to_f32(f32_to_bf16_rn(x[c]));
  return {s1, r1};
}

BOUNDARY_SIMD_CLONES void connection(const float* alpha, const float* beta, StreamDtype stream_dtype,
                                     const void* stream, const float* y_b, float* res, float* z) {
  // s, in res.
  if (stream_dtype == StreamDtype::f32) {
    std::copy_n(static_cast<const float*>(stream), kH, res);
  } else {
    const auto* s = static_cast<const std::uint16_t*>(stream);
    for (int c = 0; c < kH; ++c) res[c] = bf16_to_f32(s[c]);
  }
  for (int c = 0; c < kH; ++c) {
    if constexpr (kMutant == Mutant::connection_fma)  // alpha * s not rounded
      res[c] = fma_rn(alpha[c], res[c], product(beta[c], y_b[c]));
    else
      res[c] = add_rn(product(alpha[c], res[c]), product(beta[c], y_b[c]));
  }
  if constexpr (kMutant == Mutant::z_unrounded)  // the mutant's pre norm reads res itself
    std::copy_n(res, kH, z);
  else
    for (int c = 0; c < kH; ++c) z[c] = bf16_to_f32(f32_to_bf16_rn(res[c]));
}

BOUNDARY_SIMD_CLONES RowNorm pre_norm(const NormConstants& norm, std::span<const float> gamma, float* z,
                                      std::uint16_t* out) {
  scale_input(norm, gamma, z);
  const float s2 = sum_of_squares(z, norm.fma_squares);
  const float r2 = norm_factor(s2, static_cast<float>(norm.eps));
  normalize(norm, gamma, r2, z);
  for (int c = 0; c < kH; ++c) out[c] = f32_to_bf16_rn(z[c]);
  return {s2, r2};
}

void all_reduce(std::span<const std::uint16_t* const> rows, std::uint16_t* branch) {
  if (rows.size() == 1) {  // P_0 unchanged: no rounding, NaN payloads kept
    std::copy_n(rows[0], kH, branch);
    return;
  }
  // The rank whose partial is added i-th: 0 .. R-1 (the rank_order mutant: R-1 .. 0).
  const auto summed_rank = [n = rows.size()](std::size_t i) {
    if constexpr (kMutant == Mutant::rank_order) return n - 1 - i;
    else return i;
  };
  for (int c = 0; c < kH; ++c) {
    float a = bf16_to_f32(rows[summed_rank(0)][c]);
    for (std::size_t i = 1; i < rows.size(); ++i) a = add_rn(a, bf16_to_f32(rows[summed_rank(i)][c]));
    branch[c] = f32_to_bf16_rn(a);
  }
}

Boundary::Boundary(const Constants& constants, const Operands& operands)
    : constants_(constants) {
  if (operands.alpha == nullptr) throw InputError("operand 'alpha': missing");
  if (operands.beta == nullptr) throw InputError("operand 'beta': missing");
  check_weight(constants.post, operands.post_weight, "post_weight");
  check_weight(constants.pre, operands.pre_weight, "pre_weight");
  alpha_.assign(operands.alpha, operands.alpha + kH);
  beta_.assign(operands.beta, operands.beta + kH);
  post_gamma_ = gamma(constants.post, operands.post_weight);
  pre_gamma_ = gamma(constants.pre, operands.pre_weight);
}

void Boundary::run(const Inputs& in, const Outputs& out, unsigned threads) const {
  if (in.m < 1) throw InputError("inputs: m = " + std::to_string(in.m) + ", expected at least 1 row");
  if ((in.branch == nullptr) == in.partials.empty())
    throw InputError("inputs: give either the branch or the rank partials, exactly one");
  if (in.partials.size() > static_cast<std::size_t>(kMaxRanks))
    throw InputError("inputs: " + std::to_string(in.partials.size()) + " rank partials, expected 1 to 8");
  if (in.stream == nullptr) throw InputError("inputs: 'stream' missing");
  if (out.out == nullptr) throw InputError("outputs: 'out' missing");
  check_host_float_environment();

  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::min<std::int64_t>(in.m, 1024))));
  if (threads == 1) return run_rows(in, out, 0, in.m);
  std::vector<std::jthread> pool;
  for (unsigned i = 0; i < threads; ++i)
    pool.emplace_back([&, i] { run_rows(in, out, in.m * i / threads, in.m * (i + 1) / threads); });
}

BOUNDARY_SIMD_CLONES void Boundary::run_rows(const Inputs& in, const Outputs& out, std::int64_t begin,
                                             std::int64_t end) const {
  std::vector<std::uint16_t> branch(kH);
  std::vector<const std::uint16_t*> rank_rows(in.partials.size());
  std::vector<float> y_b(kH), res(kH), z(kH);
  const std::size_t stream_bytes = in.stream_dtype == StreamDtype::f32 ? sizeof(float) : sizeof(std::uint16_t);

  for (std::int64_t row = begin; row < end; ++row) {
    const std::size_t base = static_cast<std::size_t>(row) * kH;

    // The branch: given, or the all-reduce of the partials (section 7).
    const std::uint16_t* b = in.branch ? in.branch + base : branch.data();
    if (!in.branch) {
      for (std::size_t r = 0; r < rank_rows.size(); ++r) rank_rows[r] = in.partials[r] + base;
      all_reduce(rank_rows, branch.data());
    }

    const RowNorm post = post_norm(constants_.post, post_gamma_, b, y_b.data());
    if (out.y_b)
      for (int c = 0; c < kH; ++c) out.y_b[base + c] = f32_to_bf16_rn(y_b[c]);

    connection(alpha_.data(), beta_.data(), in.stream_dtype, static_cast<const char*>(in.stream) + base * stream_bytes,
               y_b.data(), res.data(), z.data());
    if (out.new_stream) std::copy(res.begin(), res.end(), out.new_stream + base);
    if (out.z)
      for (int c = 0; c < kH; ++c) out.z[base + c] = f32_to_bf16_rn(z[c]);

    const RowNorm pre = pre_norm(constants_.pre, pre_gamma_, z.data(), out.out + base);

    if (out.branch) std::copy_n(b, kH, out.branch + base);
    if (out.post_row_sum) out.post_row_sum[row] = post.s;
    if (out.r1) out.r1[row] = post.r;
    if (out.pre_row_sum) out.pre_row_sum[row] = pre.s;
    if (out.r2) out.r2[row] = pre.r;
  }
}

}  // inline namespace BOUNDARY_REF_ABI
}  // namespace boundary::ref
