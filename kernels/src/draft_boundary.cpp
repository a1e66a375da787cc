// The host API: checks once, launches many times.
#include "host_checks.hpp"
#include "launch.hpp"
#include "row_counter.hpp"

#include <boundary/gpu/draft_boundary.hpp>

#include <cuda_runtime_api.h>

#include <sstream>
#include <string>
#include <string_view>

namespace boundary::gpu {

using namespace detail;

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::bf16: return "BF16";
    case Dtype::f16: return "F16";
    case Dtype::f32: return "F32";
  }
  return "?";
}

bool device_available() {
  int n = 0;
  const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  cudaGetLastError();
  return ok;
}

OwnedOutputs::OwnedOutputs(OwnedOutputs&& o) noexcept : views(o.views) { o.views = {}; }
OwnedOutputs& OwnedOutputs::operator=(OwnedOutputs&& o) noexcept {
  std::swap(views, o.views);
  return *this;
}
OwnedOutputs::~OwnedOutputs() {
  cudaFree(views.out.data);
  cudaFree(views.new_stream.data);
}

BoundaryBase::BoundaryBase(const Constants& constants, const Operands& operands)
    : constants_(constants), operands_(operands) {
  cuda_check(cudaGetDevice(&device_), "cudaGetDevice");
  cuda_check(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_), "cudaDeviceGetAttribute");
  query_waves(true);
  require(operands.alpha, "alpha", {Dtype::f32}, {kH}, 32);
  require(operands.beta, "beta", {Dtype::f32}, {kH}, 32);
  check_weight(constants.post, operands.post_weight, "post_weight");
  check_weight(constants.pre, operands.pre_weight, "pre_weight");
  handout_ = handout_thresholds_for(device_);
  row_counter_ = std::make_shared<RowCounter>();
}

// Measured by boundary_gpu_bench, the kernels with one threshold against those with another in one
// device call (builds side by side on 2026-12-05, verify/bench/ab_bench.sh on 2026-12-06), us, F32
// stream stored unless said.
// - cta layout: handed out above 12 rows a CTA with an F32 stream on both models. H200, 2026-12-05
//   about 01:55 UTC, static / handed out (the ticket then taken at the refill): m = 1024 30.08 /
//   32.22, 2048 57.95 / 56.30, 4096 111.36 / 104.41, 8192 213.11 / 200.24 (7.8, 15.5, 31 and 62
//   rows a CTA on 132 SMs); H100, 2026-12-06, from 6 rows a CTA at m = 1024: 37.42 -> 37.63
//   in one call, 38.25 -> 37.65 in another, and the all-reduce kernel followed by it 88.9 -> 90.9.
// - cta layout, BF16 stream: above 24 rows a CTA on the H200 (the same call of 2026-12-05: m = 2048
//   48.68 / 51.74, 4096 94.87 / 94.14, 8192 183.43 / 180.62), above 12 on the H100 (three calls
//   of 2026-12-06, 24 -> 12: m = 2048 64.47 -> 60.26, 64.74 -> 60.12, 65.14 -> 61.42; 3072 95.41
//   -> 88.24, 96.46 -> 90.33; m = 1024 from 6: 31.44 -> 32.37). Not measured on the H200 since
//   the ticket is taken when a row begins (2026-12-06), which made its BF16 stream at m = 8192
//   5% faster.
// - the all-reduce boundary's quad (R = 8): rows handed out above 32 a cluster on the H100 (two
//   calls of 2026-12-06, static / handed out, the leader pushing the ticket it took a row
//   earlier: m = 2048 147.93 / 146.77, 150.31 / 148.18; 3072 218.92 / 215.65, 223.21 / 217.60;
//   8192 581.53 / 560.37, 594.85 / 566.73, against chains of 659.6 and 671.5: 0.850x and 0.844x).
//   Never on the H200: there the hand-out with the ticket pushed in the row it was taken took
//   485.51 us at m = 8192 where the static quad had taken 418.52 (two calls of 2026-12-06), and
//   with the ticket taken a row earlier, from 12 or 24 rows a cluster, 438.87 / 439.20 against
//   418.59 static (one call, 2026-12-06 about 20:27 UTC).
HandoutThresholds handout_thresholds_for(int device) {
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  if (std::string_view(prop.name).find("H100") != std::string_view::npos) return {12, 12, 32};
  return {12, 24, 0};
}

