// The edge suite's BF16 tie and FPRev rows (edge_families.hpp): each asks the emulator for the
// row's own norm factors while the row is built, so that a changed summation order or a norm
// factor one ulp off moves a tie.
#include "edge_families.hpp"

#include "order_rows.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace boundary::suite::edge_detail {

namespace {

using ref::add_rn;
using ref::bf16_to_f32;
using ref::f32_to_bf16_rn;
using ref::mul_rn;

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

// ---- BF16 ties after normalization, in rows whose row sums depend on the summation order (so
// that a changed order, or a norm factor one ulp off, moves the ties). The even columns keep the
// row's realistic values; the odd ones hold values 2^-40 smaller, whose squares cannot change the
// row sum, so the norm factor is known before they are chosen: each is the first candidate whose
// normalized value is a tie.

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
// that only change the branch: far cheaper than a whole row, or than ref::post_norm.
struct PostNorm {
  float s1, r1;
};
PostNorm s1_and_r1(const Context& ctx, const RowEdit& r) {
  const NormConstants& post = ctx.constants.post;
  std::vector<float> x(kH);
  for (int c = 0; c < kH; ++c) {
    x[c] = bf16_to_f32(r.branch[c]);
    if (post.has_weight() && post.input_scale) x[c] = mul_rn(ctx.boundary.post_gamma()[c], x[c]);
  }
  const float s1 = ref::sum_of_squares(x.data(), post.fma_squares);
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
    const float r1 = tuned([&] { return s1_and_r1(ctx, r); }, [&] { ++r.branch[0]; },
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
      const float r1 = tuned([&] { return s1_and_r1(ctx, r); }, next, [&](const PostNorm& o) {
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

}  // namespace

float norm_output(const NormConstants& norm, const std::vector<float>& gamma, int c, float v, float r) {
  if (norm.has_weight() && norm.input_scale) v = mul_rn(gamma[c], v);
  v = mul_rn(v, r);
  if (norm.has_weight() && !norm.input_scale) v = mul_rn(v, gamma[c]);
  return v;
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

}  // namespace boundary::suite::edge_detail
