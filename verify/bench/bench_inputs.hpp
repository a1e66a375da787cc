// The benchmark's inputs: realistic rows generated on the host once, for the largest m, and on
// the device one buffer set per rotation slot and m.
#pragma once

#include <boundary/gpu/all_reduce_boundary.hpp>
#include <boundary/gpu/device_buffer.hpp>
#include <boundary/gpu/draft_boundary.hpp>
#include <boundary/verify/safetensors.hpp>
#include <boundary/types.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace boundary::bench {

// One file per stream dtype, made for the largest m: the generator draws the gates and weights
// first and then the rows in order, so the first m rows are what a run for m rows would get.
struct HostInputs {
  safetensors::File f32, bf16;
};
HostInputs generate(const Constants& c, std::int64_t rows, std::uint64_t seed);

// The gates and weights on the device: read by every launch, uploaded once.
struct DeviceOperands {
  std::vector<gpu::DeviceBuffer> buffers;
  gpu::Operands views;
  std::size_t bytes = 0;  // read once per launch
};
DeviceOperands upload_operands(const Constants& c, const safetensors::File& f);

// One set of everything a launch reads or writes for m rows. Both stream dtypes share the branch.
struct BufferSet {
  gpu::DeviceBuffer branch, stream_f32, stream_bf16, out, new_stream;
  gpu::TensorView branch_view, stream_f32_view, stream_bf16_view;
  gpu::Outputs outputs;
  const gpu::TensorView& stream(StreamDtype d) const { return d == StreamDtype::f32 ? stream_f32_view : stream_bf16_view; }
};
BufferSet make_set(const HostInputs& in, std::int64_t m);

// R partials (each a copy of the branch: the time does not depend on the values) and a branch
// for the all-reduce kernel's output, beside one BufferSet.
struct PartialSet {
  BufferSet base;
  std::vector<gpu::DeviceBuffer> partials;
  std::vector<gpu::TensorView> views;
  gpu::DeviceBuffer branch;
  gpu::TensorView branch_view;
};
PartialSet make_partial_set(const HostInputs& in, std::int64_t m, int ranks);

// The all-reduce boundary's chain on a set: the all-reduce kernel, then the DraftBoundary.
void launch_all_reduce_then_draft(gpu::DraftBoundary& draft, const PartialSet& p, const gpu::Outputs& outputs,
                                  cudaStream_t s);

}  // namespace boundary::bench
