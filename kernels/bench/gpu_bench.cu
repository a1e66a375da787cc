// boundary_gpu_bench: how close the fused DraftBoundary kernel comes to its two floors, one empty
// launch per boundary (decode: m up to the SM count, the data L2-resident) and the SM copy
// bandwidth (prefill: large m, the data streamed from HBM), with the eager chain it replaces and
// each of its layouts beside it; torch.compile of the same boundary is timed by torch_peer.py
// and joined to these numbers by combine_bench.py. Everything is timed as CUDA graph replays, the way a serving engine runs a decode
// step, so the gaps between launches are the GPU's own and not the host's.
//
//   boundary_gpu_bench [--rows 1,8,32,132,1024,8192] [--ranks 8] [--constants FILE] [--json FILE]
//
// With --ranks R (0: skipped) the same run times the fused all-reduce boundary (a cluster of 8
// CTAs per row) on R rank partials against the all-reduce kernel followed by the DraftBoundary,
// after checking that both give the same bits.
//
// Per m it first checks that the fused kernel's out and new_stream equal the eager chain's bit
// for bit (both stream dtypes, and each layout), then prints the details of its timings; the
// summary table, the copy bandwidths and PASS/MISS per target come last on stdout, and --json
// writes the same.
//
// Exit codes: 0 measured (a missed target is a result, not a failure), 1 the fused kernel's bits
// differ from the eager chain's, 2 bad arguments or constants, 3 a CUDA call failed, 77 no device.
#include <boundary/verify/cli.hpp>
#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/generate.hpp>
#include <boundary/gpu/all_reduce_boundary.hpp>
#include <boundary/gpu/draft_boundary.hpp>
#include <boundary/verify/safetensors.hpp>
#include <boundary/types.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#ifndef BOUNDARY_SOURCE_DIR
#define BOUNDARY_SOURCE_DIR "."
#endif

// The floor of a launch: no loads, no stores, only the grid's start and end.
__global__ void empty_kernel() {}

// The bandwidth ceiling: what the SMs themselves move, 16-byte loads and stores, four loads in
// flight per thread before the first store, a grid-stride loop over a grid that fills the GPU.
__global__ void sm_copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a, dst[i + stride] = b, dst[i + 2 * stride] = c, dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

// The floors of the all-reduce boundary's grid (clusters of 8 CTAs of 128 threads), to tell a
// missed launch target's causes apart: the cluster launch alone; with the kernel's three cluster
// barriers; and its memory traffic alone (the partials and the stream in, out and new_stream out,
// the arithmetic reduced to one add per element and no row sums).
__global__ void __cluster_dims__(8, 1, 1) empty_cluster_kernel() {}

__global__ void __cluster_dims__(8, 1, 1) cluster_barriers_kernel() {
  for (int i = 0; i < 3; ++i) {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
  }
}

struct TrafficParams {
  const uint4* partials[boundary::kMaxRanks];
  int ranks;
  const float4* stream;
  uint4* out;
  float4* new_stream;
};

__global__ void __cluster_dims__(8, 1, 1) traffic_kernel(const TrafficParams p) {
  const std::size_t at = blockIdx.x * 128ull + threadIdx.x;  // 16-byte words of the BF16 tensors
  uint4 a = p.partials[0][at];
  for (int r = 1; r < p.ranks; ++r) {
    const uint4 b = p.partials[r][at];
    a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
  }
  const float4 s0 = p.stream[2 * at], s1 = p.stream[2 * at + 1];
  p.out[at] = a;
  p.new_stream[2 * at] = make_float4(s0.x + 1.0f, s0.y, s0.z, s0.w);
  p.new_stream[2 * at + 1] = s1;
}

namespace {

namespace bg = boundary::gpu;
namespace st = boundary::safetensors;
using boundary::kH;
using boundary::StreamDtype;

// Decode batches stay L2-resident between boundaries (the next layer's stream is this one's
// output), so only prefill-sized batches are timed from HBM.
constexpr std::int64_t kRotateFromRows = 1024;
// Rotated buffer sets are sized so that one replay touches this many L2 capacities: a set
// written one replay ago is then long evicted when it is read again.
constexpr double kL2Multiple = 4.0;

// The targets this benchmark can judge alone (torch.compile's are judged by
// kernels/bench/combine_bench.py, which has both sides).
constexpr double kLatencyTargetUs = 2.0;         // fused <= 2.0 us per boundary ...
constexpr std::int64_t kLatencyTargetRows = 32;  // ... for m up to 32
constexpr double kCopyTarget = 0.92;             // fused >= 92% of the SM copy bandwidth ...
constexpr std::int64_t kCopyTargetFromRows = 1024;  // ... for prefill batches (m = 1024 and 8192)
constexpr double kAllReduceChainTarget = 0.85;   // fused all-reduce boundary <= 0.85 x its chain at every m
constexpr double kAllReduceCopyTarget = 0.90;    // ... and >= 90% of the SM copy bandwidth at m = 8192
constexpr std::int64_t kAllReduceCopyRows = 8192;

// The bits differ between the fused kernel and the eager chain: timing it would be worthless.
class Mismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void cuda_check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess)
    throw bg::CudaError(what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// ---------------------------------------------------------------------------------------------
// Options

struct Options {
  std::vector<std::int64_t> rows = {1, 8, 32, 132, 1024, 8192};
  std::filesystem::path constants =
      std::filesystem::path(BOUNDARY_SOURCE_DIR) / "fixtures/constants/muse-spark-post-ffn.json";
  std::optional<std::filesystem::path> json;
  int launches = 20;   // per graph: amortises the graph's own launch over many boundaries
  int replays = 50;    // timed replays; the median is reported
  int warmup = 10;     // untimed replays first: clocks up, module loaded, graph resident
  std::uint64_t seed = 1;
  double copy_gib = 2.0;  // source size of the copy-bandwidth reference
  int ranks = 8;          // partials of the all-reduce boundary; 0: not measured
};

void setup_options(CLI::App& app, Options& o) {
  app.add_option("--rows", o.rows, "Row counts m to measure, comma separated")->delimiter(',')->capture_default_str();
  app.add_option("--constants", o.constants, "Boundary constants JSON")->capture_default_str();
  app.add_option("--json", o.json, "Also write the results as JSON to this file");
  app.add_option("--launches", o.launches, "Boundaries per captured graph")->check(CLI::Range(1, 10000))->capture_default_str();
  app.add_option("--replays", o.replays, "Timed graph replays")->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--warmup", o.warmup, "Untimed graph replays before timing")->check(CLI::Range(0, 100000))->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of the realistic inputs")->capture_default_str();
  app.add_option("--copy-gib", o.copy_gib, "Size of the device-to-device copy reference, GiB")
      ->check(CLI::Range(0.001, 64.0))->capture_default_str();
  app.add_option("--ranks", o.ranks, "Rank partials of the all-reduce boundary (0: not measured)")
      ->check(CLI::Range(0, boundary::kMaxRanks))->capture_default_str();
}

