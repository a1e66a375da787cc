#include "bench_bits.hpp"

#include "bench_kernels.hpp"

#include <boundary/gpu/cuda_check.hpp>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace boundary::bench {

namespace {

using gpu::cuda_check;

template <class T>
std::vector<T> download(const gpu::TensorView& t, std::size_t elements) {
  std::vector<T> host(elements);
  cuda_check(cudaMemcpy(host.data(), t.data, elements * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy(download)");
  return host;
}

template <class T>
void compare(const std::vector<T>& fused, const std::vector<T>& reference, const std::string& what, std::int64_t m,
             const char* reference_name) {
  std::size_t differing = 0, first = 0;
  for (std::size_t i = 0; i < fused.size(); ++i)
    if (fused[i] != reference[i] && differing++ == 0) first = i;
  if (differing == 0) return;
  char bits[96];
  std::snprintf(bits, sizeof bits, "fused 0x%0*llX, reference 0x%0*llX", static_cast<int>(2 * sizeof(T)),
                static_cast<unsigned long long>(fused[first]), static_cast<int>(2 * sizeof(T)),
                static_cast<unsigned long long>(reference[first]));
  std::ostringstream msg;
  msg << what << " at m = " << m << ": " << differing << " of " << fused.size() << " elements differ from "
      << reference_name << "; first at row " << first / kH << ", column " << first % kH << " (" << bits << ")";
  throw Mismatch(msg.str());
}

// Both outputs of each side, poisoned (fused 0xFF, reference 0xA5), then compared after run().
struct Poisoned {
  gpu::DeviceBuffer out, new_stream;
  gpu::Outputs views;
};

Poisoned reference_outputs(std::int64_t m, cudaStream_t s) {
  const auto elements = static_cast<std::size_t>(m) * kH;
  const std::vector<std::int64_t> shape = {m, kH};
  Poisoned p{gpu::DeviceBuffer(elements * 2), gpu::DeviceBuffer(elements * 4), {}};
  p.views = {p.out.view(gpu::Dtype::bf16, shape), p.new_stream.view(gpu::Dtype::f32, shape)};
  cuda_check(cudaMemsetAsync(p.out.get(), 0xA5, p.out.bytes(), s), "cudaMemsetAsync(poison)");
  cuda_check(cudaMemsetAsync(p.new_stream.get(), 0xA5, p.new_stream.bytes(), s), "cudaMemsetAsync(poison)");
  return p;
}

void poison(const BufferSet& set, cudaStream_t s) {
  cuda_check(cudaMemsetAsync(set.out.get(), 0xFF, set.out.bytes(), s), "cudaMemsetAsync(poison)");
  cuda_check(cudaMemsetAsync(set.new_stream.get(), 0xFF, set.new_stream.bytes(), s), "cudaMemsetAsync(poison)");
}

void compare_outputs(const gpu::Outputs& fused, const gpu::Outputs& reference, std::int64_t m, const std::string& name,
                     const char* reference_name) {
  const auto elements = static_cast<std::size_t>(m) * kH;
  compare(download<std::uint16_t>(fused.out, elements), download<std::uint16_t>(reference.out, elements),
          "out (" + name + ")", m, reference_name);
  compare(download<std::uint32_t>(fused.new_stream, elements), download<std::uint32_t>(reference.new_stream, elements),
          "new_stream (" + name + ")", m, reference_name);
}

}  // namespace

void check_bits(gpu::DraftBoundary& fused, gpu::EagerChain& eager, const BufferSet& set, std::int64_t m,
                StreamDtype dtype, cudaStream_t s, const std::optional<gpu::Variant>& variant) {
  const Poisoned ref = reference_outputs(m, s);
  poison(set, s);
  fused.run(set.branch_view, set.stream(dtype), set.outputs, s, variant);  // the checked entry point
  eager.run(set.branch_view, set.stream(dtype), ref.views, s);
  cuda_check(cudaStreamSynchronize(s), "running the bit check");
  const std::string name = std::string(dtype == StreamDtype::f32 ? "F32 stream" : "BF16 stream") +
                           (variant ? std::string(", ") + gpu::layout_name(variant->layout) + " layout" : "");
  compare_outputs(set.outputs, ref.views, m, name, "the eager chain");
}

void check_all_reduce_bits(gpu::AllReduceBoundary& fused, gpu::DraftBoundary& draft, const PartialSet& set,
                           std::int64_t m, const gpu::Variant& variant, cudaStream_t s) {
  const Poisoned ref = reference_outputs(m, s);
  poison(set.base, s);
  fused.run(set.views, set.base.stream_f32_view, set.base.outputs, s, variant);
  launch_all_reduce_then_draft(draft, set, ref.views, s);
  cuda_check(cudaStreamSynchronize(s), "checking the all-reduce boundary's bits");
  compare_outputs(set.base.outputs, ref.views, m,
                  std::string("all-reduce boundary, ") + gpu::layout_name(variant.layout) + " layout",
                  "the all-reduce kernel + DraftBoundary");
}

void check_copy(const std::function<void()>& copy, const std::vector<CopiedBytes>& parts, const unsigned* counter,
                cudaStream_t s, const std::string& what) {
  for (int run = 0; run < 2; ++run) {
    for (const CopiedBytes& p : parts) cuda_check(cudaMemsetAsync(p.dst, 0xFF, p.bytes, s), "cudaMemsetAsync(poison)");
    copy();
  }
  const gpu::DeviceBuffer count(sizeof(unsigned long long));
  cuda_check(cudaMemsetAsync(count.get(), 0, count.bytes(), s), "cudaMemsetAsync(count)");
  for (const CopiedBytes& p : parts)
    launch_count_differences(p.src, p.dst, p.bytes, static_cast<unsigned long long*>(count.get()), s);
  cuda_check(cudaStreamSynchronize(s), ("checking the " + what).c_str());
  unsigned long long differing = 0;
  count.download(&differing, sizeof differing);
  std::size_t words = 0;
  for (const CopiedBytes& p : parts) words += p.bytes / 16;
  if (differing != 0)
    throw Mismatch(what + ": " + std::to_string(differing) + " of " + std::to_string(words) +
                   " 16-byte words differ from the source after its second launch");
  unsigned left[2] = {0, 0};
  if (counter) cuda_check(cudaMemcpy(left, counter, sizeof left, cudaMemcpyDeviceToHost), "cudaMemcpy(counter)");
  if (left[0] != 0 || left[1] != 0)
    throw Mismatch(what + ": its chunk counter is " + std::to_string(left[0]) + ", " + std::to_string(left[1]) +
                   " after a launch, not 0, 0: a graph replay would skip chunks");
}

}  // namespace boundary::bench
