// One boundary row (contract section 5, with section 7's all-reduce in front): post norm ->
// connection -> pre norm. Each stage is a loop over the row's columns through the inline
// primitives, which the compiler vectorizes; the roundings are exactly the contract's.
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

using Row = std::vector<float>;

// x' = gamma * x with an input scale; else x as is.
BOUNDARY_INLINE void scale_input(const NormConstants& norm, const std::vector<float>& g, Row& x) {
  if (norm.has_weight() && norm.input_scale)
    for (int c = 0; c < kH; ++c) x[c] = product(g[c], x[c]);
}

// y = x' * r, then * gamma when the weight is applied after the norm.
BOUNDARY_INLINE void normalize(const NormConstants& norm, const std::vector<float>& g, float r, Row& x) {
  for (int c = 0; c < kH; ++c) x[c] = product(x[c], r);
  if (norm.has_weight() && !norm.input_scale)
    for (int c = 0; c < kH; ++c) x[c] = product(x[c], g[c]);
}

// r1 (the r1_ulp_off mutant: the next float up, when finite).
float post_norm_factor(float s1, float eps) {
  const float r = norm_factor(s1, eps);
  if constexpr (kMutant == Mutant::r1_ulp_off)
    if (std::isfinite(r)) return std::nextafter(r, std::numeric_limits<float>::infinity());
  return r;
}

// res = alpha * s + beta * y_b, each product rounded (the connection_fma mutant: alpha * s is not).
BOUNDARY_INLINE float connect(float alpha, float s, float beta, float y_b) {
  if constexpr (kMutant == Mutant::connection_fma) return fma_rn(alpha, s, product(beta, y_b));
  return add_rn(product(alpha, s), product(beta, y_b));
}

void check_weight(const NormConstants& norm, const void* weight, const char* name) {
  if (norm.has_weight() && weight == nullptr)
    throw InputError(std::string("operand '") + name + "': the constants give this norm a weight, none was given");
  if (!norm.has_weight() && weight != nullptr)
    throw InputError(std::string("operand '") + name + "': given, but the constants give this norm no weight (gain centre null)");
}

}  // namespace

void all_reduce_row(std::span<const std::uint16_t* const> rows, std::uint16_t* branch) {
  if (rows.size() == 1) {  // P_0 unchanged: no rounding, NaN payloads kept
    std::copy_n(rows[0], kH, branch);
    return;
  }
  // The rank whose partial is added i-th: 0 .. R-1 (the rank_order mutant: R-1 .. 0).
  const auto summed_rank = [n = rows.size()](std::size_t i) { return kMutant == Mutant::rank_order ? n - 1 - i : i; };
  for (int c = 0; c < kH; ++c) {
    float a = bf16_to_f32(rows[summed_rank(0)][c]);
    for (std::size_t i = 1; i < rows.size(); ++i) a = add_rn(a, bf16_to_f32(rows[summed_rank(i)][c]));
    branch[c] = f32_to_bf16_rn(a);
  }
}

Boundary::Boundary(const Constants& constants, const Operands& operands)
    : constants_(constants),
      post_eps_(static_cast<float>(constants.post.eps)),
      pre_eps_(static_cast<float>(constants.pre.eps)) {
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
  const NormConstants& post = constants_.post;
  const NormConstants& pre = constants_.pre;
  std::vector<std::uint16_t> branch(kH);
  std::vector<const std::uint16_t*> rank_rows(in.partials.size());
  Row x(kH), res(kH);

  for (std::int64_t row = begin; row < end; ++row) {
    const std::size_t base = static_cast<std::size_t>(row) * kH;

    // The branch: given, or the all-reduce of the partials (section 7).
    const std::uint16_t* b = in.branch ? in.branch + base : branch.data();
    if (!in.branch) {
      for (std::size_t r = 0; r < rank_rows.size(); ++r) rank_rows[r] = in.partials[r] + base;
      all_reduce_row(rank_rows, branch.data());
    }

    // Post norm of the branch -> y_b (kept in x as FP32 values of BF16 numbers).
    for (int c = 0; c < kH; ++c) x[c] = bf16_to_f32(b[c]);
    scale_input(post, post_gamma_, x);
    const float s1 = row_sum(x.data(), post.fma_squares);
    const float r1 = post_norm_factor(s1, post_eps_);
    normalize(post, post_gamma_, r1, x);
    if constexpr (kMutant != Mutant::y_b_unrounded)  // the mutant's connection reads y itself
      for (int c = 0; c < kH; ++c) x[c] = bf16_to_f32(f32_to_bf16_rn(x[c]));
    if (out.y_b)
      for (int c = 0; c < kH; ++c) out.y_b[base + c] = f32_to_bf16_rn(x[c]);

    // Connection: res = alpha * s + beta * y_b, each product rounded.
    if (in.stream_dtype == StreamDtype::f32) {
      const float* s = static_cast<const float*>(in.stream) + base;
      for (int c = 0; c < kH; ++c) res[c] = connect(alpha_[c], s[c], beta_[c], x[c]);
    } else {
      const std::uint16_t* s = static_cast<const std::uint16_t*>(in.stream) + base;
      for (int c = 0; c < kH; ++c) res[c] = connect(alpha_[c], bf16_to_f32(s[c]), beta_[c], x[c]);
    }
    if (out.new_stream) std::copy(res.begin(), res.end(), out.new_stream + base);

    // Pre norm of z = bf16(res) -> out.
    if constexpr (kMutant == Mutant::z_unrounded)  // the mutant's pre norm reads res itself
      std::copy(res.begin(), res.end(), x.begin());
    else
      for (int c = 0; c < kH; ++c) x[c] = bf16_to_f32(f32_to_bf16_rn(res[c]));
    if (out.z)
      for (int c = 0; c < kH; ++c) out.z[base + c] = f32_to_bf16_rn(x[c]);
    scale_input(pre, pre_gamma_, x);
    const float s2 = row_sum(x.data(), pre.fma_squares);
    const float r2 = norm_factor(s2, pre_eps_);
    normalize(pre, pre_gamma_, r2, x);
    for (int c = 0; c < kH; ++c) out.out[base + c] = f32_to_bf16_rn(x[c]);

    if (out.branch) std::copy_n(b, kH, out.branch + base);
    if (out.post_row_sum) out.post_row_sum[row] = s1;
    if (out.r1) out.r1[row] = r1;
    if (out.pre_row_sum) out.pre_row_sum[row] = s2;
    if (out.r2) out.r2[row] = r2;
  }
}

}  // inline namespace BOUNDARY_REF_ABI
}  // namespace boundary::ref