void validate(const Options& o) {
  if (o.rows.empty()) throw boundary::InputError("--rows: give at least one row count");
  for (std::int64_t m : o.rows)
    if (m < 1 || m > 1'000'000)
      throw boundary::InputError("--rows: " + std::to_string(m) + " is not a row count in [1, 1000000]");
}

// ---------------------------------------------------------------------------------------------
// CUDA resources that free themselves when an error unwinds the benchmark

struct StreamDeleter {
  void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
struct EventDeleter {
  void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};
struct GraphDeleter {
  void operator()(cudaGraph_t g) const { cudaGraphDestroy(g); }
};
struct GraphExecDeleter {
  void operator()(cudaGraphExec_t g) const { cudaGraphExecDestroy(g); }
};
using Stream = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDeleter>;
using Event = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDeleter>;
using Graph = std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, GraphDeleter>;
using GraphExec = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, GraphExecDeleter>;

Stream make_stream() {
  cudaStream_t s = nullptr;
  // Non-blocking: legacy default-stream work can neither join the capture nor fence the replays.
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return Stream(s);
}

std::vector<Event> make_events(int n) {
  std::vector<Event> events;
  for (int i = 0; i < n; ++i) {
    cudaEvent_t e = nullptr;
    cuda_check(cudaEventCreate(&e), "cudaEventCreate");
    events.emplace_back(e);
  }
  return events;
}

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::size_t bytes, const std::string& what) : bytes_(bytes) {
    cuda_check(cudaMalloc(&data_, bytes), "cudaMalloc(" + what + ", " + std::to_string(bytes) + " bytes)");
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(data_); }

  void* get() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

struct DeviceInfo {
  std::string name;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
};

DeviceInfo device_info() {
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp p{};
  cuda_check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  return {p.name, p.multiProcessorCount, static_cast<std::size_t>(p.l2CacheSize)};
}

// ---------------------------------------------------------------------------------------------
// Timing: N launches captured as one graph, each replay timed with its own event pair

struct Timing {
  double median_us = 0;
  double min_us = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Schedule {
  int launches, replays, warmup;
};

// Enqueues launch i of the graph (i picks the buffer set where buffers rotate).
using Enqueue = std::function<void(int)>;

GraphExec capture(cudaStream_t s, int launches, const Enqueue& enqueue) {
  // Global mode: any call that is unsafe during a capture, from any thread, fails loudly.
  cuda_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  try {
    for (int i = 0; i < launches; ++i) enqueue(i);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(s, &broken);  // leave the stream usable; the first error is the one to report
    if (broken) cudaGraphDestroy(broken);
    throw;
  }
  cudaGraph_t raw = nullptr;
  cuda_check(cudaStreamEndCapture(s, &raw), "cudaStreamEndCapture");
  const Graph graph(raw);
  cudaGraphExec_t exec = nullptr;
  cuda_check(cudaGraphInstantiate(&exec, graph.get(), 0), "cudaGraphInstantiate");
  return GraphExec(exec);
}

// Per-launch microseconds: each replay's time over its launches; median and best replay.
Timing time_graph(cudaStream_t s, const Schedule& sched, const Enqueue& enqueue, const std::string& what) {
  const GraphExec exec = capture(s, sched.launches, enqueue);
  cuda_check(cudaGraphUpload(exec.get(), s), "cudaGraphUpload (" + what + ")");
  for (int i = 0; i < sched.warmup; ++i) cuda_check(cudaGraphLaunch(exec.get(), s), "cudaGraphLaunch (" + what + ", warm-up)");
  const std::vector<Event> start = make_events(sched.replays), stop = make_events(sched.replays);
  for (int r = 0; r < sched.replays; ++r) {
    cuda_check(cudaEventRecord(start[r].get(), s), "cudaEventRecord");
    cuda_check(cudaGraphLaunch(exec.get(), s), "cudaGraphLaunch (" + what + ")");
    cuda_check(cudaEventRecord(stop[r].get(), s), "cudaEventRecord");
  }
  // A kernel fault surfaces here, not at the launch.
  cuda_check(cudaStreamSynchronize(s), "replaying the graph (" + what + ")");
  std::vector<double> per_launch_us;
  for (int r = 0; r < sched.replays; ++r) {
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start[r].get(), stop[r].get()), "cudaEventElapsedTime");
    per_launch_us.push_back(1000.0 * ms / sched.launches);
  }
  return {median(per_launch_us), *std::min_element(per_launch_us.begin(), per_launch_us.end())};
}

// ---------------------------------------------------------------------------------------------
// The copy-bandwidth ceiling

// A non-constant pattern, so that nothing can be elided or compressed on the copy path.
__global__ void fill_pattern(std::uint32_t* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<std::uint32_t>(i * 0x9E3779B97F4A7C15ull >> 32);
}

struct CopyTiming {
  Timing time;
  double gbps_median = 0, gbps_best = 0;
};

// Both copies of one buffer far larger than the L2, so that every byte comes from and goes to HBM.
// The SM copy is the ceiling every "% of copy" is taken against: the copy engines behind
// cudaMemcpyAsync move less (kept as a second figure).
struct CopyResult {
  std::size_t bytes = 0;  // source size; read + written is twice that
  CopyTiming sm, memcpy;
  double gbps_median() const { return sm.gbps_median; }
};

