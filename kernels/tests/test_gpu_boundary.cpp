// The GPU tests (ctest label gpu). Contract sections 5, 6 and 8: the fused DraftBoundary kernel,
// the eager chain and the CPU emulator give the same bits, every element of `out` and
// `new_stream`, for both stock boundaries and every weight dtype / input-scale / fma-squares
// variant, realistic and edge rows, every m around the late-gates switch and every Variant;
// batch invariance; a PDL producer -> boundary -> consumer chain; 1,000 CUDA graph replays;
// and the host API's refusals.
//
// Every launch writes into buffers poisoned with 0xFF bytes: no correct result has those bits
// (a NaN result is the canonical 0x7FFF / 0x7FFFFFFF), so an element a kernel did not write
// cannot pass. One guard row past every batch must stay poisoned.
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

using namespace boundary;
namespace st = boundary::safetensors;
using gpu::Dtype;
using gpu::TensorView;
using gpu::Variant;

namespace {

// ================================================================ CUDA calls

std::string cuda_failure(const char* call, cudaError_t e) {
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

std::size_t elements(std::int64_t rows) { return static_cast<std::size_t>(rows) * kH; }
std::size_t bytes16(std::int64_t rows) { return elements(rows) * 2; }
std::size_t bytes32(std::int64_t rows) { return elements(rows) * 4; }

template <class T>
DeviceBuffer upload(const T* host, std::size_t count) {
  DeviceBuffer d(count * sizeof(T));
  CUDA_CHECK(cudaMemcpy(d.get(), host, d.bytes(), cudaMemcpyHostToDevice));
  return d;
}

void poison(void* device, std::size_t bytes, cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(device, 0xFF, bytes, stream));
}

unsigned host_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

// ================================================================ bit comparisons

constexpr std::uint32_t bits_of(std::uint16_t v) { return v; }
inline std::uint32_t bits_of(float v) { return std::bit_cast<std::uint32_t>(v); }
template <class T>
constexpr std::uint32_t kPoison = sizeof(T) == 2 ? 0xFFFFu : 0xFFFFFFFFu;

std::string hex(std::uint32_t v, std::size_t bytes) {
  static const char digits[] = "0123456789ABCDEF";
  std::string s = "0x";
  for (int shift = static_cast<int>(bytes) * 8 - 4; shift >= 0; shift -= 4) s += digits[(v >> shift) & 0xFu];
  return s;
}

// Names a row of a data set in failure messages (the edge pattern it holds); may be empty.
using RowLabel = std::function<std::string(std::int64_t)>;

// After this many reported mismatches a further one ends its test case: a broken kernel
// fails every comparison, and the first reports say all there is to say.
int& mismatches_reported() {
  static int n = 0;
  return n;
}
constexpr int kMaxReported = 20;

void report_mismatch(const std::string& message) {
  if (++mismatches_reported() > kMaxReported) FAIL(std::string(message + " [more mismatches not reported]"));
  FAIL_CHECK(message);
}

// got and want: the same rows of kH elements, bit for bit. On a mismatch: the first differing
// row (in the batch and in the data set), column, both bit patterns, and how many differ.
template <class T>
void expect_bits(const std::string& context, const char* tensor, std::span<const T> got, std::span<const T> want,
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
void expect_untouched(const std::string& context, const char* tensor, std::span<const T> row,
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

Constants stock(const char* file) {
  return read_constants(std::filesystem::path(BOUNDARY_SOURCE_DIR) / "fixtures" / "constants" / file);
}
Constants post_attention() { return stock("muse-spark-post-attention.json"); }
Constants post_ffn() { return stock("muse-spark-post-ffn.json"); }

struct NamedConstants {
  std::string name;
  Constants constants;
  bool stock = false;
};

NormConstants weighted(double eps, WeightDtype dtype, bool input_scale, bool fma, double gain = 1.0) {
  return {eps, gain, input_scale, dtype, fma};
}
NormConstants unweighted(double eps, bool fma) { return {eps, std::nullopt, false, WeightDtype::bf16, fma}; }

// The stock boundaries, then every weight dtype x post/pre input scale x fma squares (each norm
// sees fma on and off with and without an input scale; gain centres 1 and 0), then norms
// without weights.
std::vector<NamedConstants> realistic_constant_sets() {
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
std::vector<NamedConstants> edge_constant_sets() {
  return {{"post-attention (stock)", post_attention(), true},
          {"post-ffn (stock)", post_ffn(), true},
          {"eps 0: post FP16 input scale with fma, pre FP32 gain 0",
           {weighted(0.0, WeightDtype::fp16, true, true), weighted(0.0, WeightDtype::fp32, false, false, 0.0)}},
          {"eps 0: no post weight, pre BF16 input scale with fma",
           {unweighted(0.0, false), weighted(0.0, WeightDtype::bf16, true, true)}},
          {"eps 0: no weights, post fma", {unweighted(0.0, true), unweighted(0.0, false)}}};
}

// A stock boundary by its name; any other by its exact constants.
std::string describe(const NamedConstants& n) {
  return n.stock ? n.name : n.name + " " + constants_to_json(n.constants).dump();
}

Dtype device_dtype(WeightDtype d) {
  return d == WeightDtype::bf16 ? Dtype::bf16 : d == WeightDtype::fp16 ? Dtype::f16 : Dtype::f32;
}

// Operands on the host, as generate_inputs makes them: the emulator reads these, the GPU a copy.
struct HostOperands {
  std::vector<float> alpha, beta;
  std::vector<std::uint8_t> post_weight, pre_weight;  // in the norm's dtype; empty: no weight
};

constexpr std::uint64_t kOperandSeed = 7;

HostOperands realistic_operands(const Constants& k) {
  const st::File f = generate_inputs(k, 1, kOperandSeed);
  HostOperands o;
  const float* a = f.tensors.at("alpha").data<float>();
  const float* b = f.tensors.at("beta").data<float>();
  o.alpha.assign(a, a + kH);
  o.beta.assign(b, b + kH);
  if (k.post.has_weight()) o.post_weight = f.tensors.at("post_weight").bytes;
  if (k.pre.has_weight()) o.pre_weight = f.tensors.at("pre_weight").bytes;
  return o;
}

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

// generate_inputs is single-threaded (about 2 s for 4096 rows): made once per process.
const HostRows& realistic_rows() {
  static const HostRows rows = [] {
    const st::File f = generate_inputs(post_ffn(), kRows, kRowSeed, StreamDtype::f32);
    HostRows r;
    r.n = kRows;
    const auto* b = f.tensors.at("branch").data<std::uint16_t>();
    const auto* s = f.tensors.at("stream").data<float>();
    r.branch.assign(b, b + elements(kRows));
    r.stream_f32.assign(s, s + elements(kRows));
    r.stream_bf16.resize(r.stream_f32.size());
    std::transform(r.stream_f32.begin(), r.stream_f32.end(), r.stream_bf16.begin(), ref::f32_to_bf16_rn);
    return r;
  }();
  return rows;
}

// Rows [first, first + n) of h as a data set of their own.
HostRows slice(const HostRows& h, std::int64_t first, std::int64_t n) {
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
const std::span<const EdgePattern> kEdgePatterns = edge_patterns();
const std::int64_t kEdgeKinds = static_cast<std::int64_t>(kEdgePatterns.size());

// The first row holding the pattern whose name starts with `prefix`.
std::int64_t edge_row(std::string_view prefix) {
  for (std::int64_t i = 0; i < kEdgeKinds; ++i)
    if (std::string_view(kEdgePatterns[i].name).starts_with(prefix)) return i;
  FAIL("no edge pattern named " << std::string(prefix));
  return -1;
}

std::string edge_label(std::int64_t row) {
  return std::string("edge pattern '") + kEdgePatterns[row % kEdgeKinds].name + "'";
}

// Row r holds pattern r % kEdgeKinds over realistic row r: every batch of m >= kEdgeKinds rows
// has every pattern, each tile on other realistic values.
const HostRows& edge_rows() {
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
const char* gates_name(Gates g) {
  return g == Gates::realistic ? "realistic gates"
         : g == Gates::small_extremes ? "gates 0, -0, subnormal, negative in every 4th column"
                                      : "gates huge, Inf, NaN in every 64th column";
}

void set_bits(float& f, std::uint32_t pattern) { std::memcpy(&f, &pattern, sizeof pattern); }

void apply_gates(HostOperands& ops, Gates g) {
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

Expected emulate(const Subject& s, const HostRows& h, StreamDtype sd, std::int64_t rows, std::int64_t first = 0) {
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

std::string describe(const Variant& v) {
  return std::string("[stream ") + (v.stream == StreamDtype::f32 ? "F32" : "BF16") + (v.store_stream ? ", stored" : ", not stored") +
         (v.late_gates ? ", late gates" : ", early gates") + (v.pdl ? ", PDL" : ", no PDL") + "]";
}

std::string describe(const Subject& s, const Launch& l, StreamDtype sd, std::int64_t m) {
  if (l.impl == Impl::eager)
    return std::string("eager chain [stream ") + (sd == StreamDtype::f32 ? "F32" : "BF16") +
           (l.store ? ", stored]" : ", not stored]");
  if (l.variant) return "fused, forced variant " + describe(*l.variant);
  return "fused, default variant " + describe(s.fused.variant_for(m, sd, l.store));
}

void run_launch(Subject& s, const Launch& l, const TensorView& branch, const TensorView& stream, const gpu::Outputs& out,
                cudaStream_t cuda_stream) {
  if (l.impl == Impl::eager) s.eager.run(branch, stream, out, cuda_stream);
  else s.fused.run(branch, stream, out, cuda_stream, l.variant);
}

// How much of the variant matrix one m gets.
enum class Coverage {
  full,  // the eager chain stored / not, the default variant stored / not, and all 8 forced variants
  some,  // the eager chain, the default variant stored / not, the late-gates choice flipped without PDL
  few,   // the eager chain, the default variant, one forced variant (flipped, not stored, no PDL)
};

std::vector<Launch> launches(Coverage c, const gpu::BoundaryBase& b, std::int64_t m, StreamDtype sd) {
  const bool late = b.variant_for(m, sd, true).late_gates;
  std::vector<Launch> l = {{Impl::eager, true, std::nullopt}, {Impl::fused, true, std::nullopt}};
  if (c == Coverage::few) {
    l.push_back({Impl::fused, false, Variant{sd, false, !late, false}});
    return l;
  }
  l.push_back({Impl::fused, false, std::nullopt});
  if (c == Coverage::some) {
    l.push_back({Impl::fused, true, Variant{sd, true, !late, false}});
    return l;
  }
  l.push_back({Impl::eager, false, std::nullopt});
  for (bool store : {true, false})
    for (bool late_gates : {false, true})
      for (bool pdl : {false, true}) l.push_back({Impl::fused, store, Variant{sd, store, late_gates, pdl}});
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
std::vector<Step> standard_steps(int sm, std::int64_t max_m, std::int64_t first_for_1000) {
  std::set<std::int64_t> ms = {1, 2, 131, 132, 133, sm - 1, sm, sm + 1, 1000, kRows};
  std::vector<Step> steps;
  for (std::int64_t m : ms) {
    if (m < 1 || m > max_m) continue;
    const Coverage c = m <= 2 || m == 133 || m == sm + 1 ? Coverage::full : m >= kRows ? Coverage::few : Coverage::some;
    steps.push_back({m, m == 1000 ? first_for_1000 : 0, c});
  }
  return steps;
}

std::int64_t rows_needed(const std::vector<Step>& steps) {
  std::int64_t n = 0;
  for (const Step& s : steps) n = std::max(n, s.first + s.m);
  return n;
}

// One launch of m rows from data row `first`: poisoned outputs, then every element of out (and
// new_stream when stored) against the emulator, and the guard row untouched.
void check_launch(Subject& s, const DeviceRows& rows, const RowLabel& label, const Expected& want, StreamDtype sd,
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

void check_steps(Subject& s, const HostRows& host, const DeviceRows& rows, const std::vector<Step>& steps,
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

}  // namespace

// ================================================================ fused == eager == emulator

TEST_CASE("realistic rows: fused == eager chain == emulator, every constants set, stream dtype, m and variant") {
  const HostRows& host = realistic_rows();
  const DeviceRows rows(host);
  const Bench bench(kRows);
  for (const NamedConstants& k : realistic_constant_sets()) {
    Subject s(k, realistic_operands(k.constants));
    // m = 4096 for the stock boundaries only: more rows exercise scheduling, not arithmetic.
    std::vector<Step> steps = standard_steps(s.fused.sm_count(), k.stock ? kRows : 1000, 96);
    steps.push_back({1, 777, Coverage::full});
    check_steps(s, host, rows, steps, bench, "realistic rows");
  }
}

TEST_CASE("edge rows: NaN, Inf, -0.0, subnormals, overflowing sums, zero rows with eps 0, extreme gates") {
  const HostRows& host = edge_rows();
  const DeviceRows rows(host);
  const Bench bench(kRows);
  for (const NamedConstants& k : edge_constant_sets())
    for (Gates g : {Gates::realistic, Gates::small_extremes, Gates::huge_extremes}) {
      HostOperands ops = realistic_operands(k.constants);
      apply_gates(ops, g);
      Subject s(k, std::move(ops));
      const bool big = g == Gates::realistic && k.stock;
      std::vector<Step> steps;
      // Every pattern alone, through the whole variant matrix; then pairs across the wrap.
      for (std::int64_t r = 0; r < kEdgeKinds; ++r) steps.push_back({1, r, Coverage::full});
      steps.push_back({2, kEdgeKinds - 1, Coverage::full});
      for (const Step& step : standard_steps(s.fused.sm_count(), big ? kRows : 1000, 0))
        if (step.m > 1) steps.push_back(step);
      check_steps(s, host, rows, steps, bench, std::string("edge rows, ") + gates_name(g));
    }
}

namespace {

// One row through the emulator, intermediates included.
struct EmulatedRow {
  float s1 = 0, r1 = 0, s2 = 0, r2 = 0;
  std::vector<std::uint16_t> out = std::vector<std::uint16_t>(kH);
  std::vector<float> new_stream = std::vector<float>(kH);
};

EmulatedRow emulate_row(const Constants& k, const HostOperands& ops, const HostRows& h, std::int64_t row) {
  const ref::Boundary b(k, {ops.alpha.data(), ops.beta.data(), ops.post_weight.empty() ? nullptr : ops.post_weight.data(),
                            ops.pre_weight.empty() ? nullptr : ops.pre_weight.data()});
  EmulatedRow e;
  ref::Inputs in;
  in.m = 1;
  in.branch = h.branch.data() + elements(row);
  in.stream = h.stream_f32.data() + elements(row);
  ref::Outputs o;
  o.out = e.out.data();
  o.new_stream = e.new_stream.data();
  o.post_row_sum = &e.s1;
  o.r1 = &e.r1;
  o.pre_row_sum = &e.s2;
  o.r2 = &e.r2;
  b.run(in, o);
  return e;
}

bool all_of_bits(const std::vector<std::uint16_t>& v, std::uint16_t pattern) {
  return std::all_of(v.begin(), v.end(), [&](std::uint16_t x) { return x == pattern; });
}

}  // namespace

// The edge rows are worth as much as the regimes they reach: checked on the emulator's
// intermediates, so that a pattern that silently stopped overflowing (say) is caught.
TEST_CASE("edge rows reach the regimes they are named for (emulator intermediates)") {
  const HostRows& edges = edge_rows();
  const Constants ffn = post_ffn();
  const HostOperands ops = realistic_operands(ffn);
  const auto row = [&](const char* name) { return emulate_row(ffn, ops, edges, edge_row(name)); };
  constexpr std::uint32_t kInf = 0x7F800000u, kNan = 0x7FFFFFFFu;

  const EmulatedRow nan_branch = row("branch: one negative NaN");
  CHECK(bits_of(nan_branch.s1) == kNan);
  CHECK(all_of_bits(nan_branch.out, 0x7FFF));
  CHECK(bits_of(row("branch +-2^63").s1) == kInf);
  CHECK(bits_of(row("branch +-2^63").r1) == 0u);
  CHECK(bits_of(row("branch +-2^70").s1) == kInf);
  CHECK(bits_of(row("branch all at the BF16 maximum").s1) == kInf);
  CHECK(bits_of(row("stream +-2^63").s2) == kInf);
  const EmulatedRow stream_nan = row("stream: one signalling NaN");
  CHECK(bits_of(stream_nan.new_stream[123]) == kNan);
  CHECK(bits_of(stream_nan.new_stream[124]) != kNan);  // one element, not the row
  CHECK(all_of_bits(stream_nan.out, 0x7FFF));
  const EmulatedRow stream_inf = row("stream: +Inf and -Inf");
  CHECK(bits_of(stream_inf.s2) == kInf);
  CHECK(bits_of(stream_inf.r2) == 0u);
  const EmulatedRow wide = row("wide dynamic range");
  CHECK(std::isfinite(wide.s1));
  CHECK(wide.s1 > 0.0f);
  CHECK(std::isfinite(wide.s2));
  const EmulatedRow subnormal_stream = row("stream all FP32 subnormals");
  CHECK(std::any_of(subnormal_stream.new_stream.begin(), subnormal_stream.new_stream.end(),
                    [](float x) { return std::fpclassify(x) == FP_SUBNORMAL; }));
  const EmulatedRow negative_zero = row("branch and stream all -0.0");
  CHECK(bits_of(negative_zero.new_stream[0]) == 0x80000000u);  // a -0 result, not only -0 inputs

  // Squares of about 2^-140 are FP32 subnormals: an fma keeps bits a rounded product drops.
  Constants fma = ffn;
  fma.post.fma_squares = !ffn.post.fma_squares;
  const EmulatedRow tiny = row("around 2^-70");
  const EmulatedRow tiny_fma = emulate_row(fma, ops, edges, edge_row("around 2^-70"));
  CHECK(tiny.s1 != 0.0f);
  CHECK(bits_of(tiny.s1) != bits_of(tiny_fma.s1));

  // eps 0: an all-zero row is 0 * rsqrt(0) = 0 * Inf = NaN everywhere; BF16 subnormal squares
  // underflow to a zero row sum, whose rsqrt is Inf.
  const Constants eps0{unweighted(0.0, false), unweighted(0.0, false)};
  const HostOperands plain = realistic_operands(eps0);
  const EmulatedRow zero = emulate_row(eps0, plain, edges, edge_row("branch and stream all +0.0"));
  CHECK(bits_of(zero.r1) == kInf);
  CHECK(all_of_bits(zero.out, 0x7FFF));
  const EmulatedRow subnormal_branch = emulate_row(eps0, plain, edges, edge_row("branch all BF16 subnormals"));
  CHECK(bits_of(subnormal_branch.s1) == 0u);
  CHECK(bits_of(subnormal_branch.r1) == kInf);

  // Huge gates overflow the connection in their columns of an ordinary row.
  HostOperands huge = ops;
  apply_gates(huge, Gates::huge_extremes);
  const EmulatedRow gated = emulate_row(ffn, huge, edges, edge_row("realistic"));
  CHECK(std::any_of(gated.new_stream.begin(), gated.new_stream.end(), [](float x) { return std::isinf(x); }));
  CHECK(bits_of(gated.new_stream[0]) != kNan);
}

// ================================================================ what never changes bits

TEST_CASE("batch invariance: a row gives the same bits at any position in batches of any m") {
  const HostRows& host = realistic_rows();
  const HostRows& edges = edge_rows();
  const DeviceRows rows(host);
  const Bench bench(kRows);
  // A realistic row and edge rows whose bits depend most on the summation order.
  const std::int64_t edge_probes[] = {edge_row("wide dynamic range"), edge_row("around 2^-70"),
                                      edge_row("stream: one signalling NaN"), edge_row("subnormals sprinkled")};
  const NamedConstants sets[] = {{"post-ffn (stock)", post_ffn(), true},
                                 {"FP16 input scales with fma",
                                  {weighted(1e-8, WeightDtype::fp16, true, true), weighted(1e-5, WeightDtype::fp16, true, true)}}};
  for (const NamedConstants& k : sets) {
    Subject s(k, realistic_operands(k.constants));
    const int sm = s.fused.sm_count();
    for (StreamDtype sd : {StreamDtype::f32, StreamDtype::bf16}) {
      std::vector<std::pair<const HostRows*, std::int64_t>> probes = {{&host, 4000}};
      for (std::int64_t e : edge_probes) probes.push_back({&edges, e});
      for (const auto& [source, probe_row] : probes) {
        const std::string probe = source == &host ? "realistic row " + std::to_string(probe_row) : edge_label(probe_row);
        const Expected want = emulate(s, *source, sd, 1, probe_row);
        // The probe alone (m = 1 at row 0 of its own buffer): the GPU bits every placement must repeat.
        const DeviceRows alone_rows(slice(*source, probe_row, 1));
        bench.poison_rows(1);
        s.fused.run(alone_rows.branch_view(0, 1), alone_rows.stream_view(sd, 0, 1), bench.outputs(1, true), bench.stream);
        CUDA_CHECK(cudaStreamSynchronize(bench.stream));
        const std::string alone_context = s.name + " | " + probe + " alone";
        const std::vector<std::uint16_t> alone_out = [&] {
          const auto o = bench.fetch_out(bench.out.get(), 1);
          return std::vector<std::uint16_t>(o.begin(), o.end());
        }();
        const std::vector<float> alone_ns = [&] {
          const auto o = bench.fetch_new_stream(bench.new_stream.get(), 1);
          return std::vector<float>(o.begin(), o.end());
        }();
        expect_bits<std::uint16_t>(alone_context, "out", alone_out, want.out_rows(0, 1), "the emulator");
        expect_bits<float>(alone_context, "new_stream", alone_ns, want.new_stream_rows(0, 1), "the emulator");

        for (std::int64_t m : {std::int64_t{2}, std::int64_t{7}, std::int64_t{sm - 1}, std::int64_t{sm}, std::int64_t{sm + 1},
                               std::int64_t{1000}, kRows}) {
          const std::int64_t first = m + 17 <= kRows ? 17 : 0;
          for (std::int64_t position : std::set<std::int64_t>{0, m / 2, m - 1}) {
            rows.write_row(first + position, *source, probe_row);
            const bool late = s.fused.variant_for(m, sd, true).late_gates;
            for (const Launch& l : {Launch{Impl::fused, true, std::nullopt}, Launch{Impl::fused, true, Variant{sd, true, !late, false}},
                                    Launch{Impl::eager, true, std::nullopt}}) {
              const std::string context = s.name + " | " + probe + " at position " + std::to_string(position) + " of m = " +
                                          std::to_string(m) + " | " + describe(s, l, sd, m);
              bench.poison_rows(m);
              run_launch(s, l, rows.branch_view(first, m), rows.stream_view(sd, first, m), bench.outputs(m, true), bench.stream);
              CUDA_CHECK(cudaStreamSynchronize(bench.stream));
              const auto out = bench.fetch_out(bench.out.at(bytes16(position)), 1);
              expect_bits<std::uint16_t>(context, "out", out, alone_out, "the probe alone");
              expect_bits<std::uint16_t>(context, "out", out, want.out_rows(0, 1), "the emulator");
              const auto ns = bench.fetch_new_stream(bench.new_stream.at(bytes32(position)), 1);
              expect_bits<float>(context, "new_stream", ns, alone_ns, "the probe alone");
              expect_bits<float>(context, "new_stream", ns, want.new_stream_rows(0, 1), "the emulator");
            }
            rows.write_row(first + position, host, first + position);  // the realistic row back
          }
        }
      }
    }
  }
}

TEST_CASE("section 8: a BF16 stream and an F32 stream holding the same values give the same bits") {
  const HostRows& host = realistic_rows();
  constexpr std::int64_t n = 1000;
  HostRows same = slice(host, 0, n);  // then stream_f32 holds exactly the values of stream_bf16
  std::transform(same.stream_bf16.begin(), same.stream_bf16.end(), same.stream_f32.begin(), ref::bf16_to_f32);
  const DeviceRows rows(same);
  const Bench bench(n);
  for (const NamedConstants& k : {NamedConstants{"post-attention (stock)", post_attention(), true},
                                  NamedConstants{"post-ffn (stock)", post_ffn(), true}}) {
    Subject s(k, realistic_operands(k.constants));
    const Expected want = emulate(s, same, StreamDtype::bf16, n);
    for (std::int64_t m : {std::int64_t{133}, n})
      for (Impl impl : {Impl::fused, Impl::eager}) {
        const Launch l{impl, true, std::nullopt};
        std::vector<std::uint16_t> out_bf16;
        std::vector<float> ns_bf16;
        for (StreamDtype sd : {StreamDtype::bf16, StreamDtype::f32}) {
          const std::string context = s.name + " | m = " + std::to_string(m) + " | " + describe(s, l, sd, m);
          bench.poison_rows(m);
          run_launch(s, l, rows.branch_view(0, m), rows.stream_view(sd, 0, m), bench.outputs(m, true), bench.stream);
          CUDA_CHECK(cudaStreamSynchronize(bench.stream));
          const auto out = bench.fetch_out(bench.out.get(), m);
          expect_bits(context, "out", out, want.out_rows(0, m), "the emulator (BF16 stream)");
          if (sd == StreamDtype::bf16) out_bf16.assign(out.begin(), out.end());
          else expect_bits<std::uint16_t>(context, "out", out, out_bf16, "the BF16-stream launch");
          const auto ns = bench.fetch_new_stream(bench.new_stream.get(), m);
          expect_bits(context, "new_stream", ns, want.new_stream_rows(0, m), "the emulator (BF16 stream)");
          if (sd == StreamDtype::bf16) ns_bf16.assign(ns.begin(), ns.end());
          else expect_bits<float>(context, "new_stream", ns, ns_bf16, "the BF16-stream launch");
        }
      }
  }
}

// ================================================================ PDL and graphs

TEST_CASE("PDL chain: producer -> boundary (PDL) -> consumer (PDL, griddepcontrol.wait), fresh rows every step") {
  const HostRows& host = realistic_rows();
  const DeviceRows rows(host);
  const NamedConstants k{"post-ffn (stock)", post_ffn(), true};
  Subject s(k, realistic_operands(k.constants));
  const int sm = s.fused.sm_count();
  const Expected want_f32 = emulate(s, host, StreamDtype::f32, kRows);
  const Expected want_bf16 = emulate(s, host, StreamDtype::bf16, kRows);
  const Stream stream;
  constexpr unsigned kProducerDelayNs = 20000;  // long enough for the boundary's CTAs to be resident
  struct Chain {
    std::int64_t m;
    int steps;
    StreamDtype sd;
    bool store;
  };
  const Chain chains[] = {{1, 8, StreamDtype::f32, true},
                          {sm, 6, StreamDtype::f32, true},
                          {sm + 1, 6, StreamDtype::f32, true},
                          {sm + 1, 6, StreamDtype::bf16, false},
                          {1000, 4, StreamDtype::f32, true}};
  for (const Chain& c : chains) {
    REQUIRE(c.m * c.steps <= kRows);  // every step reads rows no other step reads
    const Expected& want = c.sd == StreamDtype::f32 ? want_f32 : want_bf16;
    const Variant natural = s.fused.variant_for(c.m, c.sd, c.store, /*pdl=*/true);
    REQUIRE(natural.pdl);
    for (const Variant& v : {natural, Variant{c.sd, c.store, !natural.late_gates, true}}) {
      const std::string context = s.name + " | PDL chain, m = " + std::to_string(c.m) + " | " + describe(v);
      const DeviceBuffer branch(bytes16(c.m)), out(bytes16(c.m)), ns(bytes32(c.m));
      const DeviceBuffer result_out(bytes16(c.m * c.steps)), result_ns(bytes32(c.m * c.steps));
      // Before step 0 the branch holds poison too: a boundary that ran before the producer reads NaN rows.
      for (const DeviceBuffer* b : {&branch, &result_out, &result_ns}) poison(b->get(), b->bytes(), stream);
      const gpu::Outputs outputs{TensorView{out.get(), Dtype::bf16, {c.m, kH}},
                                 TensorView{c.store ? ns.get() : nullptr, Dtype::f32, {c.m, kH}}};
      const TensorView branch_view{branch.get(), Dtype::bf16, {c.m, kH}};
      for (int step = 0; step < c.steps; ++step) {
        const std::int64_t first = c.m * step;
        poison(out.get(), out.bytes(), stream);
        poison(ns.get(), ns.bytes(), stream);
        CUDA_CHECK(gpu::test::launch_producer(rows.branch.at(bytes16(first)), branch.get(), bytes16(c.m), kProducerDelayNs, stream));
        s.fused.launch(branch_view, rows.stream_view(c.sd, first, c.m), outputs, stream, v);
        CUDA_CHECK(gpu::test::launch_consumer(out.get(), result_out.at(bytes16(first)), bytes16(c.m), c.store ? ns.get() : nullptr,
                                         c.store ? result_ns.at(bytes32(first)) : nullptr, c.store ? bytes32(c.m) : 0, stream));
      }
      CUDA_CHECK(cudaStreamSynchronize(stream));
      const std::int64_t total = c.m * c.steps;
      std::vector<std::uint16_t> got_out(elements(total));
      CUDA_CHECK(cudaMemcpy(got_out.data(), result_out.get(), result_out.bytes(), cudaMemcpyDeviceToHost));
      expect_bits<std::uint16_t>(context, "out (consumer's copy)", got_out, want.out_rows(0, total), "the emulator");
      if (!c.store) continue;
      std::vector<float> got_ns(elements(total));
      CUDA_CHECK(cudaMemcpy(got_ns.data(), result_ns.get(), result_ns.bytes(), cudaMemcpyDeviceToHost));
      expect_bits<float>(context, "new_stream (consumer's copy)", got_ns, want.new_stream_rows(0, total), "the emulator");
    }
  }
}

TEST_CASE("CUDA graph: 1,000 replays of the captured fused boundary, each sampled replay bitwise equal to the emulator") {
  const HostRows& host = realistic_rows();
  const DeviceRows rows(host);
  const NamedConstants k{"post-ffn (stock)", post_ffn(), true};
  Subject s(k, realistic_operands(k.constants));
  const int sm = s.fused.sm_count();
  const Bench bench(1000);
  constexpr int kReplays = 1000;
  // Replays 0, 1, 2, every 53rd, and the last three: each alternating input set seen early and late.
  std::vector<int> samples = {0, 1, 2};
  for (int i = 53; i < kReplays - 3; i += 53) samples.push_back(i);
  for (int i = kReplays - 3; i < kReplays; ++i) samples.push_back(i);
  struct Config {
    std::int64_t m;
    StreamDtype sd;
    bool store;
  };
  for (const Config& c : {Config{2, StreamDtype::f32, true}, Config{sm + 1, StreamDtype::bf16, false},
                          Config{1000, StreamDtype::f32, true}}) {
    const Expected want = emulate(s, host, c.sd, 2 * c.m);  // input set A: rows [0, m); B: rows [m, 2m)
    const Variant v = s.fused.variant_for(c.m, c.sd, c.store);
    const std::string context = s.name + " | graph, m = " + std::to_string(c.m) + " | " + describe(v);
    const std::size_t stream_bytes = c.sd == StreamDtype::f32 ? bytes32(c.m) : bytes16(c.m);
    const DeviceBuffer branch(bytes16(c.m)), stream_in(stream_bytes), out(bytes16(c.m)), ns(bytes32(c.m));
    const DeviceBuffer history_out(bytes16(c.m) * samples.size()), history_ns(bytes32(c.m) * samples.size());
    const gpu::Outputs outputs{TensorView{out.get(), Dtype::bf16, {c.m, kH}},
                               TensorView{c.store ? ns.get() : nullptr, Dtype::f32, {c.m, kH}}};
    const TensorView branch_view{branch.get(), Dtype::bf16, {c.m, kH}};
    const TensorView stream_view{stream_in.get(), c.sd == StreamDtype::f32 ? Dtype::f32 : Dtype::bf16, {c.m, kH}};

    s.fused.prepare(v, bench.stream);  // the kernels' modules are loaded now, not during the capture
    CUDA_CHECK(gpu::test::prepare_kernels());
    Graph graph;
    {
      Capture capture(bench.stream, cudaStreamCaptureModeGlobal);
      // The poison is part of every replay: a replay that did not run cannot pass on the
      // previous replay's output.
      CUDA_CHECK(gpu::test::launch_poison(out.get(), out.bytes(), bench.stream));
      if (c.store) CUDA_CHECK(gpu::test::launch_poison(ns.get(), ns.bytes(), bench.stream));
      s.fused.launch(branch_view, stream_view, outputs, bench.stream, v);
      graph = Graph(capture.end());
    }
    const GraphExec exec(graph);
    std::size_t sampled = 0;
    for (int replay = 0; replay < kReplays; ++replay) {
      // Alternating inputs: a replay that reused stale inputs or outputs gives the other set's bits.
      const std::int64_t first = (replay % 2) * c.m;
      CUDA_CHECK(cudaMemcpyAsync(branch.get(), rows.branch.at(bytes16(first)), branch.bytes(), cudaMemcpyDeviceToDevice,
                                 bench.stream));
      CUDA_CHECK(cudaMemcpyAsync(stream_in.get(), rows.stream_view(c.sd, first, c.m).data, stream_bytes,
                                 cudaMemcpyDeviceToDevice, bench.stream));
      CUDA_CHECK(cudaGraphLaunch(exec.get(), bench.stream));
      if (sampled < samples.size() && samples[sampled] == replay) {
        CUDA_CHECK(cudaMemcpyAsync(history_out.at(bytes16(c.m) * sampled), out.get(), out.bytes(), cudaMemcpyDeviceToDevice,
                                   bench.stream));
        if (c.store)
          CUDA_CHECK(cudaMemcpyAsync(history_ns.at(bytes32(c.m) * sampled), ns.get(), ns.bytes(), cudaMemcpyDeviceToDevice,
                                     bench.stream));
        ++sampled;
      }
    }
    CUDA_CHECK(cudaStreamSynchronize(bench.stream));
    REQUIRE(sampled == samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const std::int64_t first = (samples[i] % 2) * c.m;
      const std::string replay = context + " | replay " + std::to_string(samples[i]);
      expect_bits(replay, "out", bench.fetch_out(history_out.at(bytes16(c.m) * i), c.m), want.out_rows(first, c.m),
                  "the emulator", first);
      if (c.store)
        expect_bits(replay, "new_stream", bench.fetch_new_stream(history_ns.at(bytes32(c.m) * i), c.m),
                    want.new_stream_rows(first, c.m), "the emulator", first);
    }
  }
}

TEST_CASE("CUDA graph: the eager chain, and run() with its checks, captured and replayed") {
  const HostRows& host = realistic_rows();
  const DeviceRows rows(host);
  const NamedConstants k{"post-attention (stock)", post_attention(), true};
  Subject s(k, realistic_operands(k.constants));
  const std::int64_t m = s.fused.sm_count() + 1;
  const Bench bench(m);
  const Expected want = emulate(s, host, StreamDtype::f32, 2 * m);
  const DeviceBuffer branch(bytes16(m)), stream_in(bytes32(m));
  const TensorView branch_view{branch.get(), Dtype::bf16, {m, kH}};
  const TensorView stream_view{stream_in.get(), Dtype::f32, {m, kH}};
  s.eager.prepare(m, bench.stream);
  s.fused.prepare(s.fused.variant_for(m, StreamDtype::f32, true), bench.stream);
  CUDA_CHECK(gpu::test::prepare_kernels());
  for (Impl impl : {Impl::eager, Impl::fused}) {
    const Launch l{impl, true, std::nullopt};
    const std::string context = s.name + " | graph of " + (impl == Impl::eager ? "EagerChain::launch" : "DraftBoundary::run") +
                                ", m = " + std::to_string(m);
    Graph graph;
    {
      Capture capture(bench.stream, cudaStreamCaptureModeGlobal);
      CUDA_CHECK(gpu::test::launch_poison(bench.out.get(), bytes16(m + 1), bench.stream));
      CUDA_CHECK(gpu::test::launch_poison(bench.new_stream.get(), bytes32(m + 1), bench.stream));
      if (impl == Impl::eager) s.eager.launch(branch_view, stream_view, bench.outputs(m, true), bench.stream);
      else run_launch(s, l, branch_view, stream_view, bench.outputs(m, true), bench.stream);
      // run()'s checks query pointer attributes while the stream captures: they must not have
      // invalidated the capture.
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      CUDA_CHECK(cudaStreamIsCapturing(bench.stream, &status));
      CHECK_MESSAGE(status == cudaStreamCaptureStatusActive, context << ": the capture was invalidated");
      graph = Graph(capture.end());
    }
    const GraphExec exec(graph);
    for (int replay = 0; replay < 10; ++replay) {
      const std::int64_t first = (replay % 2) * m;
      CUDA_CHECK(cudaMemcpyAsync(branch.get(), rows.branch.at(bytes16(first)), branch.bytes(), cudaMemcpyDeviceToDevice,
                                 bench.stream));
      CUDA_CHECK(cudaMemcpyAsync(stream_in.get(), rows.stream_f32.at(bytes32(first)), stream_in.bytes(),
                                 cudaMemcpyDeviceToDevice, bench.stream));
      CUDA_CHECK(cudaGraphLaunch(exec.get(), bench.stream));
      CUDA_CHECK(cudaStreamSynchronize(bench.stream));
      const std::string replay_context = context + " | replay " + std::to_string(replay);
      const auto out = bench.fetch_out(bench.out.get(), m + 1);
      expect_bits(replay_context, "out", out.first(elements(m)), want.out_rows(first, m), "the emulator", first);
      expect_untouched(replay_context, "out", out.subspan(elements(m)));
      const auto ns = bench.fetch_new_stream(bench.new_stream.get(), m + 1);
      expect_bits(replay_context, "new_stream", ns.first(elements(m)), want.new_stream_rows(first, m), "the emulator", first);
      expect_untouched(replay_context, "new_stream", ns.subspan(elements(m)));
    }
  }
}

// ================================================================ host API

namespace {

// Device operands and tensors for the refusal tests; their values are never read by a kernel
// except in the final good launch, where they are zeros.
struct ApiFixture {
  static constexpr std::int64_t m = 4;
  static constexpr std::size_t kSlack = 64;  // room for the misaligned (+4 bytes) views

  ApiFixture()
      : alpha(kH * 4 + kSlack),
        beta(kH * 4 + kSlack),
        weight16(kH * 2 + kSlack),
        weight16b(kH * 2 + kSlack),
        weight32(kH * 4 + kSlack),
        branch(bytes16(m) + kSlack),
        stream_f32(bytes32(m) + kSlack),
        stream_bf16(bytes16(m) + kSlack),
        out(bytes16(m) + kSlack),
        new_stream(bytes32(m) + kSlack),
        host(static_cast<std::uint8_t*>(std::aligned_alloc(256, bytes32(m))), std::free) {
    REQUIRE(host != nullptr);
    for (const DeviceBuffer* b : {&alpha, &beta, &weight16, &weight16b, &weight32, &branch, &stream_f32, &stream_bf16})
      CUDA_CHECK(cudaMemset(b->get(), 0, b->bytes()));
    std::memset(host.get(), 0, bytes32(m));
  }

  gpu::Operands ffn_operands() const {  // post-ffn: both norms with a BF16 weight
    return {TensorView{alpha.get(), Dtype::f32, {kH}}, TensorView{beta.get(), Dtype::f32, {kH}},
            TensorView{weight16.get(), Dtype::bf16, {kH}}, TensorView{weight16b.get(), Dtype::bf16, {kH}}};
  }
  TensorView branch_view() const { return {branch.get(), Dtype::bf16, {m, kH}}; }
  TensorView stream_view() const { return {stream_f32.get(), Dtype::f32, {m, kH}}; }
  gpu::Outputs outputs() const {
    return {TensorView{out.get(), Dtype::bf16, {m, kH}}, TensorView{new_stream.get(), Dtype::f32, {m, kH}}};
  }

  DeviceBuffer alpha, beta, weight16, weight16b, weight32, branch, stream_f32, stream_bf16, out, new_stream;
  std::unique_ptr<std::uint8_t, void (*)(void*)> host;  // not device memory, 256-byte aligned
};

// Both implementations refuse the same operands, with an InputError naming the operand.
void expect_operands_refused(const Constants& k, const gpu::Operands& ops, const char* needle) {
  INFO("refusal expected, message containing: " << std::string(needle));
  CHECK_THROWS_WITH_AS([&] { gpu::DraftBoundary fused(k, ops); }(), doctest::Contains(needle), InputError);
  CHECK_THROWS_WITH_AS([&] { gpu::EagerChain eager(k, ops); }(), doctest::Contains(needle), InputError);
}

}  // namespace

TEST_CASE("host API: operands of the wrong shape, dtype, alignment or memory, and missing or unexpected weights") {
  const ApiFixture f;
  const Constants ffn = post_ffn();
  // The unchanged operands are accepted: each refusal below is caused by the one thing changed.
  CHECK_NOTHROW([&] { gpu::DraftBoundary fused(ffn, f.ffn_operands()); }());
  CHECK_NOTHROW([&] { gpu::EagerChain eager(ffn, f.ffn_operands()); }());

  gpu::Operands o = f.ffn_operands();
  o.alpha.shape = {kH - 1};
  expect_operands_refused(ffn, o, "'alpha' has shape");
  o = f.ffn_operands();
  o.alpha.shape = {1, kH};
  expect_operands_refused(ffn, o, "'alpha' has shape");
  o = f.ffn_operands();
  o.beta.dtype = Dtype::bf16;
  expect_operands_refused(ffn, o, "'beta' has dtype");
  o = f.ffn_operands();
  o.alpha.data = f.alpha.at(4);
  expect_operands_refused(ffn, o, "'alpha' is not 32-byte aligned");
  o = f.ffn_operands();
  o.beta.data = f.beta.at(16);  // 16-byte aligned is not enough for the FP32 gates
  expect_operands_refused(ffn, o, "'beta' is not 32-byte aligned");
  o = f.ffn_operands();
  o.alpha.data = nullptr;
  expect_operands_refused(ffn, o, "'alpha' is missing");
  o = f.ffn_operands();
  o.beta.data = f.host.get();
  expect_operands_refused(ffn, o, "'beta' is not device memory");
  o = f.ffn_operands();
  o.post_weight.reset();
  expect_operands_refused(ffn, o, "'post_weight' is missing");
  o = f.ffn_operands();
  o.pre_weight->dtype = Dtype::f16;
  expect_operands_refused(ffn, o, "'pre_weight' has dtype");
  o = f.ffn_operands();
  o.post_weight->shape = {kH + 1};
  expect_operands_refused(ffn, o, "'post_weight' has shape");
  o = f.ffn_operands();
  o.pre_weight->data = f.weight16b.at(4);
  expect_operands_refused(ffn, o, "'pre_weight' is not 16-byte aligned");
  o = f.ffn_operands();
  o.post_weight->data = f.host.get();
  expect_operands_refused(ffn, o, "'post_weight' is not device memory");

  // post-attention: the post norm has no weight, so one given is refused.
  const Constants attention = post_attention();
  o = f.ffn_operands();
  CHECK_NOTHROW([&] {
    gpu::Operands ok = o;
    ok.post_weight.reset();
    gpu::DraftBoundary fused(attention, ok);
  }());
  expect_operands_refused(attention, o, "'post_weight' is given");

  // An FP32 weight needs 32-byte alignment, like the gates.
  Constants fp32 = ffn;
  fp32.pre.weight_dtype = WeightDtype::fp32;
  o = f.ffn_operands();
  o.pre_weight = TensorView{f.weight32.get(), Dtype::f32, {kH}};
  CHECK_NOTHROW([&] { gpu::DraftBoundary fused(fp32, o); }());
  o.pre_weight->data = f.weight32.at(16);
  expect_operands_refused(fp32, o, "'pre_weight' is not 32-byte aligned");
  o.pre_weight = TensorView{f.weight16b.get(), Dtype::bf16, {kH}};
  expect_operands_refused(fp32, o, "'pre_weight' has dtype");
}

TEST_CASE("host API: branch, stream and outputs refused by run(), naming the tensor, and nothing launched") {
  const ApiFixture f;
  const NamedConstants k{"post-ffn (stock)", post_ffn(), true};
  gpu::DraftBoundary fused(k.constants, f.ffn_operands());
  gpu::EagerChain eager(k.constants, f.ffn_operands());
  const Stream stream;
  poison(f.out.get(), f.out.bytes(), stream);
  poison(f.new_stream.get(), f.new_stream.bytes(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));

  struct Case {
    const char* needle;
    TensorView branch, stream;
    gpu::Outputs outputs;
  };
  const auto with = [&](const char* needle, auto&& change) {
    Case c{needle, f.branch_view(), f.stream_view(), f.outputs()};
    change(c);
    return c;
  };
  const Case cases[] = {
      with("'branch' has shape", [](Case& c) { c.branch.shape = {ApiFixture::m, kH - 1}; }),
      with("'branch' has shape", [](Case& c) { c.branch.shape = {kH}; }),
      with("'branch' has shape", [](Case& c) { c.branch.shape = {0, kH}; }),
      with("'branch' has dtype", [](Case& c) { c.branch.dtype = Dtype::f32; }),
      with("'branch' is not 16-byte aligned", [&](Case& c) { c.branch.data = f.branch.at(4); }),
      with("'branch' is missing", [](Case& c) { c.branch.data = nullptr; }),
      with("'branch' is not device memory", [&](Case& c) { c.branch.data = f.host.get(); }),
      with("'stream' has shape", [](Case& c) { c.stream.shape = {ApiFixture::m + 1, kH}; }),
      with("'stream' has dtype", [](Case& c) { c.stream.dtype = Dtype::f16; }),
      with("'stream' is not 16-byte aligned", [&](Case& c) { c.stream.data = f.stream_f32.at(4); }),
      with("'stream' is not device memory", [&](Case& c) { c.stream.data = f.host.get(); }),
      with("'out' has dtype", [](Case& c) { c.outputs.out.dtype = Dtype::f32; }),
      with("'out' has shape", [](Case& c) { c.outputs.out.shape = {ApiFixture::m - 1, kH}; }),
      with("'out' is not 16-byte aligned", [&](Case& c) { c.outputs.out.data = f.out.at(4); }),
      with("'out' is missing", [](Case& c) { c.outputs.out.data = nullptr; }),
      with("'new_stream' has dtype", [](Case& c) { c.outputs.new_stream.dtype = Dtype::bf16; }),
      with("'new_stream' has shape", [](Case& c) { c.outputs.new_stream.shape = {ApiFixture::m, kH - 8}; }),
      with("'new_stream' is not 16-byte aligned", [&](Case& c) { c.outputs.new_stream.data = f.new_stream.at(4); }),
  };
  for (const Case& c : cases) {
    INFO("refusal expected, message containing: " << std::string(c.needle));
    CHECK_THROWS_WITH_AS(fused.run(c.branch, c.stream, c.outputs, stream), doctest::Contains(c.needle), InputError);
    CHECK_THROWS_WITH_AS(eager.run(c.branch, c.stream, c.outputs, stream), doctest::Contains(c.needle), InputError);
  }
  // A forced variant must match the tensors it is launched on.
  const Variant good = fused.variant_for(ApiFixture::m, StreamDtype::f32, true);
  CHECK_THROWS_WITH_AS(fused.run(f.branch_view(), f.stream_view(), f.outputs(), stream, Variant{StreamDtype::bf16, true, false, true}),
                       doctest::Contains("variant"), InputError);
  CHECK_THROWS_WITH_AS(fused.run(f.branch_view(), f.stream_view(), f.outputs(), stream, Variant{StreamDtype::f32, false, false, true}),
                       doctest::Contains("variant"), InputError);

  // launch() checks nothing but its own scratch: unprepared, it refuses rather than write past it.
  {
    gpu::EagerChain unprepared(k.constants, f.ffn_operands());
    CHECK_THROWS_WITH_AS(unprepared.launch(f.branch_view(), f.stream_view(), f.outputs(), stream), doctest::Contains("prepare"),
                         InputError);
  }

  // run() checks before it launches: the poisoned outputs are untouched.
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<std::uint16_t> out(elements(ApiFixture::m));
  std::vector<float> ns(elements(ApiFixture::m));
  CUDA_CHECK(cudaMemcpy(out.data(), f.out.get(), bytes16(ApiFixture::m), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(ns.data(), f.new_stream.get(), bytes32(ApiFixture::m), cudaMemcpyDeviceToHost));
  for (std::int64_t row = 0; row < ApiFixture::m; ++row) {
    expect_untouched<std::uint16_t>("refused runs", "out", std::span(out).subspan(elements(row), kH), "by a refused call");
    expect_untouched<float>("refused runs", "new_stream", std::span(ns).subspan(elements(row), kH), "by a refused call");
  }

  // The same call with the good tensors launches and writes every element: the poison check
  // above could have failed. All-zero inputs and gates: S = 0, r = rsqrt(eps), every output +0.
  for (bool use_eager : {false, true}) {
    const std::string context = use_eager ? "eager chain, good tensors" : "fused, good tensors";
    if (use_eager) eager.run(f.branch_view(), f.stream_view(), f.outputs(), stream);
    else fused.run(f.branch_view(), f.stream_view(), f.outputs(), stream, good);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaMemcpy(out.data(), f.out.get(), bytes16(ApiFixture::m), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(ns.data(), f.new_stream.get(), bytes32(ApiFixture::m), cudaMemcpyDeviceToHost));
    expect_bits<std::uint16_t>(context, "out", out, std::vector<std::uint16_t>(out.size(), 0), "+0");
    expect_bits<float>(context, "new_stream", ns, std::vector<float>(ns.size(), 0.0f), "+0");
    poison(f.out.get(), f.out.bytes(), stream);
    poison(f.new_stream.get(), f.new_stream.bytes(), stream);
  }
}

TEST_CASE("host API: takes() is false for a branch or stream run() would refuse") {
  const ApiFixture f;
  const gpu::DraftBoundary fused(post_ffn(), f.ffn_operands());
  // The good tensors are taken (both stream dtypes): each false below is caused by one change.
  CHECK(fused.takes(f.branch_view(), f.stream_view()));
  CHECK(fused.takes(f.branch_view(), TensorView{f.stream_bf16.get(), Dtype::bf16, {ApiFixture::m, kH}}));

  const auto not_taken = [&](const char* what, auto&& change) {
    TensorView branch = f.branch_view(), stream = f.stream_view();
    change(branch, stream);
    INFO("takes() must be false: " << std::string(what));
    CHECK_FALSE(fused.takes(branch, stream));
  };
  not_taken("branch 1-D", [](TensorView& b, TensorView&) { b.shape = {kH}; });
  not_taken("branch of 0 rows", [](TensorView& b, TensorView& s) { b.shape = s.shape = {0, kH}; });
  not_taken("branch of -1 rows", [](TensorView& b, TensorView& s) { b.shape = s.shape = {-1, kH}; });
  not_taken("branch [m, 8191]", [](TensorView& b, TensorView&) { b.shape = {ApiFixture::m, kH - 1}; });
  not_taken("branch [m, 8192, 1]", [](TensorView& b, TensorView&) { b.shape = {ApiFixture::m, kH, 1}; });
  not_taken("branch F16", [](TensorView& b, TensorView&) { b.dtype = Dtype::f16; });
  not_taken("branch F32", [](TensorView& b, TensorView&) { b.dtype = Dtype::f32; });
  not_taken("branch 4 bytes off alignment", [&](TensorView& b, TensorView&) { b.data = f.branch.at(4); });
  not_taken("branch in host memory", [&](TensorView& b, TensorView&) { b.data = f.host.get(); });
  not_taken("branch null", [](TensorView& b, TensorView&) { b.data = nullptr; });
  not_taken("stream of other rows", [](TensorView&, TensorView& s) { s.shape = {ApiFixture::m + 1, kH}; });
  not_taken("stream 1-D", [](TensorView&, TensorView& s) { s.shape = {ApiFixture::m * kH}; });
  not_taken("stream F16", [](TensorView&, TensorView& s) { s.dtype = Dtype::f16; });
  not_taken("stream 4 bytes off alignment", [&](TensorView&, TensorView& s) { s.data = f.stream_f32.at(4); });
  not_taken("stream in host memory", [&](TensorView&, TensorView& s) { s.data = f.host.get(); });
  not_taken("stream null", [](TensorView&, TensorView& s) { s.data = nullptr; });
}

TEST_CASE("host API: prepare() refused while its stream captures; the capture survives the refusal") {
  const ApiFixture f;
  const Constants k = post_ffn();
  gpu::DraftBoundary fused(k, f.ffn_operands());
  const Variant v = fused.variant_for(ApiFixture::m, StreamDtype::f32, true);
  for (unsigned flags : {unsigned{cudaStreamNonBlocking}, unsigned{cudaStreamDefault}}) {
    INFO("capturing stream flags " << flags);
    gpu::EagerChain eager(k, f.ffn_operands());  // no scratch yet: run() would have to allocate
    const Stream stream(flags);
    Capture capture(stream, cudaStreamCaptureModeGlobal);
    CHECK_THROWS_WITH_AS(fused.prepare(v, stream), doctest::Contains("capture"), InputError);
    CHECK_THROWS_WITH_AS(eager.prepare(ApiFixture::m, stream), doctest::Contains("capture"), InputError);
    // run() needs scratch it cannot allocate during a capture.
    CHECK_THROWS_WITH_AS(eager.run(f.branch_view(), f.stream_view(), f.outputs(), stream), doctest::Contains("capture"),
                         InputError);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
    CHECK(status == cudaStreamCaptureStatusActive);  // not invalidated by the refusals
    const Graph graph(capture.end());                // ends cleanly: nothing illegal was captured
    CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
    CHECK(status == cudaStreamCaptureStatusNone);
    // Outside the capture the same calls are accepted.
    CHECK_NOTHROW(fused.prepare(v, stream));
    CHECK_NOTHROW(eager.prepare(ApiFixture::m, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
}

// The header promises a refusal while `stream` captures, and, through the legacy default stream,
// while a blocking stream captures: prepare() with its default stream argument.
TEST_CASE("host API: prepare() on the default stream refused while a blocking stream captures") {
  const ApiFixture f;
  const Constants k = post_ffn();
  gpu::DraftBoundary fused(k, f.ffn_operands());
  const Variant v = fused.variant_for(ApiFixture::m, StreamDtype::f32, true);
  for (unsigned flags : {unsigned{cudaStreamDefault}}) {
    INFO("capturing stream flags " << flags);
    gpu::EagerChain eager(k, f.ffn_operands());
    const Stream stream(flags);
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    CHECK_THROWS_WITH_AS(fused.prepare(v), doctest::Contains("capture"), InputError);
    CHECK_THROWS_WITH_AS(eager.prepare(ApiFixture::m), doctest::Contains("capture"), InputError);
    // Ended by hand, whatever happened: a failed prepare may have invalidated the capture.
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    if (graph) CUDA_CHECK(cudaGraphDestroy(graph));
    // A refused CUDA query leaves its error as the thread's last error, which the next
    // <<<>>> launch checked with cudaGetLastError would report as its own.
    cudaGetLastError();
    CHECK_MESSAGE(ended == cudaSuccess, "the capture did not survive the refusals: " << std::string(cudaGetErrorName(ended)));
  }
}

TEST_CASE("run() with owned outputs equals the emulator") {
  // Fresh rows (another seed) that no earlier launch computed: the unpoisoned memory run()
  // allocates cannot already hold their bits.
  const Constants k = post_ffn();
  const std::int64_t m = 133;
  const st::File f = generate_inputs(k, m, kRowSeed + 1, StreamDtype::bf16);
  HostRows h;
  h.n = m;
  const auto* b = f.tensors.at("branch").data<std::uint16_t>();
  const auto* sb = f.tensors.at("stream").data<std::uint16_t>();
  h.branch.assign(b, b + elements(m));
  h.stream_bf16.assign(sb, sb + elements(m));
  h.stream_f32.resize(elements(m));
  std::transform(h.stream_bf16.begin(), h.stream_bf16.end(), h.stream_f32.begin(), ref::bf16_to_f32);
  const DeviceRows rows(h);
  Subject s({"post-ffn (stock)", k, true}, realistic_operands(k));
  const Expected want = emulate(s, h, StreamDtype::bf16, m);
  const Stream stream;
  for (bool store : {true, false}) {
    const std::string context = s.name + " | owned outputs, stored = " + std::to_string(store);
    const gpu::OwnedOutputs o = s.fused.run(rows.branch_view(0, m), rows.stream_view(StreamDtype::bf16, 0, m), stream, store);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CHECK(o.views.out.dtype == Dtype::bf16);
    CHECK(o.views.out.shape == std::vector<std::int64_t>{m, kH});
    REQUIRE(o.views.out.data != nullptr);
    CHECK((o.views.new_stream.data != nullptr) == store);
    std::vector<std::uint16_t> out(elements(m));
    CUDA_CHECK(cudaMemcpy(out.data(), o.views.out.data, bytes16(m), cudaMemcpyDeviceToHost));
    expect_bits<std::uint16_t>(context, "out", out, want.out_rows(0, m), "the emulator");
    if (!store) continue;
    CHECK(o.views.new_stream.dtype == Dtype::f32);
    CHECK(o.views.new_stream.shape == std::vector<std::int64_t>{m, kH});
    std::vector<float> ns(elements(m));
    CUDA_CHECK(cudaMemcpy(ns.data(), o.views.new_stream.data, bytes32(m), cudaMemcpyDeviceToHost));
    expect_bits<float>(context, "new_stream", ns, want.new_stream_rows(0, m), "the emulator");
  }
}
