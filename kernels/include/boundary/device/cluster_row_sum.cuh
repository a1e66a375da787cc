// The cluster layer of the contract's summation tree (section 4, laid out as section 7 says):
// a row on a cluster of 8 CTAs of 128 threads, one fragment per thread. CTA j, thread u holds
// fragment k = j / 2 of reference thread t = 128 * (j % 2) + u, so the reference thread's sum
// gathers its four chunk pairs from CTAs p, p + 2, p + 4, p + 6 (p = j % 2), in fragment order;
// then the warp layer and the warp-order CTA layer as usual. Every CTA computes the whole row sum,
// both halves of the reference CTA, so one cluster barrier per sum suffices.
//
// The chunk pairs are pushed, not pulled: each thread stores its chunk pair into every CTA's
// scratch (distributed shared memory), then one cluster barrier, then every read is local. A CTA
// thus never reads another's shared memory, and may exit as soon as its last row sum has passed
// its barrier: by then every store into its scratch has landed.
#pragma once

#include <boundary/device/row_sum.cuh>

#include <cooperative_groups.h>

namespace boundary::dev {

inline constexpr int kClusterCtas = 8;        // CTAs per row
inline constexpr int kClusterThreads = 128;   // threads per CTA, one fragment each

// barrier.cluster: arrive publishes this thread's (distributed) shared-memory writes to the
// cluster, wait sees every other CTA's; split so that a CTA can work between the two.
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
// The first arrive of a kernel orders nothing: it only says that this CTA has started, which
// every CTA must know of the others before it stores into their shared memory.
__device__ __forceinline__ void cluster_arrive_started() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}

// Shared memory of one row sum: the chunk pairs of every CTA of the cluster (row: the CTA that
// pushed them) and this CTA's warp totals. Used by that sum alone: while one CTA reads its copy
// of one sum's chunk pairs, another may already push those of the next sum, into the other
// scratch; a scratch is pushed to again only after the other sum's barrier, which every CTA
// reaches after reading this one.
struct ClusterSumScratch {
  float chunk_pairs[kClusterCtas][kClusterThreads];
  float warp_totals[kWarps];
};

// Cluster layer: from this thread's chunk pair to the row sum S, equal in every thread of the
// cluster. One cluster barrier and one CTA barrier. Before the first call every CTA of the
// cluster must have passed cluster_arrive_started() and this one its cluster_wait().
__device__ __forceinline__ float cluster_row_sum(float chunk_pair, ClusterSumScratch& scratch) {
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const unsigned u = threadIdx.x;
  float* const mine = &scratch.chunk_pairs[cluster.block_rank()][u];
#pragma unroll
  for (unsigned q = 0; q < kClusterCtas; ++q) *cluster.map_shared_rank(mine, q) = chunk_pair;
  cluster_arrive();
  cluster_wait();
  float totals[2];
#pragma unroll
  for (unsigned parity = 0; parity < 2; ++parity)
    // Reference thread 128 * parity + u: fragment k's chunk pair came from CTA 2 k + parity.
    totals[parity] =
        warp_butterfly_sum(thread_sum_of_pairs(&scratch.chunk_pairs[parity][u], 2 * kClusterThreads));
  // This CTA's warp w holds reference warps w (parity 0) and 4 + w (parity 1).
  if ((u & 31) == 0) {
    scratch.warp_totals[u >> 5] = totals[0];
    scratch.warp_totals[kWarps / 2 + (u >> 5)] = totals[1];
  }
  __syncthreads();
  return warp_totals_sum(scratch.warp_totals);
}

}  // namespace boundary::dev
