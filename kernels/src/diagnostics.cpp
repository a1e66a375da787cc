// The host API of the instrumented builds of the DraftBoundary and the all-reduce boundary: the
// same checks as run(), then the debug or a planted-bug kernel.
#include "diagnostics_launch.hpp"
#include "host_checks.hpp"
#include "row_counter.hpp"

#include <boundary/gpu/diagnostics.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace boundary::gpu {

using namespace detail;

struct DiagnosticBoundary::Launch {
  BoundaryParams params;
  Variant variant;
  std::int64_t m;
};

namespace {

struct MutantBuild {
  cudaError_t (*launch)(const BoundaryParams&, std::int64_t, const Variant&, cudaStream_t);
  cudaError_t (*prepare)(const Variant&);
  cudaError_t (*launch_all_reduce)(const AllReduceParams&, std::int64_t, const Variant&, cudaStream_t);
  cudaError_t (*prepare_all_reduce)(const Variant&, int);
};

template <std::size_t... I>
constexpr std::array<MutantBuild, sizeof...(I)> mutant_builds(std::index_sequence<I...>) {
  return {MutantBuild{&launch_draft_boundary_mutant<kAllMutants[I]>, &prepare_draft_boundary_mutant<kAllMutants[I]>,
                      &launch_all_reduce_boundary_mutant<kAllMutants[I]>,
                      &prepare_all_reduce_boundary_mutant<kAllMutants[I]>}...};
}

// One build per entry of kAllMutants: a build missing from kernels/CMakeLists.txt fails the link.
constexpr std::array<MutantBuild, kAllMutants.size()> kMutantBuilds =
    mutant_builds(std::make_index_sequence<kAllMutants.size()>());

const MutantBuild& build_of(Mutant m) {
  for (std::size_t i = 0; i < kAllMutants.size(); ++i)
    if (kAllMutants[i] == m) return kMutantBuilds[i];
  throw InputError("no planted-bug build of the fused kernels for mutant '" + std::string(mutant_name(m)) + "'");
}

void check_intermediate(void* data, const char* name, Dtype dtype, std::vector<std::int64_t> shape) {
  if (data == nullptr) return;
  const std::string p = problem(TensorView{data, dtype, shape}, name, {dtype}, shape, 16);
  if (!p.empty()) throw InputError("intermediate " + p);
}

void check_intermediates(const DeviceIntermediates& d, std::int64_t m) {
  check_intermediate(d.post_row_sum, "post_row_sum", Dtype::f32, {m});
  check_intermediate(d.r1, "r1", Dtype::f32, {m});
  check_intermediate(d.y_b, "y_b", Dtype::bf16, {m, kH});
  check_intermediate(d.res, "res", Dtype::f32, {m, kH});
  check_intermediate(d.z, "z", Dtype::bf16, {m, kH});
  check_intermediate(d.pre_row_sum, "pre_row_sum", Dtype::f32, {m});
  check_intermediate(d.r2, "r2", Dtype::f32, {m});
}

}  // namespace

DiagnosticBoundary::Launch DiagnosticBoundary::checked(const char* what, const TensorView& branch,
                                                       const TensorView& stream, const Outputs& outputs,
                                                       std::optional<Variant> variant) const {
  require_device(device_, what);
  check(branch, stream, outputs);
  check_variant(variant, stream, outputs);
  return unchecked(branch, stream, outputs, variant);
}

DiagnosticBoundary::Launch DiagnosticBoundary::unchecked(const TensorView& branch, const TensorView& stream,
                                                         const Outputs& outputs, std::optional<Variant> variant) const {
  const std::int64_t m = branch.shape[0];
  return Launch{boundary_params(branch, stream, outputs),
                variant ? *variant : variant_for(m, stream_dtype(stream), outputs.new_stream.data != nullptr), m};
}

void DiagnosticBoundary::run_with_intermediates(const TensorView& branch, const TensorView& stream,
                                                const Outputs& outputs, const DeviceIntermediates& intermediates,
                                                cudaStream_t cuda_stream, std::optional<Variant> variant) {
  const Launch l = checked("DiagnosticBoundary::run_with_intermediates", branch, stream, outputs, variant);
  check_intermediates(intermediates, l.m);
  cuda_check(launch_draft_boundary_debug(l.params, intermediates, l.m, l.variant, cuda_stream),
             "launching the debug DraftBoundary kernel");
}

void DiagnosticBoundary::run_mutant(Mutant m, const TensorView& branch, const TensorView& stream,
                                    const Outputs& outputs, cudaStream_t cuda_stream, std::optional<Variant> variant) {
  const MutantBuild& build = build_of(m);
  const Launch l = checked("DiagnosticBoundary::run_mutant", branch, stream, outputs, variant);
  cuda_check(build.launch(l.params, l.m, l.variant, cuda_stream), "launching a planted-bug DraftBoundary kernel");
}

