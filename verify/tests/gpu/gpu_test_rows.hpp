// The rows the GPU tests run: realistic rows, edge rows (one pattern a row), extreme gates, their
// copies on the device, and what the emulator says for them.
#pragma once

#include "gpu_test_bits.hpp"
#include "gpu_test_subjects.hpp"

#include <boundary/verify/edge_rows.hpp>
#include <boundary/primitives.hpp>
#include <boundary/results.hpp>

#include <bit>
#include <cstring>
#include <limits>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>

namespace gpu_test {

constexpr std::int64_t kRows = 4096;  // rows generated once; the largest m
constexpr std::uint64_t kRowSeed = 20261202;

struct HostRows {
  std::int64_t n = 0;
  std::vector<std::uint16_t> branch;       // BF16 [n, H]
  std::vector<float> stream_f32;           // F32 [n, H]
  std::vector<std::uint16_t> stream_bf16;  // BF16 [n, H]: the F32 stream rounded, unless an edge pattern says otherwise
  RowLabel label;
};

// The rows of an input file with an F32 stream; the BF16 stream is it rounded.
inline HostRows rows_of(const st::File& f) {
  HostRows r;
  r.n = f.tensors.at("branch").shape.at(0);
  const auto* b = f.tensors.at("branch").data<std::uint16_t>();
  const auto* s = f.tensors.at("stream").data<float>();
  r.branch.assign(b, b + elements(r.n));
  r.stream_f32.assign(s, s + elements(r.n));
  r.stream_bf16.resize(r.stream_f32.size());
  std::transform(r.stream_f32.begin(), r.stream_f32.end(), r.stream_bf16.begin(), ref::f32_to_bf16_rn);
  return r;
}

// generate_inputs is single-threaded (about 2 s for 4096 rows): made once per process.
inline const HostRows& realistic_rows() {
  static const HostRows rows = rows_of(generate_inputs(post_ffn(), kRows, kRowSeed, StreamDtype::f32));
  return rows;
}

// Rows [first, first + n) of h as a data set of their own.
inline HostRows slice(const HostRows& h, std::int64_t first, std::int64_t n) {
  REQUIRE(first + n <= h.n);
  const auto range = [&](const auto& v) {
    using V = std::remove_cvref_t<decltype(v)>;
    return V(v.begin() + static_cast<std::ptrdiff_t>(elements(first)), v.begin() + static_cast<std::ptrdiff_t>(elements(first + n)));
  };
  HostRows r;
  r.n = n;
  r.branch = range(h.branch);
  r.stream_f32 = range(h.stream_f32);
  r.stream_bf16 = range(h.stream_bf16);
  return r;
}

// ---- Edge rows: one pattern per row, applied over a realistic row.

constexpr std::uint16_t bf16(std::uint32_t sign, std::uint32_t exp, std::uint32_t frac) {
  return static_cast<std::uint16_t>((sign << 15) | (exp << 7) | frac);
}
constexpr std::uint32_t f32_bits(std::uint32_t sign, std::uint32_t exp, std::uint32_t frac) {
  return (sign << 31) | (exp << 23) | frac;
}
inline float f32(std::uint32_t sign, std::uint32_t exp, std::uint32_t frac) {
  return std::bit_cast<float>(f32_bits(sign, exp, frac));
}

// The edge patterns live in the verify library (capture writes them as fixtures too).
inline const std::span<const EdgePattern> kEdgePatterns = edge_patterns();
inline const std::int64_t kEdgeKinds = static_cast<std::int64_t>(kEdgePatterns.size());

// The first row holding the pattern whose name starts with `prefix`.
inline std::int64_t edge_row(std::string_view prefix) {
  for (std::int64_t i = 0; i < kEdgeKinds; ++i)
    if (std::string_view(kEdgePatterns[i].name).starts_with(prefix)) return i;
  FAIL("no edge pattern named " << std::string(prefix));
  return -1;
}

inline std::string edge_label(std::int64_t row) {
  return std::string("edge pattern '") + kEdgePatterns[row % kEdgeKinds].name + "'";
}

// Row r holds pattern r % kEdgeKinds over realistic row r: every batch of m >= kEdgeKinds rows
// has every pattern, each tile on other realistic values.
inline const HostRows& edge_rows() {
  static const HostRows rows = [] {
    HostRows r = realistic_rows();
    r.label = edge_label;
    for (std::int64_t row = 0; row < r.n; ++row) {
      Rng rng(kRowSeed + 1000003u * static_cast<std::uint64_t>(row));
      const std::size_t at = elements(row);
      kEdgePatterns[row % kEdgeKinds].edit({&r.branch[at], &r.stream_f32[at], &r.stream_bf16[at], &rng});
    }
    return r;
  }();
  return rows;
}

// Extreme gates live in alpha and beta, which every row shares: a few columns each, so that
// the other columns still carry realistic values through both row sums.
enum class Gates { realistic, small_extremes, huge_extremes };
inline const char* gates_name(Gates g) {
  return g == Gates::realistic ? "realistic gates"
         : g == Gates::small_extremes ? "gates 0, -0, subnormal, negative in every 4th column"
                                      : "gates huge, Inf, NaN in every 64th column";
}

inline void set_bits(float& f, std::uint32_t pattern) { std::memcpy(&f, &pattern, sizeof pattern); }

inline void apply_gates(HostOperands& ops, Gates g) {
  if (g == Gates::realistic) return;
  const float max = std::numeric_limits<float>::max(), inf = std::numeric_limits<float>::infinity();
  if (g == Gates::small_extremes) {
    const std::pair<float, float> pairs[] = {{0.0f, 0.0f},
                                             {0.0f, 1.0f},
                                             {1.0f, 0.0f},
                                             {-0.0f, 1.0f},
                                             {1.0f, -0.0f},
                                             {f32(0, 0, 1), f32(0, 0, 1)},             // 2^-149
                                             {f32(1, 0, 1u << 13), 0.5f},              // -2^-136
                                             {-0.75f, -1.25f},
                                             {f32(0, 1, 0), f32(1, 1, 0)},             // +-2^-126
                                             {-1.0f, 1.0f}};
    for (int c = 1; c < kH; c += 4) std::tie(ops.alpha[c], ops.beta[c]) = pairs[(c / 4) % std::size(pairs)];
    return;
  }
  const std::pair<float, float> pairs[] = {{max, 1.0f}, {1.0f, max}, {3e38f, -3e38f}, {inf, 0.5f}, {0.5f, -inf}, {1.0f, 1.0f}};
  for (int c = 7; c < kH; c += 64) {
    const std::size_t i = (c / 64) % std::size(pairs);
    std::tie(ops.alpha[c], ops.beta[c]) = pairs[i];
    if (i + 1 == std::size(pairs)) set_bits(ops.alpha[c], 0x7FA00000u);  // a NaN gate with a payload
  }
}

// ---- Rows on the device.

struct DeviceRows {
  explicit DeviceRows(const HostRows& h)
      : n(h.n),
        branch(upload(h.branch.data(), h.branch.size())),
        stream_f32(upload(h.stream_f32.data(), h.stream_f32.size())),
        stream_bf16(upload(h.stream_bf16.data(), h.stream_bf16.size())) {}

