// What the GPU tests share: checked CUDA calls, device and pinned buffers, streams, graphs and
// captures; bit comparisons that name the row, column and both patterns; the constants sets,
// operands and rows (realistic and edge); the emulator's expected outputs; launches.
//
// Every launch writes into buffers poisoned with 0xFF bytes: no correct result has those bits
// (a NaN result is the canonical 0x7FFF / 0x7FFFFFFF), so an element a kernel did not write
// cannot pass. One guard row past every batch must stay poisoned.
#pragma once

#include "pdl_chain.hpp"

#include <boundary/constants_json.hpp>
#include <boundary/edge_rows.hpp>
#include <boundary/generate.hpp>
#include <boundary/gpu/draft_boundary.hpp>
#include <boundary/primitives.hpp>
#include <boundary/reference.hpp>
#include <boundary/safetensors.hpp>

#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace gpu_test {

using namespace boundary;
namespace st = boundary::safetensors;
using gpu::Dtype;
using gpu::TensorView;
using gpu::Variant;


// ================================================================ CUDA calls

inline std::string cuda_failure(const char* call, cudaError_t e) {
  return std::string(call) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

// Every CUDA call is checked; a failure ends the test case, naming the call and CUDA's error.
#define CUDA_CHECK(call)                                                           \
  do {                                                                             \
    const cudaError_t cuda_check_error = (call);                                   \
    if (cuda_check_error != cudaSuccess) FAIL(cuda_failure(#call, cuda_check_error)); \
  } while (false)

// In destructors, which must not throw: the failure is recorded and the test case goes on.
#define CUDA_CHECK_NOTHROW(call)                                                        \
  do {                                                                                  \
    const cudaError_t cuda_check_error = (call);                                        \
    if (cuda_check_error != cudaSuccess) FAIL_CHECK(cuda_failure(#call, cuda_check_error)); \
  } while (false)

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    REQUIRE(bytes > 0);
    CUDA_CHECK(cudaMalloc(&data_, bytes));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (data_) CUDA_CHECK_NOTHROW(cudaFree(data_));
  }
  void* get() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  // `offset` bytes in: a row of a batch, or a deliberately misaligned operand.
  void* at(std::size_t offset) const { return static_cast<std::uint8_t*>(data_) + offset; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Page-locked host memory: downloads of 4096-row batches at full PCIe speed.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes) : bytes_(bytes) { CUDA_CHECK(cudaMallocHost(&data_, bytes)); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (data_) CUDA_CHECK_NOTHROW(cudaFreeHost(data_));
  }
  void* get() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// A blocking stream by default: the legacy-stream cudaMemcpy uploads are ordered before it.
class Stream {
 public:
  explicit Stream(unsigned flags = cudaStreamDefault) { CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, flags)); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (stream_) CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream_));
  }
  operator cudaStream_t() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class Graph {
 public:
  Graph() = default;
  explicit Graph(cudaGraph_t g) : graph_(g) {}
  Graph(Graph&& o) noexcept : graph_(std::exchange(o.graph_, nullptr)) {}
  Graph& operator=(Graph&& o) noexcept {
    std::swap(graph_, o.graph_);
    return *this;
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph() {
    if (graph_) CUDA_CHECK_NOTHROW(cudaGraphDestroy(graph_));
  }
  cudaGraph_t get() const { return graph_; }

 private:
  cudaGraph_t graph_ = nullptr;
};

class GraphExec {
 public:
  explicit GraphExec(const Graph& g) {
    REQUIRE(g.get() != nullptr);
    CUDA_CHECK(cudaGraphInstantiate(&exec_, g.get(), 0));
  }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec() {
    if (exec_) CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec_));
  }
  cudaGraphExec_t get() const { return exec_; }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

// A stream capture that is ended (and what it captured destroyed) even when a check fails
// half-way, so that no later test finds its stream still capturing.
class Capture {
 public:
  Capture(cudaStream_t stream, cudaStreamCaptureMode mode) : stream_(stream) {
    CUDA_CHECK(cudaStreamBeginCapture(stream, mode));
    active_ = true;
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  cudaGraph_t end() {
    active_ = false;
    cudaGraph_t g = nullptr;
    CUDA_CHECK(cudaStreamEndCapture(stream_, &g));
    return g;
  }
  ~Capture() {
    if (!active_) return;
    // Only on a failure path: the capture may be invalidated, so its errors are expected here.
    cudaGraph_t g = nullptr;
    if (cudaStreamEndCapture(stream_, &g) == cudaSuccess && g) cudaGraphDestroy(g);
    cudaGetLastError();
  }

 private:
  cudaStream_t stream_;
  bool active_ = false;
};

inline std::size_t elements(std::int64_t rows) { return static_cast<std::size_t>(rows) * kH; }
inline std::size_t bytes16(std::int64_t rows) { return elements(rows) * 2; }
inline std::size_t bytes32(std::int64_t rows) { return elements(rows) * 4; }

template <class T>
inline DeviceBuffer upload(const T* host, std::size_t count) {
  DeviceBuffer d(count * sizeof(T));
  CUDA_CHECK(cudaMemcpy(d.get(), host, d.bytes(), cudaMemcpyHostToDevice));
  return d;
}

inline void poison(void* device, std::size_t bytes, cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(device, 0xFF, bytes, stream));
}

inline unsigned host_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

// ================================================================ bit comparisons

constexpr std::uint32_t bits_of(std::uint16_t v) { return v; }
inline std::uint32_t bits_of(float v) { return std::bit_cast<std::uint32_t>(v); }
template <class T>
constexpr std::uint32_t kPoison = sizeof(T) == 2 ? 0xFFFFu : 0xFFFFFFFFu;

inline std::string hex(std::uint32_t v, std::size_t bytes) {
  static const char digits[] = "0123456789ABCDEF";
  std::string s = "0x";
  for (int shift = static_cast<int>(bytes) * 8 - 4; shift >= 0; shift -= 4) s += digits[(v >> shift) & 0xFu];
  return s;
}

// Names a row of a data set in failure messages (the edge pattern it holds); may be empty.
using RowLabel = std::function<std::string(std::int64_t)>;

// After this many reported mismatches a further one ends its test case: a broken kernel
// fails every comparison, and the first reports say all there is to say.
inline int& mismatches_reported() {
  static int n = 0;
  return n;
}
constexpr int kMaxReported = 20;

inline void report_mismatch(const std::string& message) {
  if (++mismatches_reported() > kMaxReported) FAIL(std::string(message + " [more mismatches not reported]"));
  FAIL_CHECK(message);
}

// got and want: the same rows of kH elements, bit for bit. On a mismatch: the first differing
// row (in the batch and in the data set), column, both bit patterns, and how many differ.
template <class T>
inline void expect_bits(const std::string& context, const char* tensor, std::span<const T> got, std::span<const T> want,
                 const char* want_name, std::int64_t first_row = 0, const RowLabel& label = {}) {
  REQUIRE(got.size() == want.size());
  REQUIRE(!want.empty());  // nothing compared proves nothing
  REQUIRE(want.size() % kH == 0);
  std::size_t first = want.size(), differing = 0, poison_expected = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const std::uint32_t g = bits_of(got[i]), w = bits_of(want[i]);
    if (g != w && differing++ == 0) first = i;
    poison_expected += w == kPoison<T>;
  }
  if (poison_expected)
    report_mismatch(context + ": " + tensor + ": " + std::to_string(poison_expected) + " expected elements equal the poison " +
                    hex(kPoison<T>, sizeof(T)) + ", so a missing write could not show there");
  if (differing == 0) return;
  const auto row = static_cast<std::int64_t>(first / kH);
  const auto column = static_cast<std::int64_t>(first % kH);
  std::string where = "row " + std::to_string(row);
  if (first_row != 0 || label) {
    where += " (data row " + std::to_string(first_row + row);
    if (label) where += ", " + label(first_row + row);
    where += ")";
  }
  report_mismatch(context + ": '" + tensor + "' differs from " + want_name + " in " + std::to_string(differing) + " of " +
                  std::to_string(want.size()) + " elements; first at " + where + ", column " + std::to_string(column) +
                  ": got " + hex(bits_of(got[first]), sizeof(T)) + ", " + want_name + " " +
                  hex(bits_of(want[first]), sizeof(T)));
}

