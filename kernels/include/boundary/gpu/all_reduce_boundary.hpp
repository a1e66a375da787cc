// The all-reduce boundary's host API (contract section 7): the branch is the all-reduce of R
// rank partials (1 <= R <= 8), given as R device views, BF16 [m, 8192] each, 16-byte aligned.
// On one GPU they are local buffers; across GPUs, peers' buffers mapped into this one.
//
//   boundary::gpu::AllReduceBoundary fused(constants, operands);  // checks operands once
//   fused.prepare(variant);                                       // before CUDA graph capture
//   fused.run(partials, stream, outputs, cuda_stream);            // checks, then launches
//   fused.launch(partials, stream, outputs, cuda_stream);         // launches, no checks
//
// Its eager chain is all_reduce() followed by EagerChain (or DraftBoundary) on the branch.
#pragma once

#include <boundary/gpu/draft_boundary.hpp>

#include <span>

namespace boundary::gpu {

namespace detail {
struct AllReduceParams;  // the kernels' parameters (src/all_reduce_launch.hpp)
}  // namespace detail

// The eager one-shot all-reduce: branch = the partials summed in rank order in FP32, one BF16
// rounding (R = 1: a copy). Checks the partials and branch (InputError naming the tensor).
void all_reduce(std::span<const TensorView> partials, const TensorView& branch, cudaStream_t cuda_stream);
// No checks: the caller guarantees what all_reduce() checks.
void launch_all_reduce(std::span<const TensorView> partials, const TensorView& branch, cudaStream_t cuda_stream);
// Readies the all-reduce kernel for a CUDA graph capture (refused during one).
void prepare_all_reduce(cudaStream_t stream = nullptr);

// The fused all-reduce boundary: the layouts pair, quad (persistent clusters, each CTA streaming
// its slice of every rank's partial through shared memory) and cluster; no cta layout.
class AllReduceBoundary : public BoundaryBase {
 public:
  AllReduceBoundary(const Constants& constants, const Operands& operands);

  // Whether it can take these partials (1..8 of them, BF16 [m, 8192], m >= 1, same m) and
  // stream (F32 or BF16 [m, 8192]), all 16-byte aligned device memory.
  bool takes(std::span<const TensorView> partials, const TensorView& stream) const;
  // The same, throwing InputError that names the tensor ("partials[2]") and what was expected.
  void check(std::span<const TensorView> partials, const TensorView& stream, const Outputs& outputs) const;
  // Early gates; the layout measured fastest for m on the H200 (cluster up to twice the SM count,
  // quad above).
  Variant variant_for(std::int64_t m, StreamDtype stream, bool store_stream, bool pdl = true) const override;

  void prepare(const Variant& variant, cudaStream_t stream = nullptr);
  void run(std::span<const TensorView> partials, const TensorView& stream, const Outputs& outputs,
           cudaStream_t cuda_stream, std::optional<Variant> variant = std::nullopt);
  void launch(std::span<const TensorView> partials, const TensorView& stream, const Outputs& outputs,
              cudaStream_t cuda_stream, std::optional<Variant> variant = std::nullopt);

 protected:
  // What launch() launches, unchecked: the variant (given, or variant_for; cta refused with
  // InputError) and the kernels' parameters. Shared with the instrumented builds (diagnostics.hpp).
  Variant launch_variant(std::span<const TensorView> partials, const TensorView& stream, const Outputs& outputs,
                         std::optional<Variant> variant) const;
  detail::AllReduceParams launch_params(std::span<const TensorView> partials, const TensorView& stream,
                                        const Outputs& outputs) const;
};

}  // namespace boundary::gpu
