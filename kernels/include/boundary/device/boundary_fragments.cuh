// The per-fragment arithmetic of the boundary (contract sections 3 and 5), shared by the
// stock norm kernel, the fused DraftBoundary kernel (and the fused all-reduce boundary to come):
// only where the fragments come from and how a row sum is completed differ between kernels.
#pragma once

#include <boundary/device/norm_args.hpp>
#include <boundary/device/primitives.cuh>
#include <boundary/device/row_sum.cuh>
#include <boundary/mutant.hpp>

#include <cstdint>

namespace boundary::dev {

__device__ __forceinline__ std::uint32_t lo16(std::uint32_t w) { return w & 0xFFFFu; }
__device__ __forceinline__ std::uint32_t hi16(std::uint32_t w) { return w >> 16; }

// 8 BF16 values (one 16-byte load) as FP32, exactly.
__device__ __forceinline__ void unpack_bf16x8(const uint4& raw, float (&v)[kVec]) {
  const std::uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[2 * i] = __uint_as_float(w[i] << 16);
    v[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
  }
}

// 8 FP32 values (two 16-byte loads, lo then hi) as FP32, their bits unchanged.
__device__ __forceinline__ void unpack_f32x8(const uint4& lo, const uint4& hi, float (&v)[kVec]) {
  const std::uint32_t w[kVec] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
  for (int i = 0; i < kVec; ++i) v[i] = __uint_as_float(w[i]);
}

// 8 FP32 values to BF16, round to nearest even, packed for one 16-byte store.
__device__ __forceinline__ uint4 pack_bf16x8(const float (&v)[kVec]) {
  return make_uint4(f32x2_to_bf16x2_rn(v[1], v[0]), f32x2_to_bf16x2_rn(v[3], v[2]),
                    f32x2_to_bf16x2_rn(v[5], v[4]), f32x2_to_bf16x2_rn(v[7], v[6]));
}

// Round to BF16 and back: y_b and z of the contract.
__device__ __forceinline__ float round_bf16(float x) { return bf16_to_f32(f32_to_bf16_rn(x)); }

// The weight of 8 columns as loaded, not yet used: 16 bytes of BF16 or FP16 (lo), 32 of FP32
// (lo, hi). Apart from gamma(), so that a kernel can have the loads in flight while it waits
// for the previous grid and starts its rows' copies, and take their latency only then.
struct WeightFragment {
  uint4 lo, hi;
};

__device__ __forceinline__ WeightFragment load_weight(const NormArgs& n, int column) {
  if (n.kind == WeightKind::fp32) {
    const uint4* p = reinterpret_cast<const uint4*>(static_cast<const float*>(n.weight) + column);
    return {__ldg(p), __ldg(p + 1)};
  }
  return {__ldg(reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(n.weight) + column)), {}};
}

// gamma = weight + g in the weight's own dtype (contract section 3) for the 8 columns of f.
__device__ __forceinline__ void gamma(const NormArgs& n, const WeightFragment& f, float (&g)[kVec]) {
  if (n.kind == WeightKind::fp32) {
    const std::uint32_t w[kVec] = {f.lo.x, f.lo.y, f.lo.z, f.lo.w, f.hi.x, f.hi.y, f.hi.z, f.hi.w};
#pragma unroll
    for (int i = 0; i < kVec; ++i) g[i] = add_rn(__uint_as_float(w[i]), n.gain);
    return;
  }
  const std::uint32_t w[4] = {f.lo.x, f.lo.y, f.lo.z, f.lo.w};
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    const auto h = static_cast<std::uint16_t>(i % 2 ? hi16(w[i / 2]) : lo16(w[i / 2]));
    if constexpr (kMutant == Mutant::gain_unrounded)
      g[i] = add_rn(n.kind == WeightKind::bf16 ? bf16_to_f32(h) : f16_to_f32(h), n.gain);
    else if (n.kind == WeightKind::bf16) g[i] = round_bf16(add_rn(bf16_to_f32(h), n.gain));
    else g[i] = f16_to_f32(f32_to_f16_rn(add_rn(f16_to_f32(h), n.gain)));
  }
}

// gamma of the 8 columns at column, loaded and computed at once; 16/32-byte loads of the weight.
__device__ __forceinline__ void gamma(const NormArgs& n, int column, float (&g)[kVec]) {
  gamma(n, load_weight(n, column), g);
}

__device__ __forceinline__ bool has_weight(const NormArgs& n) { return n.kind != WeightKind::none; }

// Where a norm's gammas come from: gains(k, g) fills g with fragment k's 8 gains, either copied
// from registers loaded earlier (gains_in_registers) or read where they are used.
template <int kFragments>
__device__ __forceinline__ auto gains_in_registers(const float (&g)[kFragments][kVec]) {
  return [&g](int k, float (&out)[kVec]) {
#pragma unroll
    for (int i = 0; i < kVec; ++i) out[i] = g[k][i];
  };
}

// A norm's row sum S and the factor r it applied (what a diagnostics build records).
struct RowNorm {
  float s, r;
};

// One whole norm of a thread's fragments (the stock norm, and the body of post_norm and pre_norm):
// x' = gamma * x with an input scale, the row sum (completed by CompleteSum, which turns a thread's
// partial into the row's S), then y = x' * r with r = adjust(norm_factor(S)) (adjust: the identity,
// but in a planted-bug build), then * gamma when the weight is applied after the norm. Leaves y in
// x. Each gain is asked for once.
template <int kFragments, class Gains, class CompleteSum, class Adjust>
__device__ __forceinline__ RowNorm norm_fragments(const NormArgs& n, Gains gains, float (&x)[kFragments][kVec],
                                                  CompleteSum complete_sum, Adjust adjust) {
  if (has_weight(n) && n.input_scale) {
#pragma unroll
    for (int k = 0; k < kFragments; ++k) {
      float g[kVec];
      gains(k, g);
#pragma unroll
      for (int i = 0; i < kVec; ++i) x[k][i] = product(g[i], x[k][i]);
    }
  }
  const float s = complete_sum(thread_sum(x, n.fma_squares));
  const float r = adjust(norm_factor(s, n.eps));
  const bool after = has_weight(n) && !n.input_scale;
#pragma unroll
  for (int k = 0; k < kFragments; ++k) {
    float g[kVec];
    if (after) gains(k, g);
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      x[k][i] = product(x[k][i], r);
      if (after) x[k][i] = product(x[k][i], g[i]);
    }
  }
  return {s, r};
}

template <int kFragments, class Gains, class CompleteSum>
__device__ __forceinline__ RowNorm norm_fragments(const NormArgs& n, Gains gains, float (&x)[kFragments][kVec],
                                                  CompleteSum complete_sum) {
  return norm_fragments(n, gains, x, complete_sum, [](float r) { return r; });
}

// The connection: res = alpha * s + beta * y_b, each product rounded.
__device__ __forceinline__ float connection(float alpha, float s, float beta, float y_b) {
  if constexpr (kMutant == Mutant::connection_fma) return fma_rn(alpha, s, product(beta, y_b));
  else return add_rn(product(alpha, s), product(beta, y_b));
}

// Programmatic dependent launch: wait for the previous grid's results, then let the next grid
// start its prologue.
__device__ __forceinline__ void pdl_wait() {
  if constexpr (kMutant != Mutant::pdl_wait_missing) asm volatile("griddepcontrol.wait;" ::: "memory");
}
__device__ __forceinline__ void pdl_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" :::); }

}  // namespace boundary::dev