void BoundaryBase::set_handout_thresholds(const HandoutThresholds& t) {
  const auto refuse = [](const char* field, std::int64_t v) {
    throw InputError("HandoutThresholds::" + std::string(field) + " is " + std::to_string(v) +
                     ": expected rows a resident CTA or cluster >= 1, or 0 (never)");
  };
  if (t.cta_f32 < 0) refuse("cta_f32", t.cta_f32);
  if (t.cta_bf16 < 0) refuse("cta_bf16", t.cta_bf16);
  if (t.quad < 0) refuse("quad", t.quad);
  handout_ = t;
}

BoundaryParams BoundaryBase::boundary_params(const TensorView& branch, const TensorView& stream,
                                             const Outputs& outputs) const {
  BoundaryParams p = params(constants_, operands_, branch, stream, outputs);
  p.ctas = sm_count_;
  p.handout = row_counter_->next_launch();
  p.handout_above = handout_;
  return p;
}

bool BoundaryBase::takes(const TensorView& branch, const TensorView& stream) const {
  if (branch.shape.size() != 2 || branch.shape[0] < 1) return false;
  const std::vector<std::int64_t> shape = {branch.shape[0], kH};
  return problem(branch, "branch", {Dtype::bf16}, shape, 16).empty() &&
         problem(stream, "stream", {Dtype::f32, Dtype::bf16}, shape, 16).empty();
}

void BoundaryBase::check(const TensorView& branch, const TensorView& stream, const Outputs& outputs) const {
  if (branch.shape.size() != 2 || branch.shape[0] < 1 || branch.shape[1] != kH)
    throw InputError("input 'branch' has shape " + shape_string(branch.shape) + ", expected [m, 8192] with m >= 1");
  const std::vector<std::int64_t> shape = {branch.shape[0], kH};
  check_tensor(branch, "branch", {Dtype::bf16}, shape);
  check_stream_and_outputs(stream, outputs, shape);
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::cta: return "cta";
    case Layout::cluster: return "cluster";
    case Layout::pair: return "pair";
    case Layout::quad: return "quad";
  }
  return "?";
}

const char* placement_name(ClusterPlacement p) {
  return p == ClusterPlacement::spread ? "spread" : "balanced";
}

// Early gates at every m. Measured against late gates above the SM count (issue 3's rule before
// 2026-12-06), boundary_gpu_bench --gates late / early, F32 stream stored, us: H200 (one call),
// cta m = 1024 30.10 / 28.57, 2048 55.60 / 54.15, 8192 202.25 / 200.23 (BF16 stream 25.64 / 24.65
// at 1024), the all-reduce boundary (R = 8, quad) m = 1024 58.41 / 56.24, 8192 420.66 / 418.52;
// H100 (another call), the cluster layout at m = 160 6.76 / 6.37, the all-reduce boundary's
// cluster layout (R = 8) at m = 160 / 200 / 264 11.09 / 10.41, 15.64 / 15.21, 21.88 / 21.26. A
// CTA loaded early takes its gates while the previous grid ends instead of beside its rows.
Variant BoundaryBase::variant_for(std::int64_t m, StreamDtype stream, bool store_stream, bool pdl) const {
  const Layout layout = layout_for(m);
  return Variant{stream, store_stream, false, pdl, layout, placement_for(m, layout)};
}

ClusterPlacement BoundaryBase::placement_for(std::int64_t m, Layout layout) const {
  return cluster_placement(m, layout, waves_);
}

void BoundaryBase::query_waves(bool one_rank) {
  int spread = 0, balanced = 0;
  cuda_check(detail::max_active_clusters(ClusterPlacement::spread, one_rank, &spread), "cudaOccupancyMaxActiveClusters");
  cuda_check(detail::max_active_clusters(ClusterPlacement::balanced, one_rank, &balanced),
             "cudaOccupancyMaxActiveClusters");
  waves_ = {spread, balanced};
}

Layout BoundaryBase::layout_for(std::int64_t m) const { return draft_boundary_layout(m, sm_count_, waves_); }

void DraftBoundary::prepare(const Variant& variant, cudaStream_t stream) {
  refuse_during_capture(stream, "DraftBoundary::prepare");
  const DeviceScope scope(device_);
  cuda_check(detail::prepare_draft_boundary(variant), "preparing the DraftBoundary kernel");
}

