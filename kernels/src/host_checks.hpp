// What the host APIs of every kernel share: CUDA error checks, device scopes, the operand and
// tensor checks that name what is wrong, and the kernels' parameters from checked views.
#pragma once

#include "launch.hpp"

#include <boundary/gpu/cuda_check.hpp>
#include <boundary/gpu/draft_boundary.hpp>
#include <boundary/gpu/weight_dtype.hpp>

#include <cuda_runtime_api.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace boundary::gpu::detail {

// Sets the object's device for a scope and restores the caller's.
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

std::string shape_string(const std::vector<std::int64_t>& s);
// Empty when t is fine (present, dtype, shape, alignment, device memory), else why not.
std::string problem(const TensorView& t, const std::string& name, std::initializer_list<Dtype> dtypes,
                    const std::vector<std::int64_t>& shape, std::size_t alignment);
// problem() as InputError "operand ...".
void require(const TensorView& t, const std::string& name, std::initializer_list<Dtype> dtypes,
             const std::vector<std::int64_t>& shape, std::size_t alignment);
// problem() as InputError "tensor ...", 16-byte alignment.
void check_tensor(const TensorView& t, const std::string& name, std::initializer_list<Dtype> dtypes,
                  const std::vector<std::int64_t>& shape);
// The stream (F32 or BF16), out and, when stored, new_stream of a launch of `shape`.
void check_stream_and_outputs(const TensorView& stream, const Outputs& outputs, const std::vector<std::int64_t>& shape);
void check_weight(const NormConstants& norm, const std::optional<TensorView>& weight, const std::string& name);
void refuse_during_capture(cudaStream_t stream, const char* what);
void require_device(int device, const char* what);

dev::NormArgs norm_args(const NormConstants& n, const std::optional<TensorView>& w);
BoundaryParams params(const Constants& c, const Operands& o, const TensorView& branch, const TensorView& stream,
                      const Outputs& out);
StreamDtype stream_dtype(const TensorView& stream);
// A variant forced on run() must match the tensors' stream dtype and new_stream storage.
void check_variant(const std::optional<Variant>& variant, const TensorView& stream, const Outputs& outputs);

}  // namespace boundary::gpu::detail
