// Running the GPU implementations on a bound input file: uploads, poisoned outputs, downloads,
// the device's description. Shared by capture, replay --gpu, the gate and the self-test.
#pragma once

#include <boundary/verify/boundary_tensors.hpp>
#include <boundary/gpu/device_buffer.hpp>
#include <boundary/gpu/all_reduce_boundary.hpp>
#include <boundary/gpu/draft_boundary.hpp>
#include <boundary/verify/report.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace boundary::gpu_runs {

// A bound file's operands on the device, as the views gpu::DraftBoundary and gpu::EagerChain take.
class DeviceOperands {
 public:
  DeviceOperands(const Constants& constants, const ref::Operands& operands);
  const gpu::Operands& views() const { return views_; }

 private:
  gpu::DeviceBuffer alpha_, beta_;
  std::optional<gpu::DeviceBuffer> post_weight_, pre_weight_;
  gpu::Operands views_;
};

// A bound file's branch (or rank partials) and stream on the device.
class DeviceInputs {
 public:
  explicit DeviceInputs(const BoundTensors& bound);
  std::int64_t m = 0;
  gpu::TensorView branch, stream;    // branch: data null when the file gives partials
  std::vector<gpu::TensorView> partials;

 private:
  gpu::DeviceBuffer branch_buffer_, stream_buffer_;
  std::vector<gpu::DeviceBuffer> partial_buffers_;
};

// What one implementation wrote, on the host. new_stream is empty when the stream is not stored.
struct KernelOutputs {
  std::vector<std::uint16_t> out;
  std::vector<float> new_stream;
};

// Allocates out (and new_stream when store) for m rows, fills them with 0xFF so that an element
// the kernel does not write cannot pass, runs `launch`, synchronizes and downloads.
KernelOutputs run_poisoned(std::int64_t m, bool store, const std::function<void(const gpu::Outputs&)>& launch);

// The fused kernel and the eager chain on the same inputs: for a branch, the DraftBoundary and
// the eager chain; for rank partials, the fused all-reduce boundary and the all-reduce kernel
// followed by the eager chain.
struct GpuRun {
  KernelOutputs fused, eager;
  gpu::Variant variant;
  std::string fused_name;  // "DraftBoundary", "AllReduceBoundary"
};
// late_gates: nullopt chooses as the kernel does (late above the SM count).
GpuRun run_on_gpu(const Constants& constants, const BoundTensors& bound, bool store, std::optional<bool> late_gates,
                  bool pdl);

// The variant as fixtures' metadata spell it: "stream=f32,store_stream=1,late_gates=0,pdl=1".
std::string variant_metadata(const gpu::Variant& variant);

// The device the checks run on; nullopt without one.
std::optional<report::GpuInfo> gpu_info();

}  // namespace boundary::gpu_runs