// A poisoned row nothing may write: by default the guard row past a batch.
template <class T>
inline void expect_untouched(const std::string& context, const char* tensor, std::span<const T> row,
                      const char* which = "past the batch (the guard row)") {
  REQUIRE(row.size() == static_cast<std::size_t>(kH));
  for (std::size_t c = 0; c < row.size(); ++c)
    if (bits_of(row[c]) != kPoison<T>) {
      report_mismatch(context + ": '" + tensor + "' was written " + which + ", column " + std::to_string(c) + ": " +
                      hex(bits_of(row[c]), sizeof(T)));
      return;
    }
}

// ================================================================ constants and operands

inline Constants stock(const char* file) {
  return read_constants(std::filesystem::path(BOUNDARY_SOURCE_DIR) / "fixtures" / "constants" / file);
}
inline Constants post_attention() { return stock("muse-spark-post-attention.json"); }
inline Constants post_ffn() { return stock("muse-spark-post-ffn.json"); }

struct NamedConstants {
  std::string name;
  Constants constants;
  bool stock = false;
};

inline NormConstants weighted(double eps, WeightDtype dtype, bool input_scale, bool fma, double gain = 1.0) {
  return {.eps = eps, .gain_center = gain, .weight_dtype = dtype, .input_scale = input_scale, .fma_squares = fma};
}
inline NormConstants unweighted(double eps, bool fma) { return {.eps = eps, .fma_squares = fma}; }

