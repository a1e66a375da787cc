#include "host_checks.hpp"

#include <sstream>

namespace boundary::gpu::detail {

DeviceScope::DeviceScope(int device) {
  cuda_check(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) cuda_check(cudaSetDevice(device), "cudaSetDevice");
}
DeviceScope::~DeviceScope() { cudaSetDevice(previous_); }

std::string shape_string(const std::vector<std::int64_t>& s) {
  std::ostringstream o;
  o << "[";
  for (std::size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  o << "]";
  return o.str();
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

BoundaryParams params(const Constants& c, const Operands& o, const TensorView& branch, const TensorView& stream,
                              const Outputs& out) {
  BoundaryParams p{};
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

void check_stream_and_outputs(const TensorView& stream, const Outputs& outputs, const std::vector<std::int64_t>& shape) {
  check_tensor(stream, "stream", {Dtype::f32, Dtype::bf16}, shape);
  check_tensor(outputs.out, "out", {Dtype::bf16}, shape);
  if (outputs.new_stream.data) check_tensor(outputs.new_stream, "new_stream", {Dtype::f32}, shape);
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


void check_variant(const std::optional<Variant>& variant, const TensorView& stream, const Outputs& outputs) {
  if (variant && (variant->stream != stream_dtype(stream) || variant->store_stream != (outputs.new_stream.data != nullptr)))
    throw InputError("variant does not match the tensors: stream dtype or new_stream storage differs");
}

}  // namespace boundary::gpu::detail