CopyResult measure_copy(cudaStream_t s, const Options& o, const DeviceInfo& dev) {
  const auto bytes = static_cast<std::size_t>(o.copy_gib * (1ull << 30)) / 16 * 16;
  const DeviceBuffer src(bytes, "copy source"), dst(bytes, "copy destination");
  fill_pattern<<<1024, 256, 0, s>>>(static_cast<std::uint32_t*>(src.get()), bytes / 4);
  cuda_check(cudaGetLastError(), "launching fill_pattern");
  cudaFuncAttributes attributes{};
  cuda_check(cudaFuncGetAttributes(&attributes, sm_copy_kernel), "loading the SM copy kernel");
  const Schedule sched{1, std::max(10, std::min(o.replays, 30)), 3};  // ~1 ms each: few replays suffice
  const double moved = 2.0 * static_cast<double>(bytes);
  const auto timing = [&](const Timing& t) { return CopyTiming{t, moved / (t.median_us * 1e3), moved / (t.min_us * 1e3)}; };
  CopyResult r;
  r.bytes = bytes;
  const auto blocks = static_cast<unsigned>(dev.sm_count * 8);  // 2048 threads per SM: a full GPU
  r.sm = timing(time_graph(
      s, sched,
      [&](int) {
        sm_copy_kernel<<<blocks, 256, 0, s>>>(static_cast<const uint4*>(src.get()), static_cast<uint4*>(dst.get()),
                                              bytes / 16);
        cuda_check(cudaGetLastError(), "launching the SM copy kernel");
      },
      "SM copy"));
  r.memcpy = timing(time_graph(
      s, sched,
      [&](int) {
        cuda_check(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
      },
      "device-to-device cudaMemcpyAsync"));
  return r;
}

// ---------------------------------------------------------------------------------------------
// Realistic inputs, on the host once and on the device per m

bg::Dtype view_dtype(st::Dtype d) {
  switch (d) {
    case st::Dtype::BF16: return bg::Dtype::bf16;
    case st::Dtype::F16: return bg::Dtype::f16;
    case st::Dtype::F32: return bg::Dtype::f32;
  }
  throw std::logic_error("unknown safetensors dtype");
}

// One file per stream dtype, made for the largest m: the generator draws the gates and weights
// first and then the rows in order, so the first m rows are what a run for m rows would get.
struct HostInputs {
  st::File f32, bf16;
};

HostInputs generate(const boundary::Constants& c, std::int64_t rows, std::uint64_t seed) {
  // The two files are independent; the second core halves the wait at m = 8192.
  auto bf16 = std::async(std::launch::async, [&] { return boundary::generate_inputs(c, rows, seed, StreamDtype::bf16); });
  st::File f32 = boundary::generate_inputs(c, rows, seed, StreamDtype::f32);
  return {std::move(f32), bf16.get()};
}

// On the benchmark's stream and waited for: a plain cudaMemcpy from pageable memory may return
// before its DMA lands, and the non-blocking stream would not wait for it.
DeviceBuffer upload(const st::Tensor& t, std::size_t bytes, const std::string& name, cudaStream_t s) {
  if (bytes > t.bytes.size()) throw std::logic_error("upload of " + name + " beyond its host tensor");
  DeviceBuffer b(bytes, name);
  cuda_check(cudaMemcpyAsync(b.get(), t.bytes.data(), bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync(" + name + ")");
  cuda_check(cudaStreamSynchronize(s), "uploading " + name);
  return b;
}

bg::TensorView view(const DeviceBuffer& b, bg::Dtype dtype, std::vector<std::int64_t> shape) {
  return {b.get(), dtype, std::move(shape)};
}

// The gates and weights: read by every launch, uploaded once.
struct DeviceOperands {
  std::vector<DeviceBuffer> buffers;
  bg::Operands views;
};

DeviceOperands upload_operands(const st::File& f, cudaStream_t s) {
  DeviceOperands d;
  d.buffers.reserve(4);
  auto add = [&](const std::string& name) {
    const st::Tensor& t = f.tensors.at(name);
    d.buffers.push_back(upload(t, t.bytes.size(), name, s));
    return view(d.buffers.back(), view_dtype(t.dtype), t.shape);
  };
  d.views.alpha = add("alpha");
  d.views.beta = add("beta");
  if (f.tensors.count("post_weight")) d.views.post_weight = add("post_weight");
  if (f.tensors.count("pre_weight")) d.views.pre_weight = add("pre_weight");
  return d;
}

std::size_t operand_bytes(const st::File& f) {
  std::size_t bytes = 0;
  for (const char* name : {"alpha", "beta", "post_weight", "pre_weight"})
    if (f.tensors.count(name)) bytes += f.tensors.at(name).bytes.size();
  return bytes;
}

// One set of everything a launch reads or writes for m rows. Both stream dtypes share the branch.
struct BufferSet {
  DeviceBuffer branch, stream_f32, stream_bf16, out, new_stream;
  bg::TensorView branch_view, stream_f32_view, stream_bf16_view;
  bg::Outputs outputs;
};

BufferSet make_set(const HostInputs& in, std::int64_t m, cudaStream_t cs) {
  const auto elements = static_cast<std::size_t>(m) * kH;
  const std::vector<std::int64_t> shape = {m, kH};
  BufferSet s;
  s.branch = upload(in.f32.tensors.at("branch"), elements * 2, "branch", cs);
  s.stream_f32 = upload(in.f32.tensors.at("stream"), elements * 4, "stream (F32)", cs);
  s.stream_bf16 = upload(in.bf16.tensors.at("stream"), elements * 2, "stream (BF16)", cs);
  s.out = DeviceBuffer(elements * 2, "out");
  s.new_stream = DeviceBuffer(elements * 4, "new_stream");
  s.branch_view = view(s.branch, bg::Dtype::bf16, shape);
  s.stream_f32_view = view(s.stream_f32, bg::Dtype::f32, shape);
  s.stream_bf16_view = view(s.stream_bf16, bg::Dtype::bf16, shape);
  s.outputs = {view(s.out, bg::Dtype::bf16, shape), view(s.new_stream, bg::Dtype::f32, shape)};
  return s;
}

const bg::TensorView& stream_of(const BufferSet& s, StreamDtype d) {
  return d == StreamDtype::f32 ? s.stream_f32_view : s.stream_bf16_view;
}

// ---------------------------------------------------------------------------------------------
// Bits first: the fused kernel must equal the eager chain before it is worth timing

template <class T>
std::vector<T> download(const bg::TensorView& t, std::size_t elements) {
  std::vector<T> host(elements);
  cuda_check(cudaMemcpy(host.data(), t.data, elements * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy(download)");
  return host;
}

template <class T>
void compare(const std::vector<T>& fused, const std::vector<T>& eager, const std::string& what, std::int64_t m,
             const char* reference = "the eager chain") {
  std::size_t differing = 0, first = 0;
  for (std::size_t i = 0; i < fused.size(); ++i)
    if (fused[i] != eager[i] && differing++ == 0) first = i;
  if (differing == 0) return;
  char bits[96];
  std::snprintf(bits, sizeof bits, "fused 0x%0*llX, reference 0x%0*llX", static_cast<int>(2 * sizeof(T)),
                static_cast<unsigned long long>(fused[first]), static_cast<int>(2 * sizeof(T)),
                static_cast<unsigned long long>(eager[first]));
  std::ostringstream msg;
  msg << what << " at m = " << m << ": " << differing << " of " << fused.size()
      << " elements differ from " << reference << "; first at row " << first / kH << ", column " << first % kH << " ("
      << bits << ")";
  throw Mismatch(msg.str());
}

void check_bits(bg::DraftBoundary& fused, bg::EagerChain& eager, const BufferSet& set, std::int64_t m,
                StreamDtype dtype, cudaStream_t s, const std::optional<bg::Variant>& variant) {
  const auto elements = static_cast<std::size_t>(m) * kH;
  const std::vector<std::int64_t> shape = {m, kH};
  const DeviceBuffer ref_out(elements * 2, "eager out"), ref_new_stream(elements * 4, "eager new_stream");
  const bg::Outputs ref = {view(ref_out, bg::Dtype::bf16, shape), view(ref_new_stream, bg::Dtype::f32, shape)};
  // Different poison on each side, so that an element either side left unwritten shows as a
  // difference instead of two equal poisons.
  cuda_check(cudaMemsetAsync(set.out.get(), 0xFF, set.out.bytes(), s), "cudaMemsetAsync(poison)");
  cuda_check(cudaMemsetAsync(set.new_stream.get(), 0xFF, set.new_stream.bytes(), s), "cudaMemsetAsync(poison)");
  cuda_check(cudaMemsetAsync(ref_out.get(), 0xA5, ref_out.bytes(), s), "cudaMemsetAsync(poison)");
  cuda_check(cudaMemsetAsync(ref_new_stream.get(), 0xA5, ref_new_stream.bytes(), s), "cudaMemsetAsync(poison)");
  fused.run(set.branch_view, stream_of(set, dtype), set.outputs, s, variant);  // the checked entry point
  eager.run(set.branch_view, stream_of(set, dtype), ref, s);
  cuda_check(cudaStreamSynchronize(s), "running the bit check");
  const std::string name = std::string(dtype == StreamDtype::f32 ? "F32 stream" : "BF16 stream") +
                           (variant ? std::string(", ") + bg::layout_name(variant->layout) + " layout" : "");
  compare(download<std::uint16_t>(set.outputs.out, elements), download<std::uint16_t>(ref.out, elements),
          "out (" + name + ")", m);
  compare(download<std::uint32_t>(set.outputs.new_stream, elements), download<std::uint32_t>(ref.new_stream, elements),
          "new_stream (" + name + ")", m);
}

// ---------------------------------------------------------------------------------------------
// One row count: bytes, buffers, the five timings

// The least traffic a boundary can have: each input read once, each output written once, the
// gates and weights once per launch. branch BF16 + stream + new_stream F32 + out BF16.
double min_bytes(std::int64_t m, StreamDtype stream, std::size_t operands) {
  const double per_element = 2.0 + (stream == StreamDtype::f32 ? 4.0 : 2.0) + 4.0 + 2.0;
  return per_element * static_cast<double>(m) * kH + static_cast<double>(operands);
}

// What the eager chain moves: norm (branch in, y_b out), connection (y_b, stream in; new_stream,
// z out), norm (z in, out out); the gates and weights once each.
double eager_bytes(std::int64_t m, std::size_t operands) {
  const double per_element = (2 + 2) + (2 + 4 + 4 + 2) + (2 + 2);
  return per_element * static_cast<double>(m) * kH + static_cast<double>(operands);
}

// The all-reduce boundary's least traffic: R partials BF16 instead of the branch.
double all_reduce_min_bytes(std::int64_t m, int ranks, std::size_t operands) {
  return min_bytes(m, StreamDtype::f32, operands) + (2.0 * ranks - 2.0) * static_cast<double>(m) * kH;
}

int buffer_sets(std::int64_t m, const DeviceInfo& dev, double set_bytes) {
  if (m < kRotateFromRows) return 1;
  const auto needed = static_cast<int>(std::ceil(kL2Multiple * static_cast<double>(dev.l2_bytes) / set_bytes));
  return std::clamp(needed, 2, 64);
}

// Whole rotations per graph: the next replay's first launch then takes the set used longest ago,
// as every other launch does, instead of the one its predecessor just wrote.
Schedule schedule_for(const Options& o, int sets) {
  const int launches = (o.launches + sets - 1) / sets * sets;
  return {launches, o.replays, o.warmup};
}

// Launches kernel(args) on grid x block, with or without PDL.
template <class... Args>
void launch_floor(const void* kernel, unsigned grid, unsigned block, bool pdl, cudaStream_t s, const char* what,
                  Args*... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.stream = s;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = pdl ? 1 : 0;
  void* arguments[] = {args..., nullptr};
  // The C entry point: the variadic template would declare a zero-length argument array.
  cuda_check(cudaLaunchKernelExC(&config, kernel, arguments), std::string("launching the ") + what);
}

void launch_empty(std::int64_t m, bool pdl, cudaStream_t s) {
  launch_floor(reinterpret_cast<const void*>(empty_kernel), static_cast<unsigned>(m), boundary::kThreads, pdl, s,
               "empty kernel");
}

// Loads the empty kernel's module now: with lazy loading it would load at its first launch,
// which is inside a capture (the library's prepare() calls do the same for its kernels).
void prepare_empty() {
  cudaFuncAttributes attributes{};
  cuda_check(cudaFuncGetAttributes(&attributes, empty_kernel), "loading the empty kernel");
  cuda_check(cudaFuncGetAttributes(&attributes, empty_cluster_kernel), "loading the empty cluster kernel");
  cuda_check(cudaFuncGetAttributes(&attributes, cluster_barriers_kernel), "loading the cluster barriers kernel");
  cuda_check(cudaFuncGetAttributes(&attributes, traffic_kernel), "loading the traffic kernel");
}

// The all-reduce boundary at one m: the fused kernel against the all-reduce kernel followed by
// the DraftBoundary, F32 stream stored, each with its own buffer rotation.
struct AllReduceResult {
  int ranks = 0, sets = 1, launches = 0;
  bg::Layout layout = bg::Layout::quad;  // the dispatcher's choice for m
  Timing fused, chain;
  Timing empty_cluster, cluster_barriers, traffic;  // the floors of its grid, PDL on
  double bytes = 0;
};

struct RowResult {
  std::int64_t m = 0;
  int sets = 1;
  int launches = 0;  // per graph
  Timing empty_plain, empty_pdl, fused_f32, fused_bf16, eager;
  bg::Layout layout = bg::Layout::cta;  // the dispatcher's choice for m (fused_f32, fused_bf16)
  Timing cta_f32, cluster_f32, pair_f32, quad_f32;  // each layout forced, F32 stream stored
  double bytes_f32 = 0, bytes_bf16 = 0, bytes_eager = 0;
  std::optional<AllReduceResult> all_reduce;

  // The floor one launch of this grid can reach: the faster of the two empty launches.
  const Timing& empty() const { return empty_pdl.median_us <= empty_plain.median_us ? empty_pdl : empty_plain; }
};

double gbps(double bytes, const Timing& t) { return bytes / (t.median_us * 1e3); }

void print_row_details(const RowResult& r, const DeviceInfo& dev) {
  std::printf("m = %lld: %d launches per graph, %d buffer set%s of %.1f MB (%s)\n", static_cast<long long>(r.m),
              r.launches, r.sets, r.sets == 1 ? "" : "s", r.bytes_f32 / 1e6,
              r.sets == 1 ? "L2-resident: every launch reuses one set, as in decode"
                          : "rotated inside the graph: the working set exceeds the L2, data from HBM");
  auto line = [](const char* name, const Timing& t, double bytes) {
    std::printf("  %-22s median %9.2f us  min %9.2f us", name, t.median_us, t.min_us);
    if (bytes > 0) std::printf("  %8.1f GB/s", bytes / (t.median_us * 1e3));
    std::printf("\n");
  };
  line("empty kernel", r.empty_plain, 0);
  line("empty kernel + PDL", r.empty_pdl, 0);
  line("fused, F32 stream", r.fused_f32, r.bytes_f32);
  line("fused, BF16 stream", r.fused_bf16, r.bytes_bf16);
  line("eager chain, F32", r.eager, r.bytes_f32);
  line("cta layout, F32", r.cta_f32, r.bytes_f32);
  line("cluster layout, F32", r.cluster_f32, r.bytes_f32);
  line("pair layout, F32", r.pair_f32, r.bytes_f32);
  line("quad layout, F32", r.quad_f32, r.bytes_f32);
  std::printf("  dispatched layout: %s\n", bg::layout_name(r.layout));
  std::printf("  eager chain moves %.2fx the minimum traffic (%.1f GB/s actual); L2 %.0f MB\n",
              r.bytes_eager / r.bytes_f32, gbps(r.bytes_eager, r.eager), static_cast<double>(dev.l2_bytes) / 1e6);
  if (const auto& a = r.all_reduce) {
    std::printf("  all-reduce boundary, R = %d: %d launches per graph, %d buffer set%s of %.1f MB, %s layout\n", a->ranks,
                a->launches, a->sets, a->sets == 1 ? "" : "s", a->bytes / 1e6, bg::layout_name(a->layout));
    line("fused all-reduce, F32", a->fused, a->bytes);
    line("all-reduce + Draft", a->chain, a->bytes);
    line("floor: cluster launch", a->empty_cluster, 0);
    line("floor: + 3 cluster bars", a->cluster_barriers, 0);
    line("floor: its traffic", a->traffic, a->bytes);
  }
  std::fflush(stdout);
}

struct Bench {
  const Options& options;
  const DeviceInfo& dev;
  const HostInputs& inputs;
  bg::DraftBoundary& fused;
  bg::EagerChain& eager;
  bg::AllReduceBoundary& all_reduce;
  cudaStream_t stream;
  std::size_t operands;
};

// R partials (each a copy of the branch: the time does not depend on the values) and a branch
// for the all-reduce kernel's output, beside one BufferSet.
struct PartialSet {
  BufferSet base;
  std::vector<DeviceBuffer> partials;
  std::vector<bg::TensorView> views;
  DeviceBuffer branch;
  bg::TensorView branch_view;
};

PartialSet make_partial_set(const HostInputs& in, std::int64_t m, int ranks, cudaStream_t cs) {
  PartialSet p;
  p.base = make_set(in, m, cs);
  const std::vector<std::int64_t> shape = {m, kH};
  for (int r = 0; r < ranks; ++r) {
    p.partials.push_back(upload(in.f32.tensors.at("branch"), static_cast<std::size_t>(m) * kH * 2, "partial", cs));
    p.views.push_back(view(p.partials.back(), bg::Dtype::bf16, shape));
  }
  p.branch = DeviceBuffer(static_cast<std::size_t>(m) * kH * 2, "all-reduced branch");
  p.branch_view = view(p.branch, bg::Dtype::bf16, shape);
  return p;
}

void launch_all_reduce_then_draft(bg::DraftBoundary& draft, const PartialSet& p, const bg::Outputs& outputs, cudaStream_t s) {
  bg::launch_all_reduce(p.views, p.branch_view, s);
  draft.launch(p.branch_view, p.base.stream_f32_view, outputs, s);
}

// The fused all-reduce boundary must equal the all-reduce kernel + DraftBoundary before it is timed.
void check_all_reduce_bits(const Bench& b, const PartialSet& p, std::int64_t m) {
  const auto elements = static_cast<std::size_t>(m) * kH;
  const std::vector<std::int64_t> shape = {m, kH};
  const DeviceBuffer ref_out(elements * 2, "chain out"), ref_new_stream(elements * 4, "chain new_stream");
  const bg::Outputs ref = {view(ref_out, bg::Dtype::bf16, shape), view(ref_new_stream, bg::Dtype::f32, shape)};
  cuda_check(cudaMemsetAsync(p.base.out.get(), 0xFF, p.base.out.bytes(), b.stream), "cudaMemsetAsync(poison)");
  cuda_check(cudaMemsetAsync(ref_out.get(), 0x00, ref_out.bytes(), b.stream), "cudaMemsetAsync(poison)");
  b.all_reduce.run(p.views, p.base.stream_f32_view, p.base.outputs, b.stream);
  launch_all_reduce_then_draft(b.fused, p, ref, b.stream);
  cuda_check(cudaStreamSynchronize(b.stream), "checking the all-reduce boundary's bits");
  const char* reference = "the all-reduce kernel + DraftBoundary";
  compare(download<std::uint16_t>(p.base.outputs.out, elements), download<std::uint16_t>(ref.out, elements),
          "all-reduce boundary out", m, reference);
  compare(download<std::uint32_t>(p.base.outputs.new_stream, elements), download<std::uint32_t>(ref.new_stream, elements),
          "all-reduce boundary new_stream", m, reference);
}

AllReduceResult measure_all_reduce(const Bench& b, std::int64_t m) {
  AllReduceResult a;
  a.ranks = b.options.ranks;
  a.bytes = all_reduce_min_bytes(m, a.ranks, b.operands);
  a.sets = buffer_sets(m, b.dev, all_reduce_min_bytes(m, a.ranks, 0));
  const Schedule sched = schedule_for(b.options, a.sets);
  a.launches = sched.launches;
  std::vector<PartialSet> sets;
  for (int i = 0; i < a.sets; ++i) sets.push_back(make_partial_set(b.inputs, m, a.ranks, b.stream));
  a.layout = b.all_reduce.variant_for(m, StreamDtype::f32, true).layout;
  b.all_reduce.prepare(b.all_reduce.variant_for(m, StreamDtype::f32, true), b.stream);
  bg::prepare_all_reduce(b.stream);
  check_all_reduce_bits(b, sets[0], m);
  const cudaStream_t s = b.stream;
  auto set = [&](int i) -> const PartialSet& { return sets[static_cast<std::size_t>(i) % sets.size()]; };
  a.fused = time_graph(
      s, sched, [&](int i) { b.all_reduce.launch(set(i).views, set(i).base.stream_f32_view, set(i).base.outputs, s); },
      "fused all-reduce boundary");
  a.chain = time_graph(
      s, sched, [&](int i) { launch_all_reduce_then_draft(b.fused, set(i), set(i).base.outputs, s); },
      "all-reduce kernel + DraftBoundary");
  const auto grid = static_cast<unsigned>(m * 8);
  a.empty_cluster = time_graph(
      s, sched, [&](int) { launch_floor(reinterpret_cast<const void*>(empty_cluster_kernel), grid, 128, true, s, "empty cluster kernel"); },
      "empty cluster kernel");
  a.cluster_barriers = time_graph(
      s, sched,
      [&](int) { launch_floor(reinterpret_cast<const void*>(cluster_barriers_kernel), grid, 128, true, s, "cluster barriers kernel"); },
      "cluster barriers kernel");
  std::vector<TrafficParams> traffic(sets.size());
  for (std::size_t i = 0; i < sets.size(); ++i) {
    for (int r = 0; r < a.ranks; ++r) traffic[i].partials[r] = static_cast<const uint4*>(sets[i].partials[r].get());
    traffic[i].ranks = a.ranks;
    traffic[i].stream = static_cast<const float4*>(sets[i].base.stream_f32.get());
    traffic[i].out = static_cast<uint4*>(sets[i].base.out.get());
    traffic[i].new_stream = static_cast<float4*>(sets[i].base.new_stream.get());
  }
  a.traffic = time_graph(
      s, sched,
      [&](int i) {
        launch_floor(reinterpret_cast<const void*>(traffic_kernel), grid, 128, true, s, "traffic kernel",
                     &traffic[static_cast<std::size_t>(i) % traffic.size()]);
      },
      "traffic kernel");
  return a;
}

RowResult measure_rows(const Bench& b, std::int64_t m) {
  RowResult r;
  r.m = m;
  r.sets = buffer_sets(m, b.dev, min_bytes(m, StreamDtype::f32, 0));
  const Schedule sched = schedule_for(b.options, r.sets);
  r.launches = sched.launches;
  r.bytes_f32 = min_bytes(m, StreamDtype::f32, b.operands);
  r.bytes_bf16 = min_bytes(m, StreamDtype::bf16, b.operands);
  r.bytes_eager = eager_bytes(m, b.operands);

  std::vector<BufferSet> sets;
  for (int i = 0; i < r.sets; ++i) sets.push_back(make_set(b.inputs, m, b.stream));
  // Kernel attributes and scratch now: neither may be set up inside a capture.
  const bg::Variant natural = b.fused.variant_for(m, StreamDtype::f32, true);
  r.layout = natural.layout;
  bg::Variant cta = natural, cluster = natural, pair = natural, quad = natural;
  cta.layout = bg::Layout::cta;
  cluster.layout = bg::Layout::cluster;
  pair.layout = bg::Layout::pair;
  quad.layout = bg::Layout::quad;
  for (const bg::Variant& v : {cta, cluster, pair, quad}) b.fused.prepare(v, b.stream);
  b.fused.prepare(b.fused.variant_for(m, StreamDtype::bf16, true), b.stream);
  b.eager.prepare(m, b.stream);
  for (StreamDtype d : {StreamDtype::f32, StreamDtype::bf16}) check_bits(b.fused, b.eager, sets[0], m, d, b.stream, std::nullopt);
  for (const bg::Variant& v : {cta, cluster, pair, quad}) check_bits(b.fused, b.eager, sets[0], m, StreamDtype::f32, b.stream, v);

  const cudaStream_t s = b.stream;
  auto set = [&](int i) -> const BufferSet& { return sets[static_cast<std::size_t>(i) % sets.size()]; };
  r.empty_plain = time_graph(s, sched, [&](int) { launch_empty(m, false, s); }, "empty kernel");
  r.empty_pdl = time_graph(s, sched, [&](int) { launch_empty(m, true, s); }, "empty kernel + PDL");
  r.fused_f32 = time_graph(
      s, sched, [&](int i) { b.fused.launch(set(i).branch_view, set(i).stream_f32_view, set(i).outputs, s); },
      "fused, F32 stream");
  r.fused_bf16 = time_graph(
      s, sched, [&](int i) { b.fused.launch(set(i).branch_view, set(i).stream_bf16_view, set(i).outputs, s); },
      "fused, BF16 stream");
  r.eager = time_graph(
      s, sched, [&](int i) { b.eager.launch(set(i).branch_view, set(i).stream_f32_view, set(i).outputs, s); },
      "eager chain");
  r.cta_f32 = time_graph(
      s, sched, [&](int i) { b.fused.launch(set(i).branch_view, set(i).stream_f32_view, set(i).outputs, s, cta); },
      "fused, cta layout");
  r.cluster_f32 = time_graph(
      s, sched, [&](int i) { b.fused.launch(set(i).branch_view, set(i).stream_f32_view, set(i).outputs, s, cluster); },
      "fused, cluster layout");
  r.pair_f32 = time_graph(
      s, sched, [&](int i) { b.fused.launch(set(i).branch_view, set(i).stream_f32_view, set(i).outputs, s, pair); },
      "fused, pair layout");
  r.quad_f32 = time_graph(
      s, sched, [&](int i) { b.fused.launch(set(i).branch_view, set(i).stream_f32_view, set(i).outputs, s, quad); },
      "fused, quad layout");
  sets.clear();  // the all-reduce sets are bigger: free these first
  if (b.options.ranks > 0) r.all_reduce = measure_all_reduce(b, m);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Report: the table last on stdout, the same numbers as JSON

struct Target {
  std::string name;
  std::int64_t m;
  double measured, limit;
  bool pass;
};

std::vector<Target> evaluate(const std::vector<RowResult>& rows, const CopyResult& copy) {
  std::vector<Target> targets;
  for (const RowResult& r : rows) {
    if (r.m <= kLatencyTargetRows)
      targets.push_back({"fused us per boundary", r.m, r.fused_f32.median_us, kLatencyTargetUs,
                         r.fused_f32.median_us <= kLatencyTargetUs});
    if (r.m >= kCopyTargetFromRows) {
      const double share = gbps(r.bytes_f32, r.fused_f32) / copy.gbps_median();
      targets.push_back({"fused GB/s / SM copy GB/s", r.m, share, kCopyTarget, share >= kCopyTarget});
    }
    if (!r.all_reduce) continue;
    const AllReduceResult& a = *r.all_reduce;
    const double ratio = a.fused.median_us / a.chain.median_us;
    targets.push_back({"all-reduce fused / chain", r.m, ratio, kAllReduceChainTarget, ratio <= kAllReduceChainTarget});
    if (r.m == kAllReduceCopyRows) {
      const double share = gbps(a.bytes, a.fused) / copy.gbps_median();
      targets.push_back({"all-reduce fused GB/s / SM copy GB/s", r.m, share, kAllReduceCopyTarget, share >= kAllReduceCopyTarget});
    }
  }
  return targets;
}

void print_table(const std::vector<RowResult>& rows, const CopyResult& copy, const std::vector<Target>& targets) {
  std::printf("\n%6s | %8s | %7s | %12s | %13s | %8s | %11s | %9s | %11s | %10s | %13s | %11s\n", "m", "empty us",
              "layout", "fused f32 us", "fused bf16 us", "cta us", "cluster us", "eager us", "fused/empty", "fused GB/s",
              "% of SM copy", "eager/fused");
  std::printf("%s\n", std::string(147, '-').c_str());
  for (const RowResult& r : rows) {
    const double fused_gbps = gbps(r.bytes_f32, r.fused_f32);
    std::printf("%6lld | %8.2f | %7s | %12.2f | %13.2f | %8.2f | %11.2f | %9.2f | %10.3fx | %10.1f | %12.1f%% | %10.2fx\n",
                static_cast<long long>(r.m), r.empty().median_us, bg::layout_name(r.layout), r.fused_f32.median_us,
                r.fused_bf16.median_us, r.cta_f32.median_us, r.cluster_f32.median_us, r.eager.median_us,
                r.fused_f32.median_us / r.empty().median_us, fused_gbps, 100.0 * fused_gbps / copy.gbps_median(),
                r.eager.median_us / r.fused_f32.median_us);
  }
  std::printf("SM copy bandwidth: %.1f GB/s median, %.1f GB/s best (16-byte loads and stores, %.2f GiB, read + written)\n",
              copy.sm.gbps_median, copy.sm.gbps_best, static_cast<double>(copy.bytes) / (1ull << 30));
  std::printf("cudaMemcpyAsync D2D bandwidth: %.1f GB/s median, %.1f GB/s best (the same buffers; not the ceiling)\n",
              copy.memcpy.gbps_median, copy.memcpy.gbps_best);
  std::printf("medians of graph replays, us per boundary; empty = the faster of an empty kernel with and without PDL,"
              " same grid;\nGB/s on the minimum traffic (F32 stream stored: 12 B per element + gates and weights once);"
              " m < %lld L2-resident, larger m rotated from HBM\n",
              static_cast<long long>(kRotateFromRows));
  std::printf("targets: fused <= %.1f us per boundary for m <= %lld; fused >= %.0f%% of the SM copy bandwidth for m >= %lld\n",
              kLatencyTargetUs, static_cast<long long>(kLatencyTargetRows), 100 * kCopyTarget,
              static_cast<long long>(kCopyTargetFromRows));
  if (std::any_of(rows.begin(), rows.end(), [](const RowResult& r) { return r.all_reduce.has_value(); })) {
    std::printf("\nall-reduce boundary, R = %d (F32 stream stored; GB/s on R partials + stream + outputs)\n",
                rows.front().all_reduce ? rows.front().all_reduce->ranks : 0);
    std::printf("%6s | %8s | %12s | %15s | %11s | %10s | %13s | %11s\n", "m", "empty us", "fused AR us",
                "AR + Draft us", "fused/empty", "fused GB/s", "% of SM copy", "chain/fused");
    std::printf("%s\n", std::string(106, '-').c_str());
    for (const RowResult& r : rows) {
      if (!r.all_reduce) continue;
      const AllReduceResult& a = *r.all_reduce;
      std::printf("%6lld | %8.2f | %12.2f | %15.2f | %10.3fx | %10.1f | %12.1f%% | %10.2fx\n", static_cast<long long>(r.m),
                  r.empty().median_us, a.fused.median_us, a.chain.median_us, a.fused.median_us / r.empty().median_us,
                  gbps(a.bytes, a.fused), 100.0 * gbps(a.bytes, a.fused) / copy.gbps_median(),
                  a.chain.median_us / a.fused.median_us);
    }
  }
  for (const Target& t : targets)
    std::printf("  %-4s m = %-5lld %s = %.3f (%s %.2f)\n", t.pass ? "PASS" : "MISS", static_cast<long long>(t.m),
                t.name.c_str(), t.measured, t.name.find("GB/s") == std::string::npos ? "limit" : "at least", t.limit);
  if (targets.empty()) std::printf("  (no measured m falls under a target)\n");
}

nlohmann::json timing_json(const Timing& t) { return {{"median_us", t.median_us}, {"min_us", t.min_us}}; }

nlohmann::json to_json(const Options& o, const DeviceInfo& dev, const CopyResult& copy,
                       const std::vector<RowResult>& rows, const std::vector<Target>& targets) {
  nlohmann::json j;
  j["device"] = {{"name", dev.name}, {"sm_count", dev.sm_count}, {"l2_bytes", dev.l2_bytes}};
  j["constants"] = o.constants.string();
  j["method"] = {{"launches_per_graph", o.launches}, {"replays", o.replays}, {"warmup_replays", o.warmup},
                 {"seed", o.seed}, {"rotate_from_rows", kRotateFromRows}};
  const auto copy_json = [&](const CopyTiming& c) {
    return nlohmann::json{{"bytes_each_way", copy.bytes}, {"time", timing_json(c.time)}, {"gbps_median", c.gbps_median},
                          {"gbps_best", c.gbps_best}};
  };
  j["sm_copy"] = copy_json(copy.sm);
  j["memcpy_copy"] = copy_json(copy.memcpy);
  for (const RowResult& r : rows) {
    const double fused_gbps = gbps(r.bytes_f32, r.fused_f32);
    if (const auto& a = r.all_reduce)
      j["all_reduce_rows"].push_back({{"m", r.m},
                                      {"ranks", a->ranks},
                                      {"layout", bg::layout_name(a->layout)},
                                      {"buffer_sets", a->sets},
                                      {"launches_per_graph", a->launches},
                                      {"empty_us", r.empty().median_us},
                                      {"fused", timing_json(a->fused)},
                                      {"all_reduce_then_draft", timing_json(a->chain)},
                                      {"floor_empty_cluster", timing_json(a->empty_cluster)},
                                      {"floor_cluster_barriers", timing_json(a->cluster_barriers)},
                                      {"floor_traffic", timing_json(a->traffic)},
                                      {"min_bytes", a->bytes},
                                      {"fused_over_empty", a->fused.median_us / r.empty().median_us},
                                      {"fused_gbps", gbps(a->bytes, a->fused)},
                                      {"percent_of_sm_copy", 100.0 * gbps(a->bytes, a->fused) / copy.gbps_median()},
                                      {"chain_over_fused", a->chain.median_us / a->fused.median_us}});
    j["rows"].push_back({{"m", r.m},
                         {"buffer_sets", r.sets},
                         {"launches_per_graph", r.launches},
                         {"l2_resident", r.sets == 1},
                         {"empty_us", r.empty().median_us},
                         {"empty", timing_json(r.empty_plain)},
                         {"empty_pdl", timing_json(r.empty_pdl)},
                         {"fused_f32", timing_json(r.fused_f32)},
                         {"fused_bf16", timing_json(r.fused_bf16)},
                         {"eager_f32", timing_json(r.eager)},
                         {"layout", bg::layout_name(r.layout)},
                         {"cta_f32", timing_json(r.cta_f32)},
                         {"cluster_f32", timing_json(r.cluster_f32)},
                         {"pair_f32", timing_json(r.pair_f32)},
                         {"quad_f32", timing_json(r.quad_f32)},
                         {"min_bytes_f32", r.bytes_f32},
                         {"min_bytes_bf16", r.bytes_bf16},
                         {"eager_bytes", r.bytes_eager},
                         {"fused_over_empty", r.fused_f32.median_us / r.empty().median_us},
                         {"fused_gbps", fused_gbps},
                         {"fused_bf16_gbps", gbps(r.bytes_bf16, r.fused_bf16)},
                         {"eager_gbps_min_traffic", gbps(r.bytes_f32, r.eager)},
                         {"eager_traffic_ratio", r.bytes_eager / r.bytes_f32},
                         {"percent_of_sm_copy", 100.0 * fused_gbps / copy.gbps_median()},
                         {"eager_over_fused", r.eager.median_us / r.fused_f32.median_us}});
  }
  for (const Target& t : targets)
    j["targets"].push_back({{"name", t.name}, {"m", t.m}, {"measured", t.measured}, {"limit", t.limit}, {"pass", t.pass}});
  return j;
}

void write_json(const std::filesystem::path& path, const nlohmann::json& j) {
  std::ofstream f(path);
  f << j.dump(2) << "\n";
  f.close();
  if (!f) throw boundary::InputError("--json: cannot write " + path.string());
}

// ---------------------------------------------------------------------------------------------

int run(const Options& o) {
  validate(o);
  const boundary::Constants constants = boundary::read_constants(o.constants);
  if (!bg::device_available()) {
    std::fprintf(stderr, "boundary_gpu_bench: no CUDA device\n");
    return boundary::cli::kNoDevice;
  }
  const DeviceInfo dev = device_info();
  std::printf("%s: %d SMs, L2 %.1f MB; constants %s\n", dev.name.c_str(), dev.sm_count,
              static_cast<double>(dev.l2_bytes) / 1e6, o.constants.string().c_str());
  const Stream stream = make_stream();
  prepare_empty();

  // The ceiling first: it also brings the clocks up before the kernels are timed.
  const CopyResult copy = measure_copy(stream.get(), o, dev);
  std::printf("SM copy: %.1f GB/s median; cudaMemcpyAsync: %.1f GB/s (%.2f GiB, read + written)\n",
              copy.sm.gbps_median, copy.memcpy.gbps_median, static_cast<double>(copy.bytes) / (1ull << 30));
  std::fflush(stdout);

  const std::int64_t max_rows = *std::max_element(o.rows.begin(), o.rows.end());
  const HostInputs inputs = generate(constants, max_rows, o.seed);
  const DeviceOperands operands = upload_operands(inputs.f32, stream.get());
  bg::DraftBoundary fused(constants, operands.views);
  bg::EagerChain eager(constants, operands.views);
  bg::AllReduceBoundary all_reduce(constants, operands.views);
  const Bench bench{o, dev, inputs, fused, eager, all_reduce, stream.get(), operand_bytes(inputs.f32)};

  std::vector<RowResult> rows;
  for (std::int64_t m : o.rows) {
    rows.push_back(measure_rows(bench, m));
    print_row_details(rows.back(), dev);
  }
  const std::vector<Target> targets = evaluate(rows, copy);
  print_table(rows, copy, targets);
  if (o.json) write_json(*o.json, to_json(o, dev, copy, rows, targets));
  return boundary::cli::kSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace boundary::cli;
  CLI::App app{"boundary_gpu_bench: CUDA-graph timings of the fused DraftBoundary kernel against an empty kernel, "
               "the eager chain and the SM copy bandwidth"};
  Options options;
  setup_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kSuccess : kUsageOrInput;
  }
  try {
    return run(options);
  } catch (const Mismatch& e) {
    std::fprintf(stderr, "boundary_gpu_bench: refusing to time a wrong kernel: %s\n", e.what());
    return kMismatch;
  } catch (const boundary::InputError& e) {
    std::fprintf(stderr, "boundary_gpu_bench: error: %s\n", e.what());
    return kUsageOrInput;
  } catch (const bg::CudaError& e) {
    std::fprintf(stderr, "boundary_gpu_bench: CUDA error: %s\n", e.what());
    return kCudaFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "boundary_gpu_bench: internal error: %s\n", e.what());
    return kInternal;
  }
}
