// RankBoundary: the whole boundary one rank computes from the group's R partials, through the
// fused all-reduce boundary and through the eager chain, with the boundary kernels unchanged.
#include "../host_checks.hpp"

#include <boundary/gpu/rank_ipc.hpp>

namespace boundary::gpu {

namespace {

void* allocate_branch(std::int64_t rows) {
  if (rows < 1) throw InputError("rank boundary: max_rows " + std::to_string(rows) + ", expected >= 1");
  void* p = nullptr;
  cuda_check(cudaMalloc(&p, static_cast<std::size_t>(rows) * kH * 2), "cudaMalloc (the eager chain's branch)");
  return p;
}

void free_branch(void* p) {
  if (p) cudaFree(p);
}

}  // namespace

RankBoundary::RankBoundary(const Constants& constants, const Operands& operands, std::int64_t max_rows)
    : fused_(constants, operands), eager_(constants, operands), max_rows_(max_rows), branch_(allocate_branch(max_rows), free_branch) {}

void RankBoundary::prepare(const Variant& variant, cudaStream_t stream) {
  fused_.prepare(variant, stream);
  eager_.prepare(max_rows_, stream);
}

void RankBoundary::launch(const RankGroup& group, std::int64_t m, const TensorView& stream, const Outputs& fused,
                          const Outputs& eager, cudaStream_t cuda_stream, std::optional<Variant> variant) {
  if (m > max_rows_)
    throw InputError("rank boundary: " + std::to_string(m) + " rows, prepared for " + std::to_string(max_rows_));
  const std::vector<TensorView> partials = group.partials(m);  // checks m against the group
  if (fused.out.data) fused_.launch(partials, stream, fused, cuda_stream, variant);
  if (!eager.out.data) return;
  const TensorView branch{branch_.get(), Dtype::bf16, {m, kH}};
  launch_all_reduce(partials, branch, cuda_stream);
  eager_.launch(branch, stream, eager, cuda_stream);
}

}  // namespace boundary::gpu
