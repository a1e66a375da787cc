// The host API: checks once, launches many times.
#include "launch.hpp"

#include <boundary/gpu/draft_boundary.hpp>

#include <cuda_runtime_api.h>

#include <sstream>
#include <string>

namespace boundary::gpu {

namespace {

void cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // a reported error must not resurface in the next launch's check
  throw CudaError(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// Sets the object's device for a scope and restores the caller's.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    cuda_check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) cuda_check(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceScope() { cudaSetDevice(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

std::string shape_string(const std::vector<std::int64_t>& s) {
  std::ostringstream o;
  o << "[";
  for (std::size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  o << "]";
  return o.str();
}

Dtype weight_dtype(WeightDtype d) {
  return d == WeightDtype::bf16 ? Dtype::bf16 : d == WeightDtype::fp16 ? Dtype::f16 : Dtype::f32;
}

// Empty when fine, else why not.
std::string problem(const TensorView& t, const std::string& name, std::initializer_list<Dtype> dtypes,
                    const std::vector<std::int64_t>& shape, std::size_t alignment) {
  if (t.data == nullptr) return "'" + name + "' is missing (null data)";
  bool dtype_ok = false;
  std::string allowed;
  for (Dtype d : dtypes) {
    dtype_ok |= d == t.dtype;
    allowed += (allowed.empty() ? "" : " or ") + std::string(dtype_name(d));
  }
  if (!dtype_ok) return "'" + name + "' has dtype " + dtype_name(t.dtype) + ", expected " + allowed;
  if (t.shape != shape)
    return "'" + name + "' has shape " + shape_string(t.shape) + ", expected " + shape_string(shape);
  if (reinterpret_cast<std::uintptr_t>(t.data) % alignment != 0)
    return "'" + name + "' is not " + std::to_string(alignment) + "-byte aligned";
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, t.data) != cudaSuccess || (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)) {
    cudaGetLastError();  // clear the sticky-free error of a failed query
    return "'" + name + "' is not device memory";
  }
  return {};
}

void require(const TensorView& t, const std::string& name, std::initializer_list<Dtype> dtypes,
             const std::vector<std::int64_t>& shape, std::size_t alignment) {
  const std::string p = problem(t, name, dtypes, shape, alignment);
  if (!p.empty()) throw InputError("operand " + p);
}

dev::NormArgs norm_args(const NormConstants& n, const std::optional<TensorView>& w) {
  dev::NormArgs a{};
  a.weight = n.has_weight() ? w->data : nullptr;
  a.kind = !n.has_weight() ? dev::WeightKind::none
           : n.weight_dtype == WeightDtype::bf16 ? dev::WeightKind::bf16
           : n.weight_dtype == WeightDtype::fp16 ? dev::WeightKind::fp16
                                                 : dev::WeightKind::fp32;
  a.gain = n.has_weight() ? static_cast<float>(*n.gain_center) : 0.0f;
  a.eps = static_cast<float>(n.eps);
  a.input_scale = n.input_scale;
  a.fma_squares = n.fma_squares;
  return a;
}

detail::BoundaryParams params(const Constants& c, const Operands& o, const TensorView& branch, const TensorView& stream,
                              const Outputs& out) {
  detail::BoundaryParams p{};
  p.branch = static_cast<const std::uint16_t*>(branch.data);
  p.stream = stream.data;
  p.out = static_cast<std::uint16_t*>(out.out.data);
  p.new_stream = static_cast<float*>(out.new_stream.data);
  p.alpha = static_cast<const float*>(o.alpha.data);
  p.beta = static_cast<const float*>(o.beta.data);
  p.post = norm_args(c.post, o.post_weight);
  p.pre = norm_args(c.pre, o.pre_weight);
  return p;
}

StreamDtype stream_dtype(const TensorView& stream) {
  return stream.dtype == Dtype::bf16 ? StreamDtype::bf16 : StreamDtype::f32;
}

void check_weight(const NormConstants& norm, const std::optional<TensorView>& weight, const std::string& name) {
  if (!norm.has_weight()) {
    if (weight.has_value())
      throw InputError("operand '" + name + "' is given, but the constants give this norm no weight");
    return;
  }
  if (!weight.has_value()) throw InputError("operand '" + name + "' is missing: the constants give this norm a weight");
  const Dtype d = weight_dtype(norm.weight_dtype);
  require(*weight, name, {d}, {kH}, d == Dtype::f32 ? 32 : 16);
}

void check_tensor(const TensorView& t, const std::string& name, std::initializer_list<Dtype> dtypes,
                  const std::vector<std::int64_t>& shape) {
  const std::string p = problem(t, name, dtypes, shape, 16);
  if (!p.empty()) throw InputError("tensor " + p);
}

void refuse_during_capture(cudaStream_t stream, const char* what) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t e = cudaStreamIsCapturing(stream, &status);
  // The legacy stream answers "implicit" while a blocking stream captures: a capture too.
  if (e == cudaErrorStreamCaptureImplicit || (e == cudaSuccess && status != cudaStreamCaptureStatusNone)) {
    cudaGetLastError();
    throw InputError(std::string(what) + " during a CUDA graph capture: prepare before capturing");
  }
  cuda_check(e, "cudaStreamIsCapturing");
}

void require_device(int device, const char* what) {
  int current = -1;
  cuda_check(cudaGetDevice(&current), "cudaGetDevice");
  if (current != device)
    throw InputError(std::string(what) + ": the current device is " + std::to_string(current) +
                     ", the boundary's operands are on device " + std::to_string(device));
}

}  // namespace

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
  check_tensor(stream, "stream", {Dtype::f32, Dtype::bf16}, shape);
  check_tensor(outputs.out, "out", {Dtype::bf16}, shape);
  if (outputs.new_stream.data) check_tensor(outputs.new_stream, "new_stream", {Dtype::f32}, shape);
}

Variant BoundaryBase::variant_for(std::int64_t m, StreamDtype stream, bool store_stream, bool pdl) const {
  return Variant{stream, store_stream, m > sm_count_, pdl};
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
  if (variant && (variant->stream != stream_dtype(stream) || variant->store_stream != (outputs.new_stream.data != nullptr)))
    throw InputError("variant does not match the tensors: stream dtype or new_stream storage differs");
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
  p.prefetch_distance = sm_count_;
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
