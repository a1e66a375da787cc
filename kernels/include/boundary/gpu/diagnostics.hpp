// The fused kernels instrumented (library boundary_kernels_diagnostics), the DraftBoundary and
// the all-reduce boundary: a debug build of the same kernel sources that also writes the
// contract's intermediates (the production instantiations are unchanged), the planted-bug builds
// of boundary/mutant.hpp, and the branch producer that puts a boundary behind a programmatic
// dependent launch.
//
//   boundary::gpu::DiagnosticBoundary b(constants, operands);
//   b.run_with_intermediates(branch, stream, outputs, intermediates, cuda_stream);
//   b.run_mutant(boundary::Mutant::warp_order, branch, stream, outputs, cuda_stream);
//   boundary::gpu::DiagnosticAllReduceBoundary a(constants, operands);
//   a.run_mutant(boundary::Mutant::rank_order, partials, stream, outputs, cuda_stream);
#pragma once

#include <boundary/gpu/all_reduce_boundary.hpp>
#include <boundary/gpu/draft_boundary.hpp>
#include <boundary/mutant.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace boundary::gpu {

// Device pointers; any may be null (not wanted). Same meaning and dtypes as ref::Outputs'
// intermediates, m the branch's rows.
struct DeviceIntermediates {
  float* post_row_sum = nullptr;  // F32 [m]  S1
  float* r1 = nullptr;            // F32 [m]
  std::uint16_t* y_b = nullptr;   // BF16 [m, 8192]
  float* res = nullptr;           // F32 [m, 8192] (the new stream, also when not stored)
  std::uint16_t* z = nullptr;     // BF16 [m, 8192]
  float* pre_row_sum = nullptr;   // F32 [m]  S2
  float* r2 = nullptr;            // F32 [m]
};

class DiagnosticBoundary : public DraftBoundary {
 public:
  using DraftBoundary::DraftBoundary;

  // Checks like run() (every non-null intermediate must be device memory, 16-byte aligned);
  // writes outputs and intermediates.
  void run_with_intermediates(const TensorView& branch, const TensorView& stream, const Outputs& outputs,
                              const DeviceIntermediates& intermediates, cudaStream_t cuda_stream,
                              std::optional<Variant> variant = std::nullopt);
  // The fused kernel compiled with BOUNDARY_MUTANT = m (m != none: InputError), checked and
  // launched like run().
  void run_mutant(Mutant m, const TensorView& branch, const TensorView& stream, const Outputs& outputs,
                  cudaStream_t cuda_stream, std::optional<Variant> variant = std::nullopt);
  // No checks, as launch().
  void launch_mutant(Mutant m, const TensorView& branch, const TensorView& stream, const Outputs& outputs,
                     cudaStream_t cuda_stream, std::optional<Variant> variant = std::nullopt);
  // Loads the mutant's kernel now; refused during a capture, as prepare().
  void prepare_mutant(Mutant m, const Variant& variant, cudaStream_t stream = nullptr);

 private:
  struct Launch;  // kernel parameters, variant and rows
  Launch checked(const char* what, const TensorView& branch, const TensorView& stream, const Outputs& outputs,
                 std::optional<Variant> variant) const;
  Launch unchecked(const TensorView& branch, const TensorView& stream, const Outputs& outputs,
                   std::optional<Variant> variant) const;
};

// The all-reduce boundary's instrumented builds, on R partials (one rank: the DraftBoundary's
// one-rank kernels, as AllReduceBoundary runs them). No producer: pdl_wait_missing runs as any
// other mutant here, with nothing in front of it to wait for.
class DiagnosticAllReduceBoundary : public AllReduceBoundary {
 public:
  using AllReduceBoundary::AllReduceBoundary;

  // Checks like run(), and the intermediates as DiagnosticBoundary does; writes outputs and
  // intermediates (the post norm's of the all-reduced branch).
  void run_with_intermediates(std::span<const TensorView> partials, const TensorView& stream, const Outputs& outputs,
                              const DeviceIntermediates& intermediates, cudaStream_t cuda_stream,
                              std::optional<Variant> variant = std::nullopt);
  // The kernels compiled with BOUNDARY_MUTANT = m (m != none: InputError), checked and launched
  // like run().
  void run_mutant(Mutant m, std::span<const TensorView> partials, const TensorView& stream, const Outputs& outputs,
                  cudaStream_t cuda_stream, std::optional<Variant> variant = std::nullopt);
  // Loads the mutant's kernel for `ranks` partials now; refused during a capture, as prepare().
  void prepare_mutant(Mutant m, const Variant& variant, int ranks, cudaStream_t stream = nullptr);
};

// Makes b's row counter look held by another launch (tag foreign_tag, not 0): b's next cta launch
// that hands rows out must trap, its error surfacing at the next synchronization. For the test
// that two launches of one object at once fail loudly; the CUDA context is lost afterwards, so
// that test runs in a process of its own. Synchronous; throws CudaError.
void occupy_row_counter(const BoundaryBase& b, std::uint32_t foreign_tag);

// b's row counter as it stands (synchronous: every launch on every stream has finished): after
// each launch's end both words must be 0 again (idle), and a test that finds otherwise has found
// a launch that did not reset it. Throws CudaError.
struct RowCounterWords {
  unsigned long long rows = 0, done = 0;
};
RowCounterWords row_counter_words(const BoundaryBase& b);

// Copies `bytes` (a multiple of 16) from src to dst, launched normally (no PDL attribute). Every
// block triggers griddepcontrol.launch_dependents first and then sleeps about delay_ns before
// copying: a PDL dependent may start at once, and one that read dst before its
// griddepcontrol.wait would see what dst held before. Returns the launch's own error.
cudaError_t launch_producer(const void* src, void* dst, std::size_t bytes, unsigned delay_ns, cudaStream_t stream);
// Loads the producer's module now: a lazily loaded kernel's first launch must not happen inside a
// stream capture.
cudaError_t prepare_producer();

// The producer copying src_branch (device memory, BF16 [m, 8192]) into dst_branch, then the
// boundary (production for Mutant::none, else mutant m) with `variant` (its pdl flag as given)
// reading dst_branch. Both kernels are loaded before the chain is launched. With PDL, a boundary
// that reads the branch before its wait computes on what dst_branch held before the producer.
void run_after_producer(DiagnosticBoundary& b, Mutant m, const void* src_branch, const TensorView& dst_branch,
                        const TensorView& stream, const Outputs& outputs, unsigned delay_ns, cudaStream_t cuda_stream,
                        Variant variant);

}  // namespace boundary::gpu