// The stock boundaries, then every weight dtype x post/pre input scale x fma squares (each norm
// sees fma on and off with and without an input scale; gain centres 1 and 0), then norms
// without weights.
inline std::vector<NamedConstants> realistic_constant_sets() {
  std::vector<NamedConstants> sets = {{"post-attention (stock)", post_attention(), true},
                                      {"post-ffn (stock)", post_ffn(), true}};
  for (WeightDtype dtype : {WeightDtype::bf16, WeightDtype::fp16, WeightDtype::fp32})
    for (bool post_scale : {false, true})
      for (bool pre_scale : {false, true})
        for (bool fma : {false, true}) {
          const Constants k{weighted(1e-8, dtype, post_scale, fma), weighted(1e-5, dtype, pre_scale, fma != pre_scale, fma ? 0.0 : 1.0)};
          sets.push_back({"derived", k});
        }
  sets.push_back({"no weights", {unweighted(1e-8, false), unweighted(1e-5, true)}});
  sets.push_back({"post FP16 input scale, pre without weight", {weighted(1e-8, WeightDtype::fp16, true, false), unweighted(1e-5, false)}});
  return sets;
}

// eps 0 makes all-zero and subnormal rows divide by zero (rsqrt of 0 or a subnormal is Inf).
inline std::vector<NamedConstants> edge_constant_sets() {
  return {{"post-attention (stock)", post_attention(), true},
          {"post-ffn (stock)", post_ffn(), true},
          {"eps 0: post FP16 input scale with fma, pre FP32 gain 0",
           {weighted(0.0, WeightDtype::fp16, true, true), weighted(0.0, WeightDtype::fp32, false, false, 0.0)}},
          {"eps 0: no post weight, pre BF16 input scale with fma",
           {unweighted(0.0, false), weighted(0.0, WeightDtype::bf16, true, true)}},
          {"eps 0: no weights, post fma", {unweighted(0.0, true), unweighted(0.0, false)}}};
}

// A stock boundary by its name; any other by its exact constants.
inline std::string describe(const NamedConstants& n) {
  return n.stock ? n.name : n.name + " " + constants_to_json(n.constants).dump();
}

inline Dtype device_dtype(WeightDtype d) {
  return d == WeightDtype::bf16 ? Dtype::bf16 : d == WeightDtype::fp16 ? Dtype::f16 : Dtype::f32;
}

