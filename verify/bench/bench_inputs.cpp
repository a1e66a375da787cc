#include "bench_inputs.hpp"

#include <boundary/verify/generate.hpp>
#include <boundary/gpu/weight_dtype.hpp>

#include <future>
#include <stdexcept>
#include <string>

namespace boundary::bench {

namespace {

namespace st = safetensors;

// The first `bytes` of a host tensor on the device.
gpu::DeviceBuffer upload(const st::Tensor& t, std::size_t bytes, const char* name) {
  if (bytes > t.bytes.size()) throw std::logic_error(std::string("upload of ") + name + " beyond its host tensor");
  return gpu::DeviceBuffer(t.bytes.data(), bytes);
}

}  // namespace

HostInputs generate(const Constants& c, std::int64_t rows, std::uint64_t seed) {
  // The two files are independent; the second core halves the wait at m = 8192.
  auto bf16 = std::async(std::launch::async, [&] { return generate_inputs(c, rows, seed, StreamDtype::bf16); });
  st::File f32 = generate_inputs(c, rows, seed, StreamDtype::f32);
  return {std::move(f32), bf16.get()};
}

DeviceOperands upload_operands(const Constants& c, const st::File& f) {
  DeviceOperands d;
  d.buffers.reserve(4);
  const auto add = [&](const char* name, gpu::Dtype dtype) {
    const st::Tensor& t = f.tensors.at(name);
    d.buffers.push_back(upload(t, t.bytes.size(), name));
    d.bytes += t.bytes.size();
    return d.buffers.back().view(dtype, t.shape);
  };
  d.views.alpha = add("alpha", gpu::Dtype::f32);
  d.views.beta = add("beta", gpu::Dtype::f32);
  if (c.post.has_weight()) d.views.post_weight = add("post_weight", gpu::weight_dtype(c.post.weight_dtype));
  if (c.pre.has_weight()) d.views.pre_weight = add("pre_weight", gpu::weight_dtype(c.pre.weight_dtype));
  return d;
}

BufferSet make_set(const HostInputs& in, std::int64_t m) {
  const auto elements = static_cast<std::size_t>(m) * kH;
  const std::vector<std::int64_t> shape = {m, kH};
  BufferSet s;
  s.branch = upload(in.f32.tensors.at("branch"), elements * 2, "branch");
  s.stream_f32 = upload(in.f32.tensors.at("stream"), elements * 4, "stream (F32)");
  s.stream_bf16 = upload(in.bf16.tensors.at("stream"), elements * 2, "stream (BF16)");
  s.out = gpu::DeviceBuffer(elements * 2);
  s.new_stream = gpu::DeviceBuffer(elements * 4);
  s.branch_view = s.branch.view(gpu::Dtype::bf16, shape);
  s.stream_f32_view = s.stream_f32.view(gpu::Dtype::f32, shape);
  s.stream_bf16_view = s.stream_bf16.view(gpu::Dtype::bf16, shape);
  s.outputs = {s.out.view(gpu::Dtype::bf16, shape), s.new_stream.view(gpu::Dtype::f32, shape)};
  return s;
}

PartialSet make_partial_set(const HostInputs& in, std::int64_t m, int ranks) {
  PartialSet p;
  p.base = make_set(in, m);
  const std::vector<std::int64_t> shape = {m, kH};
  for (int r = 0; r < ranks; ++r) {
    p.partials.push_back(upload(in.f32.tensors.at("branch"), static_cast<std::size_t>(m) * kH * 2, "partial"));
    p.views.push_back(p.partials.back().view(gpu::Dtype::bf16, shape));
  }
  p.branch = gpu::DeviceBuffer(static_cast<std::size_t>(m) * kH * 2);
  p.branch_view = p.branch.view(gpu::Dtype::bf16, shape);
  return p;
}

void launch_all_reduce_then_draft(gpu::DraftBoundary& draft, const PartialSet& p, const gpu::Outputs& outputs,
                                  cudaStream_t s) {
  gpu::launch_all_reduce(p.views, p.branch_view, s);
  draft.launch(p.branch_view, p.base.stream_f32_view, outputs, s);
}

}  // namespace boundary::bench
