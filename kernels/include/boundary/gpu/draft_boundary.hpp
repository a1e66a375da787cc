// The GPU boundary's host API: the stock eager chain (contract section 6) and the fused
// DraftBoundary kernel, built once from constants and device operands, checked once, then
// launched on the caller's CUDA stream.
//
//   boundary::gpu::DraftBoundary fused(constants, operands);    // checks operands once
//   fused.prepare(variant);                                      // before CUDA graph capture
//   fused.run(branch, stream, outputs, cuda_stream);             // checks, then launches
//   fused.launch(branch, stream, outputs, cuda_stream);          // launches, no checks
#pragma once

#include <boundary/types.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace boundary::gpu {

namespace detail {
struct BoundaryParams;
class RowCounter;
}  // namespace detail
struct RowCounterWords;  // diagnostics.hpp

// A CUDA call failed: the message names the call and CUDA's error. Tools map it to exit code 3.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Dtype : std::uint8_t { bf16, f16, f32 };
const char* dtype_name(Dtype);

// A view of dense row-major device memory.
struct TensorView {
  void* data = nullptr;
  Dtype dtype = Dtype::f32;
  std::vector<std::int64_t> shape;
};

// alpha, beta: F32 [8192], 32-byte aligned. Weights: [8192] in the norm's dtype, 16-byte
// aligned (BF16/FP16) or 32-byte (FP32), present exactly when the constants give that norm a
// weight.
struct Operands {
  TensorView alpha, beta;
  std::optional<TensorView> post_weight, pre_weight;
};

// out: BF16 [m, 8192]. new_stream: F32 [m, 8192], or data == nullptr: the stream is not stored.
struct Outputs {
  TensorView out;
  TensorView new_stream;
};

// How a fused boundary lays rows out on the GPU; the bits never depend on it (contract section 8),
// only the time does. Every layout has one 8-column fragment a thread.
// - cta: a persistent grid of one CTA of 1024 threads per SM, rows strided over the CTAs; each CTA
//   loads its gates and weights once and streams its rows through a ring of shared-memory stages
//   that bulk copies fill. DraftBoundary only (R partials do not fit its stages). Above a number of
//   rows a CTA (HandoutThresholds), each CTA's rows after its first ones are handed out at run
//   time by a counter of the object's (see BoundaryBase), so that an SM that streams faster takes
//   more of them.
// - pair, quad: the same on clusters of 2 (4) CTAs of 512 (256) threads, each CTA a half (a
//   quarter) of every row of its cluster, the row sums completed across the cluster; two clusters'
//   CTAs share an SM. The all-reduce boundary's quad (R partials) hands its rows out likewise above
//   a number of rows a cluster, its leader CTA taking them for the cluster.
// - cluster: one row per cluster of 8 CTAs of 128 threads, not persistent (m clusters): the
//   shortest latency for a few rows.
enum class Layout : std::uint8_t { cta, cluster, pair, quad };
inline constexpr Layout kAllLayouts[] = {Layout::cta, Layout::cluster, Layout::pair, Layout::quad};
const char* layout_name(Layout);

// Where the hardware places the cluster layout's clusters (its launch's cluster scheduling policy;
// the kernel, its grid and which CTA computes which row are the same, and so are the bits): spread,
// each cluster's 8 CTAs on 8 SMs (124 clusters resident at once on an H100: 8 of its 132 SMs take
// none); balanced (CUDA's load balancing), CTAs of a cluster may share an SM, and every SM takes
// clusters (132 resident on an H100). The other layouts ignore it.
enum class ClusterPlacement : std::uint8_t { spread, balanced };
const char* placement_name(ClusterPlacement);

// The dispatch's rules (src/dispatch.cpp, with the measurements behind them) as functions of what
// a device reports: its SM count, and the cluster layout's resident clusters placed spread and
// placed balanced (one wave each). The objects ask their device once and apply them; as plain
// functions they are checked without a GPU (kernels/tests/test_dispatch.cpp).
struct ClusterWaves {
  std::int64_t spread = 0;
  std::int64_t balanced = 0;
};
// The DraftBoundary's layout for m rows: cluster while the rows fit one wave (the larger of the
// two) and from above the SM count up to 3/2 of it; cta otherwise.
Layout draft_boundary_layout(std::int64_t m, std::int64_t sm_count, const ClusterWaves& waves);
// The all-reduce boundary's: cluster up to twice the SM count, quad above.
Layout all_reduce_layout(std::int64_t m, std::int64_t sm_count);
// Balanced for the cluster layout's rows where that holds them in one wave and spread needs all
// of its wave or more (spread <= m <= balanced, where balanced > spread); spread otherwise, and
// for every other layout.
ClusterPlacement cluster_placement(std::int64_t m, Layout layout, const ClusterWaves& waves);

