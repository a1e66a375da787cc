// The gate's GPU half: each implementation on bound rows (eager chain, fused variants, a CUDA
// graph replay, the all-reduce boundary on the rows' rank partials or its branch as one rank, R
// rank processes), the fused kernels' debug builds with their intermediates, and the planted bugs.
#include "multi_process_run.hpp"

#include <boundary/verify/gate.hpp>
#include <boundary/gpu/all_reduce_boundary.hpp>
#include <boundary/gpu/cuda_check.hpp>
#include <boundary/gpu/diagnostics.hpp>
#include <boundary/verify/gpu_runs.hpp>

#include <cuda_runtime_api.h>

#include <cstring>
#include <functional>
#include <span>

namespace boundary::cli {

namespace st = safetensors;

namespace {

using gpu::cuda_check;

// A producer slow enough that a boundary reading its branch before griddepcontrol.wait reads the
// poisoned buffer, not the copy.
constexpr unsigned kProducerDelayNs = 100'000;

gpu::Layout gpu_layout(GateVariant::Layout l) {
  switch (l) {
    case GateVariant::Layout::cluster:
    case GateVariant::Layout::cluster_balanced: return gpu::Layout::cluster;
    case GateVariant::Layout::pair: return gpu::Layout::pair;
    case GateVariant::Layout::quad: return gpu::Layout::quad;
    case GateVariant::Layout::cta: break;
  }
  return gpu::Layout::cta;
}

gpu::ClusterPlacement gpu_placement(GateVariant::Layout l) {
  return l == GateVariant::Layout::cluster_balanced ? gpu::ClusterPlacement::balanced : gpu::ClusterPlacement::spread;
}

gpu::Variant launch_variant(const GateVariant& v, const gpu::DraftBoundary& b, const BoundTensors& bound) {
  if (v.kind == GateVariant::Kind::graph) return b.variant_for(bound.m, bound.inputs.stream_dtype, true, true);
  return gpu::Variant{bound.inputs.stream_dtype, v.store, v.late_gates, v.pdl, gpu_layout(v.layout),
                      gpu_placement(v.layout)};
}

// The all-reduce boundary's variant: its own choice for the rows (variant_for), but the layout and
// late gates a variant asks for (the gate's "all-reduce" asks for neither: cta means its choice,
// since it has no cta layout).
gpu::Variant all_reduce_variant(const GateVariant& v, const gpu::AllReduceBoundary& b, const BoundTensors& bound) {
  gpu::Variant variant = b.variant_for(bound.m, bound.inputs.stream_dtype, v.store, v.pdl);
  if (v.layout != GateVariant::Layout::cta) {
    variant.layout = gpu_layout(v.layout);
    variant.placement = gpu_placement(v.layout);
  }
  variant.late_gates = variant.late_gates || v.late_gates;
  return variant;
}

// The all-reduce boundary's partials: the bound rank partials, or the branch as the one rank.
std::span<const gpu::TensorView> partials_of(const gpu_runs::DeviceInputs& in) {
  if (in.partials.empty()) return std::span(&in.branch, 1);
  return in.partials;
}

StageValues to_stage_values(std::int64_t m, gpu_runs::KernelOutputs&& k) {
  StageValues v;
  st::Tensor out = st::make_tensor(st::Dtype::BF16, {m, kH});
  std::memcpy(out.bytes.data(), k.out.data(), out.bytes.size());
  v["out"] = std::move(out);
  if (!k.new_stream.empty()) {
    st::Tensor ns = st::make_tensor(st::Dtype::F32, {m, kH});
    std::memcpy(ns.bytes.data(), k.new_stream.data(), ns.bytes.size());
    v["new_stream"] = std::move(ns);
  }
  return v;
}

// One capture of a launch into a CUDA graph on its own stream, replayed twice.
void graph_replay(gpu::DraftBoundary& fused, const gpu_runs::DeviceInputs& in, const gpu::Outputs& out,
                  const gpu::Variant& variant) {
  fused.check(in.branch, in.stream, out);
  cudaStream_t stream = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  const auto release = [&] {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
  };
  try {
    cuda_check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    fused.launch(in.branch, in.stream, out, stream, variant);
    cuda_check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
    cuda_check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    for (int replay = 0; replay < 2; ++replay) cuda_check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    cuda_check(cudaStreamSynchronize(stream), "graph replay");
  } catch (...) {
    release();
    throw;
  }
  release();
}

StageValues run_variant(const Constants& c, const BoundTensors& bound, const GateVariant& v) {
  const gpu_runs::DeviceOperands ops(c, bound.operands);
  const gpu_runs::DeviceInputs in(bound);
  if (v.kind == GateVariant::Kind::eager) {
    gpu::EagerChain eager(c, ops.views());
    return to_stage_values(in.m, gpu_runs::run_poisoned(in.m, v.store, [&](const gpu::Outputs& out) {
                             eager.run(in.branch, in.stream, out, nullptr);
                           }));
  }
  if (v.kind == GateVariant::Kind::multi_process) return run_multi_process(c, bound, v);
  if (v.kind == GateVariant::Kind::all_reduce) {
    gpu::AllReduceBoundary all_reduce(c, ops.views());
    const gpu::Variant variant = all_reduce_variant(v, all_reduce, bound);
    all_reduce.prepare(variant);
    return to_stage_values(in.m, gpu_runs::run_poisoned(in.m, v.store, [&](const gpu::Outputs& out) {
                             all_reduce.run(partials_of(in), in.stream, out, nullptr, variant);
                           }));
  }
  gpu::DraftBoundary fused(c, ops.views());
  const gpu::Variant variant = launch_variant(v, fused, bound);
  fused.prepare(variant);
  return to_stage_values(in.m, gpu_runs::run_poisoned(in.m, variant.store_stream, [&](const gpu::Outputs& out) {
                           if (v.kind == GateVariant::Kind::graph)
                             graph_replay(fused, in, out, variant);
                           else
                             fused.run(in.branch, in.stream, out, nullptr, variant);
                         }));
}

// A poisoned device tensor, read back into the StageValues under `name` after the run.
struct DeviceStage {
  std::string name;
  st::Dtype dtype;
  std::vector<std::int64_t> shape;
  gpu::DeviceBuffer buffer;
};

// out, new_stream and the intermediates of m rows from a debug build: launch(outputs,
// intermediates) writes them into poisoned device buffers.
StageValues with_intermediates(std::int64_t m, bool store,
                               const std::function<void(const gpu::Outputs&, const gpu::DeviceIntermediates&)>& launch) {
  std::vector<DeviceStage> stages;
  for (const auto& [name, dtype, per_element] :
       {std::tuple{"post_row_sum", st::Dtype::F32, false}, {"r1", st::Dtype::F32, false}, {"y_b", st::Dtype::BF16, true},
        {"res", st::Dtype::F32, true}, {"z", st::Dtype::BF16, true}, {"pre_row_sum", st::Dtype::F32, false},
        {"r2", st::Dtype::F32, false}}) {
    std::vector<std::int64_t> shape = per_element ? std::vector<std::int64_t>{m, kH} : std::vector<std::int64_t>{m};
    const std::size_t bytes = static_cast<std::size_t>(m) * (per_element ? kH : 1) * st::dtype_size(dtype);
    stages.push_back({name, dtype, std::move(shape), gpu::DeviceBuffer(bytes)});
    stages.back().buffer.fill(0xFF);
  }
  const auto ptr = [&](std::size_t i) { return stages[i].buffer.get(); };
  const gpu::DeviceIntermediates inter{static_cast<float*>(ptr(0)),         static_cast<float*>(ptr(1)),
                                       static_cast<std::uint16_t*>(ptr(2)), static_cast<float*>(ptr(3)),
                                       static_cast<std::uint16_t*>(ptr(4)), static_cast<float*>(ptr(5)),
                                       static_cast<float*>(ptr(6))};
  StageValues values =
      to_stage_values(m, gpu_runs::run_poisoned(m, store, [&](const gpu::Outputs& out) { launch(out, inter); }));
  for (DeviceStage& s : stages) {
    st::Tensor t = st::make_tensor(s.dtype, s.shape);
    s.buffer.download(t.bytes.data(), t.bytes.size());
    values[s.name] = std::move(t);
  }
  return values;
}

std::optional<StageValues> run_with_intermediates(const Constants& c, const BoundTensors& bound, const GateVariant& v) {
  // The eager chain's and the multi-process run's stages are not exposed.
  if (v.kind == GateVariant::Kind::eager || v.kind == GateVariant::Kind::multi_process) return std::nullopt;
  const gpu_runs::DeviceOperands ops(c, bound.operands);
  const gpu_runs::DeviceInputs in(bound);
  if (v.kind == GateVariant::Kind::all_reduce) {
    gpu::DiagnosticAllReduceBoundary diag(c, ops.views());
    const gpu::Variant variant = all_reduce_variant(v, diag, bound);
    return with_intermediates(in.m, variant.store_stream, [&](const gpu::Outputs& out, const gpu::DeviceIntermediates& d) {
      diag.run_with_intermediates(partials_of(in), in.stream, out, d, nullptr, variant);
    });
  }
  gpu::DiagnosticBoundary diag(c, ops.views());
  const gpu::Variant variant = launch_variant(v, diag, bound);
  return with_intermediates(in.m, variant.store_stream, [&](const gpu::Outputs& out, const gpu::DeviceIntermediates& d) {
    diag.run_with_intermediates(in.branch, in.stream, out, d, nullptr, variant);
  });
}

StageValues run_mutant(Mutant mutant, const Constants& c, const BoundTensors& bound, const GateVariant& v) {
  const gpu_runs::DeviceOperands ops(c, bound.operands);
  const gpu_runs::DeviceInputs in(bound);
  if (v.kind == GateVariant::Kind::all_reduce) {  // no producer in front: see DiagnosticAllReduceBoundary
    gpu::DiagnosticAllReduceBoundary diag(c, ops.views());
    const gpu::Variant variant = all_reduce_variant(v, diag, bound);
    diag.prepare_mutant(mutant, variant, static_cast<int>(partials_of(in).size()));
    return to_stage_values(in.m, gpu_runs::run_poisoned(in.m, variant.store_stream, [&](const gpu::Outputs& out) {
                             diag.run_mutant(mutant, partials_of(in), in.stream, out, nullptr, variant);
                           }));
  }
  gpu::DiagnosticBoundary diag(c, ops.views());
  const gpu::Variant variant = launch_variant(v, diag, bound);
  if (mutant != Mutant::pdl_wait_missing) {
    diag.prepare_mutant(mutant, variant);
    return to_stage_values(in.m, gpu_runs::run_poisoned(in.m, variant.store_stream, [&](const gpu::Outputs& out) {
                             diag.run_mutant(mutant, in.branch, in.stream, out, nullptr, variant);
                           }));
  }
  // The branch reaches the boundary through a slow producer; what it held before is poison.
  gpu::DeviceBuffer branch(static_cast<std::size_t>(in.m) * kH * 2);
  branch.fill(0xFF);
  gpu::Variant with_pdl = variant;
  with_pdl.pdl = true;
  return to_stage_values(in.m, gpu_runs::run_poisoned(in.m, variant.store_stream, [&](const gpu::Outputs& out) {
                           gpu::run_after_producer(diag, mutant, in.branch.data, branch.view(gpu::Dtype::bf16, {in.m, kH}),
                                                   in.stream, out, kProducerDelayNs, nullptr, with_pdl);
                         }));
}

}  // namespace

GateGpuHook make_gate_gpu_hook() {
  GateGpuHook hook;
  hook.probe = gpu_runs::gpu_info;
  hook.run = run_variant;
  hook.run_with_intermediates = run_with_intermediates;
  hook.run_mutant = run_mutant;
  return hook;
}

}  // namespace boundary::cli
