// The edge suite: named row families laid over realistic rows (edge_rows.hpp), with edge gates and
// weights in fixed columns. Families that need the row's own norm factors (BF16 ties, FPRev rows
// in the stream) ask the emulator for them while the row is built.
#include <boundary/edge_suite.hpp>

#include "order_rows.hpp"

#include <boundary/boundary_tensors.hpp>
#include <boundary/edge_rows.hpp>
#include <boundary/primitives.hpp>
#include <boundary/reference.hpp>

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

constexpr std::uint32_t kBias = 127;

std::string hex(std::uint32_t bits, int digits) {
  static const char kDigits[] = "0123456789ABCDEF";
  std::string s = "0x";
  for (int d = digits - 1; d >= 0; --d) s += kDigits[(bits >> (4 * d)) & 0xFu];
  return s;
}

std::uint16_t pow2_bf16(int exponent) { return bf16_bits(0, static_cast<std::uint32_t>(static_cast<int>(kBias) + exponent), 0); }

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

// ---- What a family may read while it builds a row: the operands and the emulator.
struct Context {
  const Constants& constants;
  const ref::Boundary& boundary;
  const float* alpha;
  const float* beta;
};

struct RowOutputs {
  float s1 = 0, r1 = 0, s2 = 0, r2 = 0;
  std::vector<std::uint16_t> y_b = std::vector<std::uint16_t>(kH);
  std::vector<std::uint16_t> out = std::vector<std::uint16_t>(kH);
};

// The row as it stands, through the emulator (F32 stream: the families that read the outputs set
// BF16-exact stream values, so both stream dtypes see the same row).
RowOutputs emulate(const Context& ctx, const RowEdit& r) {
  RowOutputs o;
  ref::Inputs in;
  in.m = 1;
  in.branch = r.branch;
  in.stream = r.s32;
  ref::Outputs out;
  out.out = o.out.data();
  out.y_b = o.y_b.data();
  out.post_row_sum = &o.s1;
  out.r1 = &o.r1;
  out.pre_row_sum = &o.s2;
  out.r2 = &o.r2;
  ctx.boundary.run(in, out);
  return o;
}

bool is_bf16_tie(float v) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(v);
  return (bits & 0x7F800000u) != 0x7F800000u && (bits & 0xFFFFu) == 0x8000u;
}

// The first of 256 BF16 candidates (both signs, every significand, exponent e) whose value `stage`
// maps to a BF16 tie; the positive power of two when none does.
template <class Stage>
std::uint16_t tie_candidate(std::uint32_t e, Stage&& stage) {
  for (std::uint32_t j = 0; j < 256; ++j) {
    const std::uint16_t cand = bf16_bits(j >> 7, e, j & 127u);
    if (is_bf16_tie(stage(bf16_to_f32(cand)))) return cand;
  }
  return bf16_bits(0, e, 0);
}

// ---- Families.
using Edit = std::function<void(const RowEdit&, const Context&)>;
struct Planned {
  std::string family;
  Edit edit;
};

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

// ---- BF16 ties after normalization, in rows whose row sums depend on the summation order (so
// that a changed order, or a norm factor one ulp off, moves the ties). The even columns keep the
// row's realistic values; the odd ones hold values 2^-40 smaller, whose squares cannot change the
// row sum, so the norm factor is known before they are chosen: each is the first candidate whose
// normalized value is a tie.
float norm_output(const NormConstants& norm, const std::vector<float>& gamma, int c, float v, float r) {
  if (norm.has_weight() && norm.input_scale) v = mul_rn(gamma[c], v);
  v = mul_rn(v, r);
  if (norm.has_weight() && !norm.input_scale) v = mul_rn(v, gamma[c]);
  return v;
}

constexpr std::uint32_t kTieExponent = kBias - 40;
constexpr int kTuningAttempts = 4096;

// A BF16 significand has 128 values only, so one norm factor may admit no tie at all (without a
// gain, every column then fails alike). `tune` nudges one realistic element (changing the row
// sum, hence the norm factor) until column 1 admits a tie.
template <class Measure, class Tune, class Admits>
auto tuned(Measure&& measure, Tune&& tune, Admits&& admits, int attempts = kTuningAttempts) {
  auto o = measure();
  for (int attempt = 1; attempt < attempts && !admits(o); ++attempt) {
    tune();
    o = measure();
  }
  return o;
}

