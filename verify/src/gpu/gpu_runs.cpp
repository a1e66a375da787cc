#include <boundary/verify/gpu_runs.hpp>

#include <boundary/verify/fixture_metadata.hpp>
#include <boundary/gpu/cuda_check.hpp>
#include <boundary/gpu/weight_dtype.hpp>

#include <fstream>
#include <span>

namespace boundary::gpu_runs {

namespace {

std::optional<gpu::DeviceBuffer> upload_weight(const NormConstants& norm, const void* weight) {
  if (!norm.has_weight()) return std::nullopt;
  return gpu::DeviceBuffer(weight, kH * (norm.weight_dtype == WeightDtype::fp32 ? 4u : 2u));
}

std::string driver_version() {
  int v = 0;
  cudaDriverGetVersion(&v);
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  std::getline(f, line);
  return "CUDA driver API " + std::to_string(v) + (line.empty() ? "" : "; " + line);
}

}  // namespace

DeviceOperands::DeviceOperands(const Constants& constants, const ref::Operands& operands)
    : alpha_(operands.alpha, kH * 4),
      beta_(operands.beta, kH * 4),
      post_weight_(upload_weight(constants.post, operands.post_weight)),
      pre_weight_(upload_weight(constants.pre, operands.pre_weight)) {
  views_.alpha = alpha_.view(gpu::Dtype::f32, {kH});
  views_.beta = beta_.view(gpu::Dtype::f32, {kH});
  if (post_weight_) views_.post_weight = post_weight_->view(gpu::weight_dtype(constants.post.weight_dtype), {kH});
  if (pre_weight_) views_.pre_weight = pre_weight_->view(gpu::weight_dtype(constants.pre.weight_dtype), {kH});
}

DeviceInputs::DeviceInputs(const BoundTensors& bound) : m(bound.m) {
  const auto n = static_cast<std::size_t>(m) * kH;
  const bool f32 = bound.inputs.stream_dtype == StreamDtype::f32;
  if (bound.inputs.branch) {
    branch_buffer_ = gpu::DeviceBuffer(bound.inputs.branch, n * 2);
    branch = branch_buffer_.view(gpu::Dtype::bf16, {m, kH});
  }
  for (const std::uint16_t* rank : bound.partial_rows) {
    partial_buffers_.emplace_back(rank, n * 2);
    partials.push_back(partial_buffers_.back().view(gpu::Dtype::bf16, {m, kH}));
  }
  stream_buffer_ = gpu::DeviceBuffer(bound.inputs.stream, n * (f32 ? 4 : 2));
  stream = stream_buffer_.view(f32 ? gpu::Dtype::f32 : gpu::Dtype::bf16, {m, kH});
}

KernelOutputs run_poisoned(std::int64_t m, bool store, const std::function<void(const gpu::Outputs&)>& launch) {
  const auto n = static_cast<std::size_t>(m) * kH;
  gpu::DeviceBuffer out(n * 2), new_stream = store ? gpu::DeviceBuffer(n * 4) : gpu::DeviceBuffer();
  out.fill(0xFF);
  if (store) new_stream.fill(0xFF);
  launch(gpu::Outputs{out.view(gpu::Dtype::bf16, {m, kH}), new_stream.view(gpu::Dtype::f32, {m, kH})});
  gpu::cuda_check(cudaDeviceSynchronize(), "kernel execution");
  KernelOutputs r;
  r.out.resize(n);
  out.download(r.out.data(), n * 2);
  if (store) {
    r.new_stream.resize(n);
    new_stream.download(r.new_stream.data(), n * 4);
  }
  return r;
}

namespace {

// The fused kernel F (DraftBoundary or AllReduceBoundary) at the variant asked for, then the eager
// chain on the branch `eager_branch` gives it.
template <class Fused, class Inputs, class EagerBranch>
GpuRun run_pair(Fused& fused, const Inputs& fused_inputs, gpu::EagerChain& eager, const DeviceInputs& in,
                StreamDtype stream_dtype, bool store, std::optional<bool> late_gates, bool pdl,
                const EagerBranch& eager_branch) {
  GpuRun result;
  result.variant = fused.variant_for(in.m, stream_dtype, store, pdl);
  if (late_gates) result.variant.late_gates = *late_gates;
  fused.prepare(result.variant);
  result.fused = run_poisoned(in.m, store, [&](const gpu::Outputs& out) {
    fused.run(fused_inputs, in.stream, out, nullptr, result.variant);
  });
  result.eager = run_poisoned(in.m, store, [&](const gpu::Outputs& out) { eager.run(eager_branch(), in.stream, out, nullptr); });
  return result;
}

}  // namespace

GpuRun run_on_gpu(const Constants& constants, const BoundTensors& bound, bool store, std::optional<bool> late_gates,
                  bool pdl) {
  const DeviceOperands ops(constants, bound.operands);
  const DeviceInputs in(bound);
  gpu::EagerChain eager(constants, ops.views());
  const StreamDtype sd = bound.inputs.stream_dtype;
  if (in.partials.empty()) {
    gpu::DraftBoundary fused(constants, ops.views());
    GpuRun r = run_pair(fused, in.branch, eager, in, sd, store, late_gates, pdl, [&] { return in.branch; });
    r.fused_name = "DraftBoundary";
    return r;
  }
  gpu::AllReduceBoundary fused(constants, ops.views());
  const gpu::DeviceBuffer branch(static_cast<std::size_t>(in.m) * kH * 2);
  const gpu::TensorView branch_view = branch.view(gpu::Dtype::bf16, {in.m, kH});
  const std::span<const gpu::TensorView> partials = in.partials;
  GpuRun r = run_pair(fused, partials, eager, in, sd, store, late_gates, pdl, [&] {
    gpu::all_reduce(partials, branch_view, nullptr);
    return branch_view;
  });
  r.fused_name = "AllReduceBoundary";
  return r;
}

// The layout as the gate spells it: "cluster-balanced" for the cluster layout placed balanced.
std::string variant_metadata(const gpu::Variant& v) {
  std::string layout = gpu::layout_name(v.layout);
  if (v.layout == gpu::Layout::cluster && v.placement == gpu::ClusterPlacement::balanced) layout += "-balanced";
  return boundary::variant_metadata(v.stream, v.store_stream, v.late_gates, v.pdl, layout);
}

std::optional<report::GpuInfo> gpu_info() {
  if (!gpu::device_available()) return std::nullopt;
  cudaDeviceProp prop{};
  int device = 0, runtime = 0;
  cudaGetDevice(&device);
  cudaGetDeviceProperties(&prop, device);
  cudaRuntimeGetVersion(&runtime);
  return report::GpuInfo{prop.name, std::to_string(prop.major) + "." + std::to_string(prop.minor), driver_version(),
                         std::to_string(runtime)};
}

}  // namespace boundary::gpu_runs
