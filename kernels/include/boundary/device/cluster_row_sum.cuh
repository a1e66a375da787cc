// The cluster layer of the contract's summation tree (section 4, laid out as section 7 says): a
// row on a cluster of kCtas CTAs (2, 4 or 8) of 1024 / kCtas threads, one fragment a thread. CTA
// j, thread u holds fragment i = (1024 / kCtas) j + u of the row (columns 8 i .. 8 i + 7), which
// is fragment i / 256 of reference thread i % 256: the same place as in the CTA layer
// (row_sum.cuh), so that both fold the chunk pairs with fragment_pairs_row_sum. Every CTA
// computes the whole row sum.
//
// The chunk pairs travel by the copy engine: a CTA's threads store theirs into its own scratch
// (the CTA's run of 1024 / kCtas), and one thread copies that run into every other CTA's scratch
// in one bulk copy each, which lands on that CTA's barrier. Single 4-byte stores into the other
// CTAs' shared memory (distributed shared memory) cost one network request each, and those, not
// the bytes, bounded the cluster layouts when many clusters ran at once.
#pragma once

#include <boundary/device/bulk_copy.cuh>
#include <boundary/device/row_sum.cuh>

#include <cooperative_groups.h>

namespace boundary::dev {

// barrier.cluster, arrive and wait split so that a CTA can work between the two. The arrives are
// relaxed: these barriers order no data (the row sums' barriers do), they only say that a CTA
// has started (which every CTA must know of the others before it copies into their shared
// memory) or is done with the cluster (so that a CTA exits only when no copy reads or writes its
// shared memory any more).
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }

// Before a kernel's first row sum: this CTA has started (after cluster_sum_init and
// fence_barrier_init_cluster by thread 0), then, later, every CTA has.
__device__ __forceinline__ void cluster_arrive_started() { cluster_arrive_relaxed(); }
// After its last row sum, before a CTA exits.
__device__ __forceinline__ void cluster_leave() {
  cluster_arrive_relaxed();
  cluster_wait();
}

// Shared memory of one row sum on a cluster: the chunk pairs and warp totals, and the barrier
// that completes when the other CTAs' chunk pairs have landed (one phase a sum).
struct alignas(16) ClusterSumScratch {
  FragmentSumScratch sum;
  std::uint64_t landed;
};

// Thread 0, before the kernel's first cluster_arrive_started: the scratch's barrier.
__device__ __forceinline__ void cluster_sum_init(ClusterSumScratch& s) {
  barrier_init(&s.landed, 1);
  fence_barrier_init_cluster();
}

// Cluster layer: from this thread's chunk pair to the row sum S, equal in every thread of the
// cluster; parity: the phase of scratch.landed this sum completes (0 for its first use). Before
// the first call every CTA of the cluster must have passed cluster_arrive_started() and this one
// its cluster_wait(). A scratch serves one sum at a time: while one CTA reads its copy of one
// sum's chunk pairs, another may already send those of the next sum, which must go to another
// scratch. Two alternating ones suffice: a CTA sends into this one again only after the other
// CTAs' chunk pairs of the next sum have landed with it, which they send after reading this one.
template <int kCtas>
__device__ __forceinline__ float cluster_row_sum(float chunk_pair, ClusterSumScratch& scratch, std::uint32_t parity) {
  static_assert(kCtas == 2 || kCtas == 4 || kCtas == 8, "2, 4 or 8 CTAs a row");
  constexpr unsigned kCtaThreads = kRowThreads / kCtas;
  const unsigned rank = cooperative_groups::this_cluster().block_rank();
  float* const mine = &scratch.sum.chunk_pairs[rank * kCtaThreads];
  mine[threadIdx.x] = chunk_pair;
  fence_proxy_async_shared();  // for the copy engine, which reads them next
  __syncthreads();
  if (threadIdx.x == 0) {
    barrier_arrive_expect_bytes(&scratch.landed, (kCtas - 1) * kCtaThreads * sizeof(float));
#pragma unroll
    for (unsigned q = 1; q < kCtas; ++q)
      bulk_copy_to_cluster_cta(mine, kCtaThreads * sizeof(float), &scratch.landed, (rank + q) % kCtas);
  }
  barrier_wait_cluster(&scratch.landed, parity);
  return fragment_pairs_row_sum(scratch.sum, kCtaThreads);
}

}  // namespace boundary::dev