// Where the persistent layouts hand their rows out at run time instead of dividing them
// statically: above this many rows a resident CTA (the cta layout, by the stream's dtype) or a
// resident cluster (the all-reduce boundary's quad, R partials); 0: never. The bits never depend
// on them, only the time. An object starts from handout_thresholds_for(its device), what was
// measured fastest on that device model; set_handout_thresholds changes them for one object (to
// time other thresholds, boundary_gpu_bench --handout, or to test a build that the device's
// defaults never launch).
struct HandoutThresholds {
  std::int64_t cta_f32 = 0;
  std::int64_t cta_bf16 = 0;
  std::int64_t quad = 0;
  friend bool operator==(const HandoutThresholds&, const HandoutThresholds&) = default;
};
// The measured thresholds for a device: an H100's (its name says "H100"), else the H200's, on
// which the project's targets are set (draft_boundary.cpp has the figures). Throws CudaError.
HandoutThresholds handout_thresholds_for(int device);

// Everything that selects a compiled kernel or a launch configuration. late_gates: gates and
// weights are loaded after the PDL wait (never chosen by variant_for, which loads them early,
// measured faster at every m: draft_boundary.cpp).
struct Variant {
  StreamDtype stream = StreamDtype::f32;
  bool store_stream = true;
  bool late_gates = false;
  bool pdl = true;
  Layout layout = Layout::cta;
  ClusterPlacement placement = ClusterPlacement::spread;
};

// Device memory owned by the caller of run(branch, stream, cuda_stream).
struct OwnedOutputs {
  OwnedOutputs() = default;
  OwnedOutputs(OwnedOutputs&&) noexcept;
  OwnedOutputs& operator=(OwnedOutputs&&) noexcept;
  OwnedOutputs(const OwnedOutputs&) = delete;
  OwnedOutputs& operator=(const OwnedOutputs&) = delete;
  ~OwnedOutputs();
  Outputs views;
};

// What both implementations share: the checked constants and operands. The operands are views
// (not owned) and must outlive the object. With early gates (variant_for's choice at every m)
// they are read before the PDL wait: a kernel just before the boundary must not write them.
//
// One launch of an object at a time: launches above its hand-out thresholds (HandoutThresholds)
// take rows from a counter in device memory that the object owns (copies of the object share it),
// and two such launches running at once on two streams would share it. Each launch
// carries its own tag, and a kernel that meets another launch's tag traps (the launch fails, and
// with it the CUDA context): use one object per concurrent stream. Launches in one stream, PDL and CUDA
// graphs included, are fine, provided that a kernel between two of them that is itself launched
// with PDL waits for its predecessor (griddepcontrol.wait), as any reader of the boundary's
// outputs must. Construct objects outside a CUDA graph capture (the counter is zeroed
// synchronously), and keep them alive, and unassigned, as long as a graph that launches them.
class BoundaryBase {
 public:
  // Throws InputError naming the operand: missing, wrong shape [8192], dtype or alignment,
  // a weight the constants do not expect. Throws CudaError if there is no device.
  BoundaryBase(const Constants& constants, const Operands& operands);
  virtual ~BoundaryBase() = default;

  // Whether this boundary can take these inputs: branch BF16 [m, 8192] (m >= 1), stream F32 or
  // BF16 of its shape, both 16-byte aligned device memory.
  bool takes(const TensorView& branch, const TensorView& stream) const;
  // The same, throwing InputError that names the tensor and what was expected; outputs too.
  void check(const TensorView& branch, const TensorView& stream, const Outputs& outputs) const;

