#include "all_reduce_launch.hpp"
#include "host_checks.hpp"

#include <boundary/gpu/all_reduce_boundary.hpp>

#include <string>

namespace boundary::gpu {

namespace {

using namespace detail;

std::string rank_name(std::size_t r) { return "partials[" + std::to_string(r) + "]"; }

// Empty when the partials are fine, else why not.
std::string partials_problem(std::span<const TensorView> partials) {
  if (partials.empty() || partials.size() > static_cast<std::size_t>(kMaxRanks))
    return "partials: " + std::to_string(partials.size()) + " given, expected 1 to " + std::to_string(kMaxRanks);
  const TensorView& p0 = partials[0];
  if (p0.shape.size() != 2 || p0.shape[0] < 1 || p0.shape[1] != kH)
    return "'" + rank_name(0) + "' has shape " + shape_string(p0.shape) + ", expected [m, 8192] with m >= 1";
  for (std::size_t r = 0; r < partials.size(); ++r)
    if (std::string p = problem(partials[r], rank_name(r), {Dtype::bf16}, {p0.shape[0], kH}, 16); !p.empty()) return p;
  return {};
}

void check_partials(std::span<const TensorView> partials) {
  if (const std::string p = partials_problem(partials); !p.empty()) throw InputError("tensor " + p);
}

void fill_ranks(std::span<const TensorView> partials, const std::uint16_t* (&ranks)[kMaxRanks]) {
  for (std::size_t r = 0; r < static_cast<std::size_t>(kMaxRanks); ++r)
    ranks[r] = r < partials.size() ? static_cast<const std::uint16_t*>(partials[r].data) : nullptr;
}

}  // namespace

void all_reduce(std::span<const TensorView> partials, const TensorView& branch, cudaStream_t cuda_stream) {
  check_partials(partials);
  check_tensor(branch, "branch", {Dtype::bf16}, partials[0].shape);
  launch_all_reduce(partials, branch, cuda_stream);
}

void launch_all_reduce(std::span<const TensorView> partials, const TensorView& branch, cudaStream_t cuda_stream) {
  const std::uint16_t* ranks[kMaxRanks];
  fill_ranks(partials, ranks);
  cuda_check(detail::launch_all_reduce(ranks, static_cast<int>(partials.size()), static_cast<std::uint16_t*>(branch.data),
                                       partials[0].shape[0], cuda_stream),
             "launching the all-reduce kernel");
}

void prepare_all_reduce(cudaStream_t stream) {
  refuse_during_capture(stream, "prepare_all_reduce");
  cuda_check(detail::prepare_all_reduce(), "preparing the all-reduce kernel");
}

AllReduceBoundary::AllReduceBoundary(const Constants& constants, const Operands& operands)
    : BoundaryBase(constants, operands) {
  query_waves(false);  // the R-rank build's waves (with one partial the one-rank build runs, placed alike)
}

bool AllReduceBoundary::takes(std::span<const TensorView> partials, const TensorView& stream) const {
  return partials_problem(partials).empty() &&
         problem(stream, "stream", {Dtype::f32, Dtype::bf16}, partials[0].shape, 16).empty();
}

void AllReduceBoundary::check(std::span<const TensorView> partials, const TensorView& stream,
                              const Outputs& outputs) const {
  check_partials(partials);
  check_stream_and_outputs(stream, outputs, partials[0].shape);
}

Variant AllReduceBoundary::variant_for(std::int64_t m, StreamDtype stream, bool store_stream, bool pdl) const {
  const Layout layout = all_reduce_layout(m, sm_count_);
  // Early gates: see BoundaryBase::variant_for.
  return Variant{stream, store_stream, false, pdl, layout, placement_for(m, layout)};
}

namespace {

void refuse_cta(const Variant& v) {
  if (v.layout == Layout::cta)
    throw InputError("the all-reduce boundary has no cta layout (R partials do not fit its stages): use pair, quad or "
                     "cluster");
}

}  // namespace

void AllReduceBoundary::prepare(const Variant& variant, cudaStream_t stream) {
  refuse_during_capture(stream, "AllReduceBoundary::prepare");
  refuse_cta(variant);
  const DeviceScope scope(device_);
  cuda_check(detail::prepare_all_reduce(), "preparing the all-reduce kernel");
  for (int ranks : {1, kMaxRanks})  // its two builds: one rank, and R ranks
    cuda_check(detail::prepare_all_reduce_boundary(variant, ranks), "preparing the all-reduce boundary kernel");
}

void AllReduceBoundary::run(std::span<const TensorView> partials, const TensorView& stream, const Outputs& outputs,
                            cudaStream_t cuda_stream, std::optional<Variant> variant) {
  require_device(device_, "AllReduceBoundary::run");
  check(partials, stream, outputs);
  check_variant(variant, stream, outputs);
  launch(partials, stream, outputs, cuda_stream, variant);
}

Variant AllReduceBoundary::launch_variant(std::span<const TensorView> partials, const TensorView& stream,
                                          const Outputs& outputs, std::optional<Variant> variant) const {
  const Variant v =
      variant ? *variant : variant_for(partials[0].shape[0], stream_dtype(stream), outputs.new_stream.data != nullptr);
  refuse_cta(v);
  return v;
}

AllReduceParams AllReduceBoundary::launch_params(std::span<const TensorView> partials, const TensorView& stream,
                                                 const Outputs& outputs) const {
  AllReduceParams a{};
  a.boundary = boundary_params(partials[0], stream, outputs);
  a.boundary.branch = nullptr;
  fill_ranks(partials, a.partials);
  a.ranks = static_cast<int>(partials.size());
  return a;
}

void AllReduceBoundary::launch(std::span<const TensorView> partials, const TensorView& stream, const Outputs& outputs,
                               cudaStream_t cuda_stream, std::optional<Variant> variant) {
  const Variant v = launch_variant(partials, stream, outputs, variant);
  cuda_check(launch_all_reduce_boundary(launch_params(partials, stream, outputs), partials[0].shape[0], v, cuda_stream),
             "launching the all-reduce boundary kernel");
}

}  // namespace boundary::gpu