void DiagnosticBoundary::launch_mutant(Mutant m, const TensorView& branch, const TensorView& stream,
                                       const Outputs& outputs, cudaStream_t cuda_stream, std::optional<Variant> variant) {
  const MutantBuild& build = build_of(m);
  const Launch l = unchecked(branch, stream, outputs, variant);
  cuda_check(build.launch(l.params, l.m, l.variant, cuda_stream), "launching a planted-bug DraftBoundary kernel");
}

void DiagnosticBoundary::prepare_mutant(Mutant m, const Variant& variant, cudaStream_t stream) {
  const MutantBuild& build = build_of(m);
  refuse_during_capture(stream, "DiagnosticBoundary::prepare_mutant");
  const DeviceScope scope(device_);
  cuda_check(build.prepare(variant), "preparing a planted-bug DraftBoundary kernel");
}

void DiagnosticAllReduceBoundary::run_with_intermediates(std::span<const TensorView> partials, const TensorView& stream,
                                                         const Outputs& outputs, const DeviceIntermediates& intermediates,
                                                         cudaStream_t cuda_stream, std::optional<Variant> variant) {
  require_device(device_, "DiagnosticAllReduceBoundary::run_with_intermediates");
  check(partials, stream, outputs);
  check_variant(variant, stream, outputs);
  check_intermediates(intermediates, partials[0].shape[0]);
  const Variant v = launch_variant(partials, stream, outputs, variant);
  cuda_check(launch_all_reduce_boundary_debug(launch_params(partials, stream, outputs), intermediates,
                                              partials[0].shape[0], v, cuda_stream),
             "launching the debug all-reduce boundary kernel");
}

void DiagnosticAllReduceBoundary::run_mutant(Mutant m, std::span<const TensorView> partials, const TensorView& stream,
                                             const Outputs& outputs, cudaStream_t cuda_stream,
                                             std::optional<Variant> variant) {
  const MutantBuild& build = build_of(m);
  require_device(device_, "DiagnosticAllReduceBoundary::run_mutant");
  check(partials, stream, outputs);
  check_variant(variant, stream, outputs);
  const Variant v = launch_variant(partials, stream, outputs, variant);
  cuda_check(build.launch_all_reduce(launch_params(partials, stream, outputs), partials[0].shape[0], v, cuda_stream),
             "launching a planted-bug all-reduce boundary kernel");
}

void DiagnosticAllReduceBoundary::prepare_mutant(Mutant m, const Variant& variant, int ranks, cudaStream_t stream) {
  const MutantBuild& build = build_of(m);
  refuse_during_capture(stream, "DiagnosticAllReduceBoundary::prepare_mutant");
  if (variant.layout == Layout::cta) launch_variant({}, {}, {}, variant);  // refuses it, as prepare() does
  const DeviceScope scope(device_);
  cuda_check(build.prepare_all_reduce(variant, ranks), "preparing a planted-bug all-reduce boundary kernel");
}

void occupy_row_counter(const BoundaryBase& b, std::uint32_t foreign_tag) {
  const unsigned long long held = static_cast<unsigned long long>(foreign_tag) << 32;
  const DeviceScope scope(b.device_);
  cuda_check(cudaMemcpy(b.row_counter_->words(), &held, sizeof held, cudaMemcpyHostToDevice),
             "occupying the row counter");
  cuda_check(cudaDeviceSynchronize(), "occupying the row counter");
}

RowCounterWords row_counter_words(const BoundaryBase& b) {
  const DeviceScope scope(b.device_);
  cuda_check(cudaDeviceSynchronize(), "reading the row counter");
  unsigned long long w[2] = {};
  cuda_check(cudaMemcpy(w, b.row_counter_->words(), sizeof w, cudaMemcpyDeviceToHost), "reading the row counter");
  return {w[0], w[1]};
}

void run_after_producer(DiagnosticBoundary& b, Mutant m, const void* src_branch, const TensorView& dst_branch,
                        const TensorView& stream, const Outputs& outputs, unsigned delay_ns, cudaStream_t cuda_stream,
                        Variant variant) {
  // Every check and module load before the producer starts: host time spent between the two
  // launches would let the producer finish before the boundary starts, and hide a missing wait.
  b.check(dst_branch, stream, outputs);
  check_variant(variant, stream, outputs);
  const std::int64_t rows = dst_branch.shape[0];
  const std::size_t bytes = static_cast<std::size_t>(rows) * kH * 2;
  const std::string p = problem(TensorView{const_cast<void*>(src_branch), Dtype::bf16, dst_branch.shape}, "src_branch",
                                {Dtype::bf16}, dst_branch.shape, 16);
  if (!p.empty()) throw InputError("tensor " + p);
  if (m == Mutant::none) b.prepare(variant, cuda_stream);
  else b.prepare_mutant(m, variant, cuda_stream);
  cuda_check(prepare_producer(), "preparing the producer kernel");
  cuda_check(launch_producer(src_branch, dst_branch.data, bytes, delay_ns, cuda_stream), "launching the producer kernel");
  if (m == Mutant::none) b.launch(dst_branch, stream, outputs, cuda_stream, variant);
  else b.launch_mutant(m, dst_branch, stream, outputs, cuda_stream, variant);
}

}  // namespace boundary::gpu