  // The variant a launch of m rows uses: early gates, the layout from layout_for(m), the cluster
  // layout's rows placed by cluster_placement (balanced from the spread wave to the balanced one). Virtual:
  // the all-reduce boundary has its own, and a call through BoundaryBase& must pick the object's.
  virtual Variant variant_for(std::int64_t m, StreamDtype stream, bool store_stream, bool pdl = true) const;
  // The faster layout for m rows on this device, as boundary_gpu_bench measured it on the H200 and
  // an H100: docs/benchmarks.md has every layout at each m.
  Layout layout_for(std::int64_t m) const;
  int sm_count() const { return sm_count_; }
  // Clusters of this object's cluster layout resident at once on this device, placed so: one
  // wave of its rows (the DraftBoundary's one-rank build; the all-reduce boundary's R-rank build).
  // layout_for leaves the layout above the balanced wave, and variant_for places the rows balanced
  // from the spread wave to the balanced one.
  int max_active_clusters(ClusterPlacement placement = ClusterPlacement::spread) const {
    return static_cast<int>(placement == ClusterPlacement::spread ? waves_.spread : waves_.balanced);
  }
  // Both waves, as cluster_placement takes them.
  const ClusterWaves& cluster_waves() const { return waves_; }
  const HandoutThresholds& handout_thresholds() const { return handout_; }
  // Throws InputError naming the field when one is negative.
  void set_handout_thresholds(const HandoutThresholds& t);
  const Constants& constants() const { return constants_; }

 protected:
  // The kernel parameters of one launch: the tensors, the constants and operands, the SM count
  // and the row counter with a fresh tag.
  detail::BoundaryParams boundary_params(const TensorView& branch, const TensorView& stream, const Outputs& outputs) const;
  // Asks the device for the two waves of the cluster layout's one-rank or R-rank build
  // (max_active_clusters); throws CudaError.
  void query_waves(bool one_rank);
  // cluster_placement on this object's waves.
  ClusterPlacement placement_for(std::int64_t m, Layout layout) const;

  Constants constants_;
  Operands operands_;
  int device_ = 0;
  int sm_count_ = 0;
  ClusterWaves waves_;  // of this object's cluster layout build (query_waves)
  HandoutThresholds handout_;
  std::shared_ptr<detail::RowCounter> row_counter_;

  // For the test that a foreign tag traps (boundary/gpu/diagnostics.hpp).
  friend void occupy_row_counter(const BoundaryBase& b, std::uint32_t foreign_tag);
  friend RowCounterWords row_counter_words(const BoundaryBase& b);
};

class DraftBoundary : public BoundaryBase {
 public:
  using BoundaryBase::BoundaryBase;

  // Readies a variant (loads its kernel) so that it can be launched inside a CUDA graph
  // capture. Refused with InputError while `stream` captures, or any blocking stream (seen
  // through the legacy default stream). Pass the stream you capture on: a capture on another
  // non-blocking stream cannot be seen from here.
  void prepare(const Variant& variant, cudaStream_t stream = nullptr);

  void run(const TensorView& branch, const TensorView& stream, const Outputs& outputs,
           cudaStream_t cuda_stream, std::optional<Variant> variant = std::nullopt);
  OwnedOutputs run(const TensorView& branch, const TensorView& stream, cudaStream_t cuda_stream,
                   bool store_stream = true);
  // No checks: the caller guarantees what run() checks, on the device the object was built on.
  // variant defaults to variant_for(m, ...).
  void launch(const TensorView& branch, const TensorView& stream, const Outputs& outputs,
              cudaStream_t cuda_stream, std::optional<Variant> variant = std::nullopt);
};

// The stock eager chain (contract section 6): the single-tile norm kernel on the branch, the
// connection kernel, the norm kernel on z. Scratch buffers (y_b, z) grow with m and are kept.
class EagerChain : public BoundaryBase {
 public:
  using BoundaryBase::BoundaryBase;
  EagerChain(const EagerChain&) = delete;
  EagerChain& operator=(const EagerChain&) = delete;
  ~EagerChain();

  // Allocates scratch for m rows ahead of a CUDA graph capture; refused during one, as
  // DraftBoundary::prepare.
  void prepare(std::int64_t max_rows, cudaStream_t stream = nullptr);
  void run(const TensorView& branch, const TensorView& stream, const Outputs& outputs,
           cudaStream_t cuda_stream);
  // No checks but one: m must not exceed the rows prepared (its own scratch).
  void launch(const TensorView& branch, const TensorView& stream, const Outputs& outputs,
              cudaStream_t cuda_stream);

 private:
  void* y_b_ = nullptr;
  void* z_ = nullptr;
  std::int64_t scratch_rows_ = 0;
};

// Whether a CUDA device is present (tests skip, tools exit 77, without one).
bool device_available();

}  // namespace boundary::gpu