// The post norm's row sum and factor alone (the emulator's own functions), for the searches
// that only change the branch: far cheaper than a whole row.
struct PostNorm {
  float s1, r1;
};
PostNorm post_norm(const Context& ctx, const RowEdit& r) {
  const NormConstants& post = ctx.constants.post;
  std::vector<float> x(kH);
  for (int c = 0; c < kH; ++c) {
    x[c] = bf16_to_f32(r.branch[c]);
    if (post.has_weight() && post.input_scale) x[c] = mul_rn(ctx.boundary.post_gamma()[c], x[c]);
  }
  const float s1 = ref::row_sum(x.data(), post.fma_squares);
  return {s1, ref::norm_factor(s1, static_cast<float>(post.eps))};
}

bool admits_tie(std::uint32_t e, const auto& stage) { return is_bf16_tie(stage(bf16_to_f32(tie_candidate(e, stage)))); }

// Smaller still: the square rounds to 0.
constexpr std::uint32_t kTinyExponent = kBias - 80;
constexpr int kProbes = 16;

// y of column c as a function of the branch element, for the norm factor r1.
auto y_stage(const Context& ctx, int c, float r1) {
  return [&ctx, c, r1](float x) { return norm_output(ctx.constants.post, ctx.boundary.post_gamma(), c, x, r1); };
}

Edit tie_y(int exponent) {
  return [=](const RowEdit& r, const Context& ctx) {
    for (int c = 1; c < kH; c += 2) r.branch[c] = 0;
    const auto y = [&](int c, float r1) { return y_stage(ctx, c, r1); };
    const float r1 = tuned([&] { return post_norm(ctx, r); }, [&] { ++r.branch[0]; },
                           [&](const PostNorm& o) { return admits_tie(kTieExponent + exponent, y(1, o.r1)); }).r1;
    for (int c = 1; c < kH; c += 2) {
      r.branch[c] = tie_candidate(kTieExponent + exponent, y(c, r1));
      r.set_stream(c, 0.0f);  // res = beta * y_b: a changed y_b shows in new_stream
    }
  };
}

Edit tie_res(int exponent_offset) {
  return [=](const RowEdit& r, const Context& ctx) {
    const std::vector<std::uint16_t> y_b = emulate(ctx, r).y_b;
    for (int c = 0; c < kH; ++c) {
      const float p = mul_rn(ctx.beta[c], bf16_to_f32(y_b[c]));
      const int e = p == 0.0f || !std::isfinite(p) ? static_cast<int>(kBias) : static_cast<int>((std::bit_cast<std::uint32_t>(p) >> 23) & 0xFFu);
      const auto exponent = static_cast<std::uint32_t>(std::clamp(e + exponent_offset, 1, 254));
      r.set_stream(c, bf16_to_f32(tie_candidate(exponent, [&](float s) { return add_rn(mul_rn(ctx.alpha[c], s), p); })));
    }
  };
}

// o of column c as a function of the stream element, for the row's y_b and r2.
auto o_stage(const Context& ctx, int c, const RowOutputs& row) {
  const float p = mul_rn(ctx.beta[c], bf16_to_f32(row.y_b[c]));
  return [&ctx, c, p, r2 = row.r2](float s) {
    const float z = bf16_to_f32(f32_to_bf16_rn(add_rn(mul_rn(ctx.alpha[c], s), p)));
    return norm_output(ctx.constants.pre, ctx.boundary.pre_gamma(), c, z, r2);
  };
}

Edit tie_out(int exponent) {
  return [=](const RowEdit& r, const Context& ctx) {
    for (int c = 0; c < kH; ++c) {
      if (c % 2) r.branch[c] = 0;  // y_b = 0 there: z = bf16(alpha * s) stays small
      r.set_stream(c, c % 2 ? 0.0f : bf16_to_f32(f32_to_bf16_rn(r.s32[c])));
    }
    const auto o = [&](int c, const RowOutputs& first) { return o_stage(ctx, c, first); };
    const RowOutputs first = tuned(
        [&] { return emulate(ctx, r); }, [&] { r.set_stream(0, bf16_to_f32(static_cast<std::uint16_t>(f32_to_bf16_rn(r.s32[0]) + 1))); },
        [&](const RowOutputs& out) { return admits_tie(kTieExponent + exponent, o(1, out)); });
    for (int c = 1; c < kH; c += 2) r.set_stream(c, bf16_to_f32(tie_candidate(kTieExponent + exponent, o(c, first))));
  };
}

// ---- FPRev rows: 2^12 (square 2^24, whose ulp is 2) and ones (square 1, a tie that rounds away
// when added to 2^24 alone): the row sum tells which elements met first. Each layout lists
// (column, exponent); every other element is zero.
using Layout = std::vector<std::pair<int, int>>;

