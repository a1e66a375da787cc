// The host API: checks once, launches many times.
#include "host_checks.hpp"
#include "launch.hpp"

#include <boundary/gpu/draft_boundary.hpp>

#include <cuda_runtime_api.h>

#include <sstream>
#include <string>

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
  require(operands.alpha, "alpha", {Dtype::f32}, {kH}, 32);
  require(operands.beta, "beta", {Dtype::f32}, {kH}, 32);
  check_weight(constants.post, operands.post_weight, "post_weight");
  check_weight(constants.pre, operands.pre_weight, "pre_weight");
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

Variant BoundaryBase::variant_for(std::int64_t m, StreamDtype stream, bool store_stream, bool pdl) const {
  return Variant{stream, store_stream, m > sm_count_, pdl, layout_for(m)};
}

// From boundary_gpu_bench on the H200 (2026-12-03 19:50 UTC, F32 stream stored, us, with warp
// totals crossing CTAs): the cluster layout up to m = 32 (1.66 / 1.75 / 2.31 at m = 1 / 8 / 32;
// quad 2.35 / 2.39 / 3.03, pair 2.83 / 2.88 / 3.00, cta 3.62 / 3.72 / 3.86), pair at m = 132 (5.11;
// cta 5.23, cluster 5.37), cta from m = 1024 (31.16 / 214.58 at m = 1024 / 8192; pair 31.24 /
// 216.48).
Layout BoundaryBase::layout_for(std::int64_t m) const {
  if (m <= 32) return Layout::cluster;
  return m <= 2 * sm_count_ ? Layout::pair : Layout::cta;
}

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
  detail::BoundaryParams p = params(constants_, operands_, branch, stream, outputs);
  p.ctas = sm_count_;
  cuda_check(detail::launch_draft_boundary(p, m, v, cuda_stream),
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