// Operands on the host, as generate_inputs makes them: the emulator reads these, the GPU a copy.
struct HostOperands {
  std::vector<float> alpha, beta;
  std::vector<std::uint8_t> post_weight, pre_weight;  // in the norm's dtype; empty: no weight
};

constexpr std::uint64_t kOperandSeed = 7;

// The operands of an input file (alpha, beta, and the weights the constants give).
inline HostOperands operands_of(const st::File& f, const Constants& k) {
  HostOperands o;
  const float* a = f.tensors.at("alpha").data<float>();
  const float* b = f.tensors.at("beta").data<float>();
  o.alpha.assign(a, a + kH);
  o.beta.assign(b, b + kH);
  if (k.post.has_weight()) o.post_weight = f.tensors.at("post_weight").bytes;
  if (k.pre.has_weight()) o.pre_weight = f.tensors.at("pre_weight").bytes;
  return o;
}

inline HostOperands realistic_operands(const Constants& k) { return operands_of(generate_inputs(k, 1, kOperandSeed), k); }

// One boundary under test: the emulator, the fused kernel and the eager chain, built from the
// same constants and operands.
class Subject {
 public:
  Subject(const NamedConstants& named, HostOperands ops)
      : name(describe(named)),
        constants(named.constants),
        host(std::move(ops)),
        alpha(upload(host.alpha.data(), host.alpha.size())),
        beta(upload(host.beta.data(), host.beta.size())),
        post_weight(upload_weight(host.post_weight)),
        pre_weight(upload_weight(host.pre_weight)),
        operands(device_operands()),
        emulator(constants, host_operands()),
        fused(constants, operands),
        eager(constants, operands) {}

  const std::string name;
  const Constants constants;
  const HostOperands host;
  const DeviceBuffer alpha, beta, post_weight, pre_weight;
  const gpu::Operands operands;
  const ref::Boundary emulator;
  gpu::DraftBoundary fused;
  gpu::EagerChain eager;

 private:
  static DeviceBuffer upload_weight(const std::vector<std::uint8_t>& w) {
    return w.empty() ? DeviceBuffer() : upload(w.data(), w.size());
  }
  std::optional<TensorView> weight_view(const NormConstants& n, const DeviceBuffer& w) const {
    if (!n.has_weight()) return std::nullopt;
    return TensorView{w.get(), device_dtype(n.weight_dtype), {kH}};
  }
  gpu::Operands device_operands() const {
    return {TensorView{alpha.get(), Dtype::f32, {kH}}, TensorView{beta.get(), Dtype::f32, {kH}},
            weight_view(constants.post, post_weight), weight_view(constants.pre, pre_weight)};
  }
  ref::Operands host_operands() const {
    return {host.alpha.data(), host.beta.data(), host.post_weight.empty() ? nullptr : host.post_weight.data(),
            host.pre_weight.empty() ? nullptr : host.pre_weight.data()};
  }
};

// ================================================================ rows

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
  Expected e{rows, std::vector<std::uint16_t>(elements(rows)), std::vector<float>(elements(rows))};
  ref::Inputs in;
  in.m = rows;
  in.branch = h.branch.data() + elements(first);
  in.stream_dtype = sd;
  in.stream = sd == StreamDtype::f32 ? static_cast<const void*>(h.stream_f32.data() + elements(first))
                                     : h.stream_bf16.data() + elements(first);
  ref::Outputs o;
  o.out = e.out.data();
  o.new_stream = e.new_stream.data();
  s.emulator.run(in, o, host_threads());
  return e;
}

// ================================================================ launches

// Output buffers for up to `capacity` rows plus the guard row, and pinned staging to read them.
struct Bench {
  explicit Bench(std::int64_t rows)
      : capacity(rows),
        out(bytes16(rows + 1)),
        new_stream(bytes32(rows + 1)),
        staging_out(bytes16(rows + 1)),
        staging_new_stream(bytes32(rows + 1)) {}