// 2^12 on lane 1 of warp w, ones on lanes 0 and 16: the butterfly from distance 16 down adds the
// ones together (2^24 + 2), from distance 1 up adds each to 2^24 alone (2^24).
Layout butterfly_layout(int w) {
  return {{ref::column(32 * w + 1, w % kFragments, 0), 12}, {ref::column(32 * w, 0, w), 0}, {ref::column(32 * w + 16, 1, 7 - w), 0}};
}
Layout cross_warp_layout(int w) {  // 2^12 in warp w, a single one in every other warp
  Layout l;
  for (int v = 0; v < kWarps; ++v) l.emplace_back(ref::column(32 * v + (5 + 7 * w + v) % 32, v % kFragments, v), v == w ? 12 : 0);
  return l;
}
Layout thread_chain_layout(int k, int i) {  // 2^12 at fragment k element i of one thread, ones in its other columns
  Layout l;
  for (int kk = 0; kk < kFragments; ++kk)
    for (int ii = 0; ii < kVec; ++ii) l.emplace_back(ref::column(37, kk, ii), kk == k && ii == i ? 12 : 0);
  return l;
}

// The n-th column of c's thread (the same place in the summation order), from c on, where the
// element's square stays exact: its gamma is exactly 1 under an input-scale weight (x' = gamma * x),
// and in the stream z hits the target.
int exact_column(const Context& ctx, bool stream, int c, int n, float target) {
  const NormConstants& norm = stream ? ctx.constants.pre : ctx.constants.post;
  const std::vector<float>& gamma = stream ? ctx.boundary.pre_gamma() : ctx.boundary.post_gamma();
  const bool scaled = norm.has_weight() && norm.input_scale;
  const int t = (c % 2048) / kVec;
  const int first = (c / 2048) * kVec + c % kVec;
  for (int j = 0; j < kFragments * kVec; ++j) {
    const int at = ref::column(t, (first + j) / kVec % kFragments, (first + j) % kVec);
    if ((!scaled || gamma[at] == 1.0f) && (!stream || order::z_exact(ctx.alpha[at], target)) && n-- == 0) return at;
  }
  return c;
}

// Whether the norm factor of the row sum S differs from that of a neighbour one ulp away: then a
// summation order that ends one ulp off that way changes the norm factor (both ways at once are
// rare: MUFU.RSQ maps many neighbouring inputs to one output).
bool reveals_neighbours(float s, float eps) {
  const float r = ref::norm_factor(s, eps);
  return r != ref::norm_factor(std::nextafter(s, 0.0f), eps) || r != ref::norm_factor(std::nextafter(s, INFINITY), eps);
}

// An FPRev row made visible in the outputs, in the branch (y) or, with the branch zero (y_b = 0,
// z = bf16(alpha * s)), in the stream (z). The big element 2^12 * (1 + j/128) and an extra element
// v in its thread (v^2 a multiple of 4, so that the thread's sum B^2 + v^2 stays an exact even
// number in [2^24, 2^25) and each lone 1 a tie that rounds away) are chosen so that the norm factor
// tells the row sum from its neighbours and the norm's output admits BF16 ties. Every other element
// is about 2^-80 (its square rounds to 0: the row sum is the layout's alone), chosen so that the
// norm's output is a tie, which a norm factor one ulp off breaks.
Edit fprev(Layout layout, bool extra, bool stream) {
  return [layout = std::move(layout), extra, stream](const RowEdit& r, const Context& ctx) {
    std::vector<bool> in_layout(kH);
    const std::uint32_t j0 = r.below(54);
    std::uint32_t attempt = 0;
    const auto put = [&](int c, int n, std::uint16_t v) {
      const int at = exact_column(ctx, stream, c, n, bf16_to_f32(v));
      in_layout[at] = true;
      if (stream) r.set_stream(at, order::stream_for_z(ctx.alpha[at], bf16_to_f32(v)));
      else r.branch[at] = v;
    };
    const auto place = [&] {
      std::fill_n(r.branch, kH, 0);
      for (int c = 0; c < kH; ++c) r.set_stream(c, 0.0f);
      std::fill(in_layout.begin(), in_layout.end(), false);
      for (const auto& [c, e] : layout) {
        if (e != 12) {
          put(c, 0, pow2_bf16(e));
          continue;
        }
        put(c, 0, bf16_bits(0, kBias + 12, (j0 + attempt) % 54));
        const std::uint32_t v = attempt / 54;
        if (extra && v != 0) put(c, 1, bf16_bits(0, kBias + 8 + (v / 128) % 4, v % 128));
      }
    };
    place();
    const auto eps = static_cast<float>((stream ? ctx.constants.pre : ctx.constants.post).eps);
    // A few columns are probed for a tie: with a gain, each column has its own chance.
    const auto admits = [&](float s, float r_norm, const auto& stage) {
      if (s < 0x1p24f || s >= 0x1p25f || !reveals_neighbours(s, eps)) return false;
      for (int c = 0, probed = 0; c < kH && probed < kProbes; ++c)
        if (!in_layout[c] && ++probed && admits_tie(kTinyExponent, stage(c, r_norm))) return true;
      return false;
    };
    const auto next = [&] {
      ++attempt;
      place();
    };
    if (!stream) {
      const float r1 = tuned([&] { return post_norm(ctx, r); }, next, [&](const PostNorm& o) {
        return admits(o.s1, o.r1, [&](int c, float r_norm) { return y_stage(ctx, c, r_norm); });
      }, 1024).r1;
      // The stream is zero where y is a tie: res = beta * y_b shows a changed y_b in new_stream.
      for (int c = 0; c < kH; ++c)
        if (!in_layout[c]) {
          r.branch[c] = tie_candidate(kTinyExponent, y_stage(ctx, c, r1));
          r.set_stream(c, 0.0f);
        }
      return;
    }
    const RowOutputs row = tuned([&] { return emulate(ctx, r); }, next, [&](const RowOutputs& o) {
      return admits(o.s2, o.r2, [&](int c, float) { return o_stage(ctx, c, o); });
    }, 256);
    for (int c = 0; c < kH; ++c)
      if (!in_layout[c]) r.set_stream(c, bf16_to_f32(tie_candidate(kTinyExponent, o_stage(ctx, c, row))));
  };
}

