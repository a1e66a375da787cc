// The cluster layer of the contract's summation tree (section 4, laid out as section 7 says): a
// row on a cluster of kCtas CTAs (2, 4 or 8) of 1024 / kCtas threads, one fragment a thread, in
// row_fragment's layout (row_sum.cuh): CTA j holds W = 8 / kCtas reference warps whole, so the
// thread and warp layers run inside it and only their warp totals cross CTAs. Every CTA computes
// the whole row sum.
//
// A warp total travels as one st.async into each other CTA's scratch, completing on that CTA's
// barrier: one 4-byte store a reference warp and CTA. Exchanging the 1024 chunk pairs instead
// (single remote stores, later bulk copies of each CTA's run) cost far more and bounded the
// cluster layouts when many clusters ran at once.
#pragma once

#include <boundary/device/bulk_copy.cuh>
#include <boundary/device/row_sum.cuh>

namespace boundary::dev {

// barrier.cluster, arrive and wait split so that a CTA can work between the two. The arrive is
// relaxed: this barrier orders no data (the row sums' barriers do), it only says that a CTA has
// started, which every CTA must know of the others before it stores into their shared memory.
__device__ __forceinline__ void cluster_arrive_started() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }

// This CTA's rank in its cluster.
__device__ __forceinline__ std::uint32_t cluster_cta_rank() {
  std::uint32_t r;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// Shared memory of one row sum on a cluster: this CTA's chunk pairs, the row's warp totals (the
// other CTAs store theirs), and the barrier that completes when all of them are in (one phase a
// sum).
template <int kCtas>
struct alignas(16) ClusterSumScratch {
  float chunk_pairs[kRowThreads / kCtas];
  float warp_totals[kWarps];
  std::uint64_t landed;
};

// Thread 0, before the kernel's cluster_arrive_started: the scratch's barrier, which the W warps
// holding a reference warp's first fragment arrive on (their own totals) and the other CTAs'
// stores complete.
template <int kCtas>
__device__ __forceinline__ void cluster_sum_init(ClusterSumScratch<kCtas>& s) {
  barrier_init(&s.landed, kWarps / kCtas);
  fence_barrier_init_cluster();
}

// Cluster layer: from this thread's chunk pair to the row sum S, equal in every thread of the
// cluster; parity: the phase of scratch.landed this sum completes (0 for its first use). Before
// the first call every CTA of the cluster must have passed cluster_arrive_started() and this one
// its cluster_wait(). A scratch serves one sum at a time: while one CTA reads one sum's warp
// totals, another may already send those of the next sum, which must go to another scratch. Two
// alternating ones suffice: a CTA stores into this one again only after the other CTAs' totals of
// the next sum have landed with it, which they send after reading this one's. No CTA may exit
// while a store into it is under way, and none does: each waits for every store of its last sum.
template <int kCtas>
__device__ __forceinline__ float cluster_row_sum(float chunk_pair, ClusterSumScratch<kCtas>& scratch,
                                                 std::uint32_t parity) {
  static_assert(kCtas == 2 || kCtas == 4 || kCtas == 8, "2, 4 or 8 CTAs a row");
  constexpr unsigned kCtaWarps = kWarps / kCtas;
  scratch.chunk_pairs[threadIdx.x] = chunk_pair;
  __syncthreads();
  const unsigned warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (warp < kCtaWarps) {
    const float total = reference_warp_total(scratch.chunk_pairs, warp, kCtaWarps);
    const std::uint32_t rank = cluster_cta_rank();
    float* const slot = &scratch.warp_totals[kCtaWarps * rank + warp];
    if (lane == 0) {
      *slot = total;
      if (warp == 0) barrier_arrive_expect_bytes(&scratch.landed, (kCtas - 1) * kCtaWarps * sizeof(float));
      else barrier_arrive(&scratch.landed);
    } else if (lane < kCtas) {
      store_to_cluster_cta(slot, total, &scratch.landed, (rank + lane) % kCtas);
    }
  }
  barrier_wait_cluster(&scratch.landed, parity);
  return row_sum(scratch.warp_totals);
}

}  // namespace boundary::dev