void DraftBoundary::run(const TensorView& branch, const TensorView& stream, const Outputs& outputs,
                        cudaStream_t cuda_stream, std::optional<Variant> variant) {
  require_device(device_, "DraftBoundary::run");
  check(branch, stream, outputs);
  check_variant(variant, stream, outputs);
  launch(branch, stream, outputs, cuda_stream, variant);
}

OwnedOutputs DraftBoundary::run(const TensorView& branch, const TensorView& stream, cudaStream_t cuda_stream,
                                bool store_stream) {
  if (branch.shape.size() != 2 || branch.shape[0] < 1)
    throw InputError("input 'branch' has shape " + shape_string(branch.shape) + ", expected [m, 8192] with m >= 1");
  const std::int64_t m = branch.shape[0];
  OwnedOutputs o;
  o.views.out = {nullptr, Dtype::bf16, {m, kH}};
  cuda_check(cudaMalloc(&o.views.out.data, static_cast<std::size_t>(m) * kH * 2), "cudaMalloc(out)");
  o.views.new_stream = {nullptr, Dtype::f32, {m, kH}};
  if (store_stream)
    cuda_check(cudaMalloc(&o.views.new_stream.data, static_cast<std::size_t>(m) * kH * 4), "cudaMalloc(new_stream)");
  run(branch, stream, o.views, cuda_stream);
  return o;
}

void DraftBoundary::launch(const TensorView& branch, const TensorView& stream, const Outputs& outputs,
                           cudaStream_t cuda_stream, std::optional<Variant> variant) {
  const std::int64_t m = branch.shape[0];
  const Variant v = variant ? *variant : variant_for(m, stream_dtype(stream), outputs.new_stream.data != nullptr);
  cuda_check(detail::launch_draft_boundary(boundary_params(branch, stream, outputs), m, v, cuda_stream),
             "launching the DraftBoundary kernel");
}

EagerChain::~EagerChain() {
  cudaFree(y_b_);
  cudaFree(z_);
}

void EagerChain::prepare(std::int64_t max_rows, cudaStream_t stream) {
  refuse_during_capture(stream, "EagerChain::prepare");
  const DeviceScope scope(device_);
  cuda_check(detail::prepare_eager(), "preparing the eager kernels");
  if (max_rows <= scratch_rows_) return;
  cudaFree(y_b_);
  cudaFree(z_);
  y_b_ = z_ = nullptr;
  scratch_rows_ = 0;
  const std::size_t bytes = static_cast<std::size_t>(max_rows) * kH * 2;
  cuda_check(cudaMalloc(&y_b_, bytes), "cudaMalloc(y_b scratch)");
  cuda_check(cudaMalloc(&z_, bytes), "cudaMalloc(z scratch)");
  scratch_rows_ = max_rows;
}

void EagerChain::run(const TensorView& branch, const TensorView& stream, const Outputs& outputs, cudaStream_t cuda_stream) {
  require_device(device_, "EagerChain::run");
  check(branch, stream, outputs);
  if (branch.shape[0] > scratch_rows_) prepare(branch.shape[0], cuda_stream);
  launch(branch, stream, outputs, cuda_stream);
}

void EagerChain::launch(const TensorView& branch, const TensorView& stream, const Outputs& outputs, cudaStream_t cuda_stream) {
  const std::int64_t m = branch.shape[0];
  // The scratch is this object's own memory, not the caller's guarantee: never write past it.
  if (m > scratch_rows_)
    throw InputError("EagerChain::launch: " + std::to_string(m) + " rows, but scratch was prepared for " +
                     std::to_string(scratch_rows_) + ": call prepare(" + std::to_string(m) + ") first");
  const detail::BoundaryParams p = params(constants_, operands_, branch, stream, outputs);
  auto* y_b = static_cast<std::uint16_t*>(y_b_);
  auto* z = static_cast<std::uint16_t*>(z_);
  cuda_check(detail::launch_norm(p.branch, y_b, p.post, m, cuda_stream), "launching the post norm kernel");
  cuda_check(detail::launch_connection(p, y_b, z, m, stream_dtype(stream), cuda_stream), "launching the connection kernel");
  cuda_check(detail::launch_norm(z, p.out, p.pre, m, cuda_stream), "launching the pre norm kernel");
}

}  // namespace boundary::gpu