  gpu::Outputs outputs(std::int64_t m, bool store) const {
    return {TensorView{out.get(), Dtype::bf16, {m, kH}}, TensorView{store ? new_stream.get() : nullptr, Dtype::f32, {m, kH}}};
  }
  // The m rows a launch writes and the guard row after them.
  void poison_rows(std::int64_t m) const {
    REQUIRE(m <= capacity);
    poison(out.get(), bytes16(m + 1), stream);
    poison(new_stream.get(), bytes32(m + 1), stream);
  }
  // Device rows -> pinned staging; the spans stay valid until the next fetch.
  std::span<const std::uint16_t> fetch_out(const void* device, std::int64_t rows) const {
    REQUIRE(bytes16(rows) <= staging_out.bytes());
    CUDA_CHECK(cudaMemcpyAsync(staging_out.get(), device, bytes16(rows), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    return {static_cast<const std::uint16_t*>(staging_out.get()), elements(rows)};
  }
  std::span<const float> fetch_new_stream(const void* device, std::int64_t rows) const {
    REQUIRE(bytes32(rows) <= staging_new_stream.bytes());
    CUDA_CHECK(cudaMemcpyAsync(staging_new_stream.get(), device, bytes32(rows), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    return {static_cast<const float*>(staging_new_stream.get()), elements(rows)};
  }

  const std::int64_t capacity;
  const Stream stream;
  const DeviceBuffer out, new_stream;
  const PinnedBuffer staging_out, staging_new_stream;
};

enum class Impl { fused, eager };

struct Launch {
  Impl impl = Impl::fused;
  bool store = true;
  std::optional<Variant> variant;  // fused only; nullopt: run() picks variant_for(m, ...)
};

inline std::string describe(const Variant& v) {
  return std::string("[stream ") + (v.stream == StreamDtype::f32 ? "F32" : "BF16") + (v.store_stream ? ", stored" : ", not stored") +
         (v.late_gates ? ", late gates" : ", early gates") + (v.pdl ? ", PDL" : ", no PDL") + ", " +
         gpu::layout_name(v.layout) + " layout]";
}

inline std::string describe(const Subject& s, const Launch& l, StreamDtype sd, std::int64_t m) {
  if (l.impl == Impl::eager)
    return std::string("eager chain [stream ") + (sd == StreamDtype::f32 ? "F32" : "BF16") +
           (l.store ? ", stored]" : ", not stored]");
  if (l.variant) return "fused, forced variant " + describe(*l.variant);
  return "fused, default variant " + describe(s.fused.variant_for(m, sd, l.store));
}

inline void run_launch(Subject& s, const Launch& l, const TensorView& branch, const TensorView& stream, const gpu::Outputs& out,
                cudaStream_t cuda_stream) {
  if (l.impl == Impl::eager) s.eager.run(branch, stream, out, cuda_stream);
  else s.fused.run(branch, stream, out, cuda_stream, l.variant);
}

// How much of the variant matrix one m gets.
enum class Coverage {
  full,  // the eager chain stored / not, the default variant stored / not, and all 32 forced variants
  some,  // the eager chain, the default variant stored / not, the late-gates choice and the layout flipped without PDL
  few,   // the eager chain, the default variant, one forced variant (flipped, not stored, no PDL, the other layout)
};

// A layout other than l, chosen so that each is forced where it is not the natural one: quad at
// small m, cta between, pair at large m.
inline gpu::Layout other_layout(gpu::Layout l) {
  switch (l) {
    case gpu::Layout::cluster: return gpu::Layout::quad;
    case gpu::Layout::pair: return gpu::Layout::cta;
    case gpu::Layout::cta: return gpu::Layout::pair;
    case gpu::Layout::quad: return gpu::Layout::cluster;
  }
  return gpu::Layout::cta;
}

inline std::vector<Launch> launches(Coverage c, const gpu::BoundaryBase& b, std::int64_t m, StreamDtype sd) {
  const Variant natural = b.variant_for(m, sd, true);
  const bool late = natural.late_gates;
  const gpu::Layout other = other_layout(natural.layout);
  std::vector<Launch> l = {{Impl::eager, true, std::nullopt}, {Impl::fused, true, std::nullopt}};
  if (c == Coverage::few) {
    l.push_back({Impl::fused, false, Variant{sd, false, !late, false, other}});
    return l;
  }
  l.push_back({Impl::fused, false, std::nullopt});
  if (c == Coverage::some) {
    l.push_back({Impl::fused, true, Variant{sd, true, !late, false, other}});
    return l;
  }
  l.push_back({Impl::eager, false, std::nullopt});
  for (gpu::Layout layout : gpu::kAllLayouts)
    for (bool store : {true, false})
      for (bool late_gates : {false, true})
        for (bool pdl : {false, true}) l.push_back({Impl::fused, store, Variant{sd, store, late_gates, pdl, layout}});
  return l;
}

struct Step {
  std::int64_t m;
  std::int64_t first;  // the data row the batch starts at
  Coverage coverage;
};

// The m: 1, 2, the three around the SM count (131, 132, 133 on the 132-SM H200: the
// late-gates switch), 1000 and 4096 (more rows than one wave of CTAs); the full matrix on the
// smallest and on the first late-gates m.
inline std::vector<Step> standard_steps(int sm, std::int64_t max_m, std::int64_t first_for_1000) {
  std::set<std::int64_t> ms = {1, 2, 131, 132, 133, sm - 1, sm, sm + 1, 1000, kRows};
  std::vector<Step> steps;
  for (std::int64_t m : ms) {
    if (m < 1 || m > max_m) continue;
    const Coverage c = m <= 2 || m == 133 || m == sm + 1 ? Coverage::full : m >= kRows ? Coverage::few : Coverage::some;
    steps.push_back({m, m == 1000 ? first_for_1000 : 0, c});
  }
  return steps;
}

inline std::int64_t rows_needed(const std::vector<Step>& steps) {
  std::int64_t n = 0;
  for (const Step& s : steps) n = std::max(n, s.first + s.m);
  return n;
}

// One launch of m rows from data row `first`: poisoned outputs, then every element of out (and
// new_stream when stored) against the emulator, and the guard row untouched.
inline void check_launch(Subject& s, const DeviceRows& rows, const RowLabel& label, const Expected& want, StreamDtype sd,
                  const Step& step, const Launch& l, const Bench& bench, const std::string& data_name) {
  const std::int64_t m = step.m;
  const std::string context = s.name + " | " + data_name + " | m = " + std::to_string(m) + " from row " +
                              std::to_string(step.first) + " | " + describe(s, l, sd, m);
  bench.poison_rows(m);
  run_launch(s, l, rows.branch_view(step.first, m), rows.stream_view(sd, step.first, m), bench.outputs(m, l.store),
             bench.stream);
  CUDA_CHECK(cudaStreamSynchronize(bench.stream));
  const auto out = bench.fetch_out(bench.out.get(), m + 1);
  expect_bits(context, "out", out.first(elements(m)), want.out_rows(step.first, m), "the emulator", step.first, label);
  expect_untouched(context, "out", out.subspan(elements(m)));
  if (!l.store) return;
  const auto ns = bench.fetch_new_stream(bench.new_stream.get(), m + 1);
  expect_bits(context, "new_stream", ns.first(elements(m)), want.new_stream_rows(step.first, m), "the emulator", step.first,
              label);
  expect_untouched(context, "new_stream", ns.subspan(elements(m)));
}

inline void check_steps(Subject& s, const HostRows& host, const DeviceRows& rows, const std::vector<Step>& steps,
                 const Bench& bench, const std::string& data_name) {
  for (StreamDtype sd : {StreamDtype::f32, StreamDtype::bf16}) {
    const Expected want = emulate(s, host, sd, rows_needed(steps));
    for (const Step& step : steps) {
      // The switch the issue names: late gates exactly above the SM count.
      CHECK(s.fused.variant_for(step.m, sd, true).late_gates == (step.m > s.fused.sm_count()));
      for (const Launch& l : launches(step.coverage, s.fused, step.m, sd))
        check_launch(s, rows, host.label, want, sd, step, l, bench, data_name);
    }
  }
}

}  // namespace gpu_test
