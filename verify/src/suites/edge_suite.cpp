// The edge suite: named row families laid over realistic rows (edge_rows.hpp), with edge gates and
// weights in fixed columns. The families that need the row's own norm factors (BF16 ties, FPRev
// rows) are edge_ties.cpp's; what both files share is edge_families.hpp.
#include <boundary/verify/edge_suite.hpp>

#include "edge_families.hpp"
#include "order_rows.hpp"

#include <boundary/verify/boundary_tensors.hpp>
#include <boundary/verify/edge_rows.hpp>
#include <boundary/primitives.hpp>
#include <boundary/reference.hpp>
#include <boundary/results.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <utility>

namespace boundary::suite {

namespace {

namespace st = safetensors;
using ref::add_rn;
using ref::bf16_to_f32;
using ref::f32_to_bf16_rn;
using ref::mul_rn;

using namespace edge_detail;

std::string hex(std::uint32_t bits, int digits) {
  static const char kDigits[] = "0123456789ABCDEF";
  std::string s = "0x";
  for (int d = digits - 1; d >= 0; --d) s += kDigits[(bits >> (4 * d)) & 0xFu];
  return s;
}

// ---- Edge operands: finite values only (a NaN or infinite gate would turn every row into NaN).
struct GatePair { std::uint32_t alpha, beta; };
constexpr GatePair kGateEdges[] = {
    {0x00000000, 0x00000000}, {0x80000000, 0x80000000},  // +0, -0: res is a signed zero
    {0x3F800000, 0x00000000}, {0x00000000, 0x3F800000},  // one side only
    {0x3F800000, 0x3F800000}, {0xBF800000, 0x3F800000}, {0x3F800000, 0xBF800000},
    {0x00000001, 0x3F800000}, {0x3F800000, 0x00000001},  // smallest subnormal: the product underflows
    {0x007FFFFF, 0x00800000}, {0x80000001, 0x807FFFFF},  // largest subnormal, smallest normal
    {0x3F7FFFFF, 0x3F800001},                            // 1 - ulp, 1 + ulp
    {0x3F000000, 0x3F000000}, {0x35800000, 0x30800000},  // 0.5; 2^-20 and 2^-30
    {0x3FFFFFFF, 0x3FFFFFFF},                            // all significand bits set
    {0x40800000, 0x3E800000}, {0xBE800000, 0xBF400000},  // 4 and 0.25; negative gates
    {0x3F2AAAAB, 0x3EAAAAAB}, {0x3F3504F3, 0x3F3504F3},  // 2/3 and 1/3; sqrt(1/2) twice
};
// Weights, as values before the rounding to the weight dtype; then the dtype's smallest subnormal
// with both signs. With gain centre 1: -1 gives gamma 0, 2^-8 and 3 * 2^-8 give BF16 ties in w + 1.
constexpr float kWeightEdges[] = {0.0f, -0.0f, -1.0f, -2.0f, 0x1p-8f, 0x3p-8f, 0x5p-10f, 0.5f,
                                  1.0f, 7.5f, -0.99609375f, 0x1p-20f, -0x1p-126f};
constexpr int kWeightEdgeCount = static_cast<int>(std::size(kWeightEdges)) + 2;

std::uint32_t weight_edge_bits(WeightDtype dtype, int j) {
  if (j >= static_cast<int>(std::size(kWeightEdges))) {
    const std::uint32_t sign = j == kWeightEdgeCount - 1 ? 1u : 0u;
    return dtype == WeightDtype::fp32 ? (sign << 31) | 1u : (sign << 15) | 1u;
  }
  const float v = kWeightEdges[j];
  switch (dtype) {
    case WeightDtype::bf16: return f32_to_bf16_rn(v);
    case WeightDtype::fp16: return ref::f32_to_f16_rn(v);
    case WeightDtype::fp32: return std::bit_cast<std::uint32_t>(v);
  }
  return 0;
}

void place_edge_operands(const Constants& constants, st::File& f) {
  const std::vector<int> gates = gate_edge_columns();
  auto* alpha = f.tensors.at("alpha").data<std::uint32_t>();
  auto* beta = f.tensors.at("beta").data<std::uint32_t>();
  for (std::size_t j = 0; j < gates.size(); ++j) {
    alpha[gates[j]] = kGateEdges[j].alpha;
    beta[gates[j]] = kGateEdges[j].beta;
  }
  const std::vector<int> weights = weight_edge_columns();
  for (const auto& [norm, name] : {std::pair{&constants.post, "post_weight"}, std::pair{&constants.pre, "pre_weight"}}) {
    if (!norm->has_weight()) continue;
    st::Tensor& w = f.tensors.at(name);
    if (norm->input_scale) {  // the order rows' elements stay exact where gamma is 1 (order_rows.hpp)
      const std::uint32_t bits = order::unit_weight_bits(*norm);
      for (const int c : order::unit_gain_columns())
        std::memcpy(&w.bytes[static_cast<std::size_t>(c) * st::dtype_size(w.dtype)], &bits, st::dtype_size(w.dtype));
    }
    for (std::size_t j = 0; j < weights.size(); ++j) {
      const std::uint32_t bits = weight_edge_bits(norm->weight_dtype, static_cast<int>(j));
      const std::size_t size = st::dtype_size(w.dtype);
      std::memcpy(&w.bytes[static_cast<std::size_t>(weights[j]) * size], &bits, size);
    }
  }
}



// TestFloat's significand patterns for n fraction bits; kSignificandPatterns draws a random one.
constexpr const char* kSignificandNames[] = {"zero",         "lsb",         "msb",         "all ones", "all but lsb",
                                             "top half ones", "bottom half ones", "alternating", "random"};
constexpr int kSignificandPatterns = 8;

std::uint32_t significand(int pattern, int n, const RowEdit& r) {
  const std::uint32_t ones = (1u << n) - 1u;
  switch (pattern) {
    case 0: return 0;
    case 1: return 1;
    case 2: return 1u << (n - 1);
    case 3: return ones;
    case 4: return ones ^ 1u;
    case 5: return ones ^ (ones >> (n / 2));
    case 6: return ones >> (n - n / 2);
    case 7: return 0x55555555u & ones;
    default: return r.below(ones + 1u);
  }
}

// Biased exponents (BF16 and FP32 share them): subnormal, the smallest normals, squares that are
// subnormal or vanish, around 1, squares that overflow, the largest.
constexpr std::uint32_t kSweepExponents[] = {0, 1, 2, 40, 64, 100, 117, 126, 127, 128, 137, 150, 190, 200, 253, 254};

// Column c of the sweep holds pattern `pattern`, or pattern c mod 9 when pattern < 0.
void sweep_element(const RowEdit& r, bool stream, int c, std::uint32_t e, int pattern) {
  const int p = pattern >= 0 ? pattern : c % (kSignificandPatterns + 1);
  const std::uint32_t sign = r.sign();
  if (stream)
    r.set_stream_bits(c, f32_bits(sign, e, significand(p, 23, r)), bf16_bits(sign, e, significand(p, 7, r)));
  else
    r.branch[c] = bf16_bits(sign, e, significand(p, 7, r));
}

void add_sweeps(std::vector<Planned>& plan, int level) {
  for (const bool stream : {false, true}) {
    const std::string what = stream ? "sweep stream: exponent " : "sweep branch: exponent ";
    for (const std::uint32_t e : kSweepExponents) {
      const std::string base = what + std::to_string(e);
      plan.push_back({base + ", every significand pattern in turn", [=](const RowEdit& r, const Context&) {
                        for (int c = 0; c < kH; ++c) sweep_element(r, stream, c, e, -1);
                      }});
      plan.push_back({base + ", every 9th column over a realistic row", [=](const RowEdit& r, const Context&) {
                        for (int c = 5; c < kH; c += 9) sweep_element(r, stream, c, e, -1);
                      }});
      if (level < 2) continue;
      for (int p = 0; p <= kSignificandPatterns; ++p)
        plan.push_back({base + ", significand " + kSignificandNames[p], [=](const RowEdit& r, const Context&) {
                          for (int c = 0; c < kH; ++c) sweep_element(r, stream, c, e, p);
                        }});
    }
  }
}

void add_all_equal_and_outliers(std::vector<Planned>& plan) {
  // 1, -1, 3, 1 + 2^-7, the smallest and largest BF16 subnormals, 2^-100 (square 0), the BF16 maximum.
  for (const std::uint16_t v : std::initializer_list<std::uint16_t>{0x3F80, 0xBF80, 0x4040, 0x3F81, 0x0001, 0x007F, 0x0D80, 0x7F7F}) {
    const std::string value = hex(v, 4);
    plan.push_back({"all equal: branch = " + value, [=](const RowEdit& r, const Context&) { std::fill_n(r.branch, kH, v); }});
    plan.push_back({"all equal: stream = " + value, [=](const RowEdit& r, const Context&) {
                      for (int c = 0; c < kH; ++c) r.set_stream(c, bf16_to_f32(v));
                    }});
    plan.push_back({"all equal: branch and stream = " + value, [=](const RowEdit& r, const Context&) {
                      std::fill_n(r.branch, kH, v);
                      for (int c = 0; c < kH; ++c) r.set_stream(c, bf16_to_f32(v));
                    }});
  }
  for (const int k : {8, 16, 24, 40, 63, 100}) {
    const std::string big = "2^" + std::to_string(k);
    plan.push_back({"one outlier: branch " + big + " among ones", [=](const RowEdit& r, const Context&) {
                      std::fill_n(r.branch, kH, pow2_bf16(0));
                      r.branch[r.below(kH)] = pow2_bf16(k);
                    }});
    plan.push_back({"one outlier: branch " + big + " in a realistic row",
                    [=](const RowEdit& r, const Context&) { r.branch[r.below(kH)] = bf16_bits(r.sign(), kBias + k, r.below(128)); }});
    plan.push_back({"one outlier: stream " + big + " among ones", [=](const RowEdit& r, const Context&) {
                      for (int c = 0; c < kH; ++c) r.set_stream(c, 1.0f);
                      r.set_stream(static_cast<int>(r.below(kH)), bf16_to_f32(pow2_bf16(k)));
                    }});
    plan.push_back({"one outlier: stream " + big + " in a realistic row", [=](const RowEdit& r, const Context&) {
                      r.set_stream(static_cast<int>(r.below(kH)), f32_value(r.sign(), kBias + k, r.below(1u << 23)));
                    }});
  }
}

// Every element +-2^k with random signs, in the branch or (branch zero) the stream.
Edit powers(bool stream, int k) {
  return [=](const RowEdit& r, const Context&) {
    for (int c = 0; c < kH; ++c) {
      const std::uint16_t v = bf16_bits(r.sign(), kBias + k, 0);
      if (!stream) r.branch[c] = v;
      else {
        r.branch[c] = 0;
        r.set_stream(c, bf16_to_f32(v));
      }
    }
  };
}

void add_sums_of_squares(std::vector<Planned>& plan) {
  for (const bool stream : {false, true}) {
    const std::string s = stream ? "S2" : "S1";
    const std::string v = stream ? " (stream; branch zero)" : " (branch)";
    plan.push_back({s + " overflows only when the warp totals are added: every element +-2^58" + v, powers(stream, 58)});
    plan.push_back({s + " subnormal: every element +-2^-70" + v, powers(stream, -70)});
    plan.push_back({s + " = 0 with x != 0: every square rounds to 0, +-2^-80" + v, powers(stream, -80)});
    plan.push_back({s + ": every square a tie at half the smallest subnormal, +-2^-75" + v, powers(stream, -75)});
  }
  plan.push_back({"S1 subnormal: one 2^-64, the rest +0", [](const RowEdit& r, const Context&) {
                    std::fill_n(r.branch, kH, 0);
                    r.branch[r.below(kH)] = pow2_bf16(-64);
                  }});
  plan.push_back({"S1 and S2 exactly 0: zeros of random sign", [](const RowEdit& r, const Context&) {
                    for (int c = 0; c < kH; ++c) {
                      r.branch[c] = bf16_bits(r.sign(), 0, 0);
                      r.set_stream(c, r.sign() ? -0.0f : 0.0f);
                    }
                  }});
}

// Realistic rows, as they are and scaled by a power of two into the subnormal and huge ranges.
void add_realistic(std::vector<Planned>& plan, int level) {
  for (int j = 0; j < (level >= 2 ? 64 : 16); ++j) plan.push_back({"realistic", [](const RowEdit&, const Context&) {}});
  for (const int k : {-130, -100, -60, 40, 60}) {
    const float scale = std::ldexp(1.0f, k / 2);  // applied twice: 2^k itself may not be a float
    plan.push_back({"realistic branch scaled by 2^" + std::to_string(k), [=](const RowEdit& r, const Context&) {
                      for (int c = 0; c < kH; ++c) r.branch[c] = f32_to_bf16_rn(bf16_to_f32(r.branch[c]) * scale * scale);
                    }});
    plan.push_back({"realistic stream scaled by 2^" + std::to_string(k), [=](const RowEdit& r, const Context&) {
                      for (int c = 0; c < kH; ++c) r.set_stream(c, r.s32[c] * scale * scale);
                    }});
  }
}

// The order rows (order_rows.hpp), on the gate edge column whose beta is 0 and alpha 1.
void add_order(std::vector<Planned>& plan) {
  const auto* edge = std::find_if(std::begin(kGateEdges), std::end(kGateEdges),
                                  [](const GatePair& g) { return g.alpha == 0x3F800000u && g.beta == 0u; });
  const int beta_zero_column = gate_edge_columns().at(static_cast<std::size_t>(edge - std::begin(kGateEdges)));
  for (order::Family& f : order::families(beta_zero_column))
    plan.push_back({std::move(f.name), [edit = std::move(f.edit)](const RowEdit& r, const Context& ctx) {
                      edit(r, {ctx.constants, ctx.boundary.post_gamma(), ctx.boundary.pre_gamma(), ctx.alpha, ctx.beta});
                    }});
}

std::vector<Planned> edge_plan(int level) {
  std::vector<Planned> plan;
  for (const EdgePattern& p : edge_patterns())
    plan.push_back({std::string("pattern: ") + p.name, [edit = p.edit](const RowEdit& r, const Context&) { edit(r); }});
  add_realistic(plan, level);
  add_sweeps(plan, level);
  add_all_equal_and_outliers(plan);
  add_sums_of_squares(plan);
  add_fprev(plan, level);
  add_ties(plan, level);
  add_order(plan);
  return plan;
}

}  // namespace

std::vector<int> gate_edge_columns() {
  std::vector<int> c;
  for (int j = 0; j < static_cast<int>(std::size(kGateEdges)); ++j) c.push_back((j * 1031 + 17) % kH);
  return c;
}

std::vector<int> weight_edge_columns() {
  std::vector<int> c;
  for (int j = 0; j < kWeightEdgeCount; ++j) c.push_back((j * 2053 + 29) % kH);
  return c;
}

Suite make_edge_suite(const Constants& constants, int level, std::uint64_t seed, StreamDtype stream_dtype) {
  if (level != 1 && level != 2) throw InputError("edge suite: level " + std::to_string(level) + ", expected 1 or 2");
  const std::vector<Planned> plan = edge_plan(level);
  const auto rows = static_cast<std::int64_t>(plan.size());
  EditableRows editable(constants, rows, seed);
  place_edge_operands(constants, editable.file());
  const BoundTensors bound = bind_inputs(editable.file(), constants, "edge suite");
  const ref::Boundary boundary(constants, bound.operands);
  const Context ctx{constants, boundary, bound.operands.alpha, bound.operands.beta};
  Suite suite{"edge", {}, {}};
  for (std::int64_t row = 0; row < rows; ++row) {
    editable.edit(row, [&](const RowEdit& r) { plan[static_cast<std::size_t>(row)].edit(r, ctx); });
    suite.row_family.push_back(plan[static_cast<std::size_t>(row)].family);
  }
  suite.inputs = std::move(editable).finish(stream_dtype);
  suite.inputs.metadata["generator"] = "edge suite level " + std::to_string(level) +
                                       ": row families over realistic rows, edge gates and weights in fixed columns";
  return suite;
}

TieRows count_tie_rows(const Constants& constants, const st::File& inputs) {
  const BoundTensors bound = bind_inputs(inputs, constants, "tie count");
  const ref::Boundary boundary(constants, bound.operands);
  const auto m = static_cast<std::size_t>(bound.m);
  ref::Results r(bound.m, ref::Results::Wanted::everything);
  boundary.run(bound.inputs, r.outputs());
  TieRows ties;
  for (std::size_t row = 0; row < m; ++row) {
    bool y = false, s = false, u = false;
    for (int c = 0; c < kH; ++c) {
      const std::size_t i = row * kH + c;
      y = y || is_bf16_tie(norm_output(constants.post, boundary.post_gamma(), c, bf16_to_f32(r.branch[i]), r.r1[row]));
      s = s || is_bf16_tie(r.new_stream[i]);
      u = u || is_bf16_tie(norm_output(constants.pre, boundary.pre_gamma(), c, bf16_to_f32(r.z[i]), r.r2[row]));
    }
    ties.y += y;
    ties.res += s;
    ties.out += u;
  }
  return ties;
}

}  // namespace boundary::suite