void add_fprev(std::vector<Planned>& plan, int level) {
  for (int w = 0; w < kWarps; ++w) {
    const std::string warp = std::to_string(w);
    plan.push_back({"FPRev: warp butterfly, 2^12 and two ones in warp " + warp + ", y ties elsewhere", fprev(butterfly_layout(w), true, false)});
    plan.push_back({"FPRev: warp totals, 2^12 in warp " + warp + ", a 1 in every other warp, y ties elsewhere", fprev(cross_warp_layout(w), true, false)});
    plan.push_back({"FPRev (stream): warp butterfly, z 2^12 and two ones in warp " + warp + ", o ties elsewhere", fprev(butterfly_layout(w), true, true)});
    plan.push_back({"FPRev (stream): warp totals, z 2^12 in warp " + warp + ", a 1 in every other warp, o ties elsewhere", fprev(cross_warp_layout(w), true, true)});
  }
  for (int k = 0; k < kFragments; ++k)
    for (int i = 0; i < kVec; ++i)
      if (level >= 2 || i == 2 * k + 1)
        plan.push_back({"FPRev: thread chains, 2^12 at fragment " + std::to_string(k) + " element " + std::to_string(i) +
                            ", ones in the thread's other columns",
                        fprev(thread_chain_layout(k, i), false, false)});
}

void add_ties(std::vector<Planned>& plan, int level) {
  const int n = level >= 2 ? 12 : 4;
  for (int j = 0; j < n; ++j) {
    const std::string e = std::to_string(j);
    plan.push_back({"tie: y between two BF16 values (realistic even columns, odd ones 2^-" + std::to_string(40 + j) + ")", tie_y(-j)});
    plan.push_back({"tie: res between two BF16 values (stream 2^" + e + " times the branch term)", tie_res(j % 4)});
    plan.push_back({"tie: o between two BF16 values (realistic even stream columns, odd ones 2^-" + std::to_string(40 + j) + ")", tie_out(-j)});
  }
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
  std::vector<float> res(m * kH), r1(m), r2(m);
  std::vector<std::uint16_t> out(m * kH), branch(m * kH), z(m * kH);
  ref::Outputs o;
  o.out = out.data();
  o.new_stream = res.data();
  o.branch = branch.data();
  o.z = z.data();
  o.r1 = r1.data();
  o.r2 = r2.data();
  boundary.run(bound.inputs, o);
  TieRows ties;
  for (std::size_t row = 0; row < m; ++row) {
    bool y = false, s = false, u = false;
    for (int c = 0; c < kH; ++c) {
      const std::size_t i = row * kH + c;
      y = y || is_bf16_tie(norm_output(constants.post, boundary.post_gamma(), c, bf16_to_f32(branch[i]), r1[row]));
      s = s || is_bf16_tie(res[i]);
      u = u || is_bf16_tie(norm_output(constants.pre, boundary.pre_gamma(), c, bf16_to_f32(z[i]), r2[row]));
    }
    ties.y += y;
    ties.res += s;
    ties.out += u;
  }
  return ties;
}

}  // namespace boundary::suite
