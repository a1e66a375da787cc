// The edge suite's order rows: a row sum on the edge of overflow, whose last rounding goes up to
// infinity or down to FLT_MAX depending on which elements meet first.
#include "order_rows.hpp"

#include <boundary/primitives.hpp>
#include <boundary/reference.hpp>

#include <algorithm>
#include <bit>
#include <cmath>

namespace boundary::suite::order {

namespace {

using ref::f32_to_bf16_rn;
using ref::mul_rn;

// The big thread sum A = (2^24 - 1) * 2^104 = FLT_MAX, the squares of six BF16 values r * 2^52:
// every partial sum is a multiple of 2^104 below 2^128, hence exact, in any order and with or
// without fma squares (each square is exact).
constexpr int kBigRoots[] = {4080, 360, 34, 7, 3, 1};
static_assert(4080 * 4080 + 360 * 360 + 34 * 34 + 7 * 7 + 3 * 3 + 1 == (1 << 24) - 1);
// The small one b = (181 * 2^44)^2 = 32761 * 2^88, just below half an ulp of A (2^103): A + b
// rounds to A, and again A + b to A; but A + (b + b), b + b >= 2^103, rounds to infinity.
constexpr int kSmallRoot = 181;
static_assert(kSmallRoot * kSmallRoot < (1 << 15) && 2 * kSmallRoot * kSmallRoot >= (1 << 15));

std::vector<float> big() {
  std::vector<float> v;
  for (const int root : kBigRoots) v.push_back(std::ldexp(static_cast<float>(root), 52));
  return v;
}
std::vector<float> small() { return {std::ldexp(static_cast<float>(kSmallRoot), 44)}; }

// Values placed in thread t's columns, in fragment k only when k >= 0; every other element zero.
struct Part {
  int thread;
  int fragment;
  std::vector<float> values;
};
using Layout = std::vector<Part>;

// Warp w's butterfly: A on lane 1, b on lanes 0 and 16. Distances 16 .. 1 add the two b together,
// then A (infinity); distances 1 .. 16 add each b to A alone (FLT_MAX).
Layout butterfly(int w) {
  return {{32 * w + 1, -1, big()}, {32 * w, 0, small()}, {32 * w + 16, 0, small()}};
}
// A in warp w, b alone in two warps on one side of it: one fold of the warp totals meets the two b
// together before A, the reversed fold meets A first.
Layout warp_totals(int w) {
  const int p = w >= 2 ? 0 : kWarps - 2;
  return {{32 * w + 1, -1, big()}, {32 * p, 0, small()}, {32 * (p + 1), 0, small()}};
}
// The same for a thread's fold of its four chunk pairs: A in fragment k of thread 1, b in two
// fragments on one side of it.
Layout fragments(int k) {
  const int p = k >= 2 ? 0 : 2;
  return {{1, k, big()}, {1, p, small()}, {1, p + 1, small()}};
}

// A column where an order row's element shows: gates realistic (normal), and a gamma exactly 1
// under input scale (the element is exact), else a normal one; in the stream z hits the value.
bool usable(const Operands& ops, bool stream, int c, float v) {
  const NormConstants& norm = stream ? ops.constants.pre : ops.constants.post;
  const std::vector<float>& gamma = stream ? ops.pre_gamma : ops.post_gamma;
  if (!std::isnormal(ops.alpha[c]) || !std::isnormal(ops.beta[c])) return false;
  if (norm.has_weight() && (norm.input_scale ? gamma[c] != 1.0f : !std::isnormal(gamma[c]))) return false;
  return !stream || z_exact(ops.alpha[c], v);
}

// Puts each part's values in the first usable columns of its thread (or fragment), in column
// order (the next column when none is usable, none when none is left: the row then catches less).
// In the branch the stream is 0 there (res = beta * y_b); in the stream z = bf16(alpha * s) is
// the value.
void place(const Layout& layout, const RowEdit& r, const Operands& ops, bool stream) {
  for (const Part& p : layout) {
    std::vector<int> columns;
    for (int k = 0; k < kFragments; ++k)
      if (p.fragment < 0 || p.fragment == k)
        for (int i = 0; i < kVec; ++i) columns.push_back(ref::column(p.thread, k, i));
    std::size_t next = 0;
    for (const float v : p.values) {
      std::size_t at = next;
      while (at < columns.size() && !usable(ops, stream, columns[at], v)) ++at;
      if (at == columns.size()) at = next;
      if (at == columns.size()) break;  // no column left: the value is left out
      const int c = columns.at(at);
      next = at + 1;
      if (stream) {
        r.set_stream(c, stream_for_z(ops.alpha[c], v));
      } else {
        r.branch[c] = f32_to_bf16_rn(v);
        r.set_stream(c, 0.0f);
      }
    }
  }
}

// In the branch: every other element of the branch 0, the stream as it is.
auto in_branch(Layout layout) {
  return [layout = std::move(layout)](const RowEdit& r, const Operands& ops) {
    std::fill_n(r.branch, kH, 0);
    place(layout, r, ops, false);
  };
}

// In the stream: the branch 0 (y_b = 0, z = bf16(alpha * s)) but for a 1 in the column whose beta
// is 0, so that S1 > 0 and r1 is finite even with eps 0 (0 * r1 = 0, not NaN); its z is 0 too.
auto in_stream(Layout layout, int beta_zero_column) {
  return [layout = std::move(layout), beta_zero_column](const RowEdit& r, const Operands& ops) {
    std::fill_n(r.branch, kH, 0);
    r.branch[beta_zero_column] = f32_to_bf16_rn(1.0f);
    for (int c = 0; c < kH; ++c) r.set_stream(c, 0.0f);
    place(layout, r, ops, true);
  };
}

}  // namespace

std::vector<Family> families(int beta_zero_column) {
  std::vector<Family> all;
  const auto add = [&](const std::string& what, const Layout& layout) {
    all.push_back({"order (overflow): " + what + ", branch", in_branch(layout)});
    all.push_back({"order (overflow): " + what + ", stream", in_stream(layout, beta_zero_column)});
  };
  for (int w = 0; w < kWarps; ++w) {
    add("warp butterfly, FLT_MAX and two of just under half its ulp in warp " + std::to_string(w), butterfly(w));
    add("warp totals, FLT_MAX in warp " + std::to_string(w), warp_totals(w));
  }
  for (int k = 0; k < kFragments; ++k) add("fragments, FLT_MAX in fragment " + std::to_string(k), fragments(k));
  return all;
}

std::vector<int> unit_gain_columns() {
  std::vector<int> c;
  for (int w = 0; w < kWarps; ++w) {
    for (int k = 0; k < kFragments; ++k)
      for (int i = 0; i < kVec; ++i) c.push_back(ref::column(32 * w + 1, k, i));
    for (int i = 0; i < kVec; ++i) {
      c.push_back(ref::column(32 * w, 0, i));
      c.push_back(ref::column(32 * w + 16, 0, i));
    }
  }
  return c;
}

std::uint32_t unit_weight_bits(const NormConstants& norm) {
  const auto w = static_cast<float>(1.0 - static_cast<double>(static_cast<float>(norm.gain_center.value_or(0.0))));
  switch (norm.weight_dtype) {
    case WeightDtype::bf16: return f32_to_bf16_rn(w);
    case WeightDtype::fp16: return ref::f32_to_f16_rn(w);
    case WeightDtype::fp32: break;
  }
  return std::bit_cast<std::uint32_t>(w);
}

float stream_for_z(float alpha, float target) {
  const std::uint16_t guess = f32_to_bf16_rn(static_cast<float>(static_cast<double>(target) / static_cast<double>(alpha)));
  for (int d : {0, 1, -1, 2, -2, 3, -3}) {
    const float s = ref::bf16_to_f32(static_cast<std::uint16_t>(guess + d));
    if (f32_to_bf16_rn(mul_rn(alpha, s)) == f32_to_bf16_rn(target)) return s;
  }
  return ref::bf16_to_f32(guess);
}

bool z_exact(float alpha, float target) {
  return alpha != 0.0f && std::isfinite(alpha) && f32_to_bf16_rn(mul_rn(alpha, stream_for_z(alpha, target))) == f32_to_bf16_rn(target);
}

}  // namespace boundary::suite::order