  TensorView branch_view(std::int64_t first, std::int64_t m) const {
    REQUIRE(first + m <= n);
    return {branch.at(bytes16(first)), Dtype::bf16, {m, kH}};
  }
  TensorView stream_view(StreamDtype sd, std::int64_t first, std::int64_t m) const {
    REQUIRE(first + m <= n);
    if (sd == StreamDtype::f32) return {stream_f32.at(bytes32(first)), Dtype::f32, {m, kH}};
    return {stream_bf16.at(bytes16(first)), Dtype::bf16, {m, kH}};
  }
  // Overwrites device row `row` with host row `from` of h (the batch invariance probes).
  void write_row(std::int64_t row, const HostRows& h, std::int64_t from) const {
    CUDA_CHECK(cudaMemcpy(branch.at(bytes16(row)), &h.branch[elements(from)], bytes16(1), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(stream_f32.at(bytes32(row)), &h.stream_f32[elements(from)], bytes32(1), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(stream_bf16.at(bytes16(row)), &h.stream_bf16[elements(from)], bytes16(1), cudaMemcpyHostToDevice));
  }

  std::int64_t n;
  DeviceBuffer branch, stream_f32, stream_bf16;
};

// ---- What the emulator says.

struct Expected {
  std::int64_t rows = 0;
  std::vector<std::uint16_t> out;
  std::vector<float> new_stream;

  std::span<const std::uint16_t> out_rows(std::int64_t first, std::int64_t m) const {
    REQUIRE(first + m <= rows);
    return {out.data() + elements(first), elements(m)};
  }
  std::span<const float> new_stream_rows(std::int64_t first, std::int64_t m) const {
    REQUIRE(first + m <= rows);
    return {new_stream.data() + elements(first), elements(m)};
  }
};

inline Expected emulate(const Subject& s, const HostRows& h, StreamDtype sd, std::int64_t rows, std::int64_t first = 0) {
  REQUIRE(rows >= 1);
  REQUIRE(first + rows <= h.n);
  ref::Inputs in;
  in.m = rows;
  in.branch = h.branch.data() + elements(first);
  in.stream_dtype = sd;
  in.stream = sd == StreamDtype::f32 ? static_cast<const void*>(h.stream_f32.data() + elements(first))
                                     : h.stream_bf16.data() + elements(first);
  ref::Results r(rows);
  s.emulator.run(in, r.outputs(), host_threads());
  return {rows, std::move(r.out), std::move(r.new_stream)};
}

}  // namespace gpu_test
