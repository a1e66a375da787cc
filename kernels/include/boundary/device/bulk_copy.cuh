// Asynchronous bulk copies from global into shared memory (the Hopper copy engine behind
// cp.async.bulk) and the shared-memory barriers that say when one has landed: what lets a CTA
// keep several rows in flight without a register for any of their bytes; and a thread's own
// 16-byte copies (cp.async), for the same reason. One PTX instruction a
// function. Shared-memory operands are taken as generic pointers into this CTA's shared memory.
#pragma once

#include <cstdint>

namespace boundary::dev {

__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// A barrier that completes a phase when `arrivals` threads have arrived and every byte announced
// by expect_bytes has landed.
__device__ __forceinline__ void barrier_init(std::uint64_t* bar, std::uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(arrivals) : "memory");
}

// Makes this thread's shared-memory writes (barrier initialisations included) visible to the
// copy engine, which is another proxy: before its first copy into a barrier, and before a copy
// into memory this CTA has used.
__device__ __forceinline__ void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// This thread's arrival, announcing `bytes` more that copies will land in the current phase.
__device__ __forceinline__ void barrier_arrive_expect_bytes(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)), "r"(bytes)
               : "memory");
}

// Waits until the barrier's phase of the given parity (0 for its first phase, then 1, 0, ...)
// has completed; the landed bytes are then visible to this thread.
__device__ __forceinline__ void barrier_wait(std::uint64_t* bar, std::uint32_t parity) {
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "wait:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra wait;\n\t}" ::"r"(shared_address(bar)),
      "r"(parity)
      : "memory");
}

// Copies [src, src + bytes) into this CTA's shared memory at dst (both 16-byte aligned, bytes a
// multiple of 16); its bytes count towards bar's current phase.
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, std::uint32_t bytes,
                                                    std::uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   shared_address(dst)),
               "l"(src), "r"(bytes), "r"(shared_address(bar))
               : "memory");
}

// Asks L2 for [src, src + bytes) (16-byte aligned, bytes a multiple of 16): a hint, no data to
// this CTA; safe before the PDL wait, as L2 is the device's point of coherence.
__device__ __forceinline__ void bulk_prefetch_to_l2(const void* src, std::uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
}

// Copies 16 bytes at src (global, 16-byte aligned) into this CTA's shared memory at dst, cached in
// L1 on the way (.ca: other CTAs on the SM that copy the same bytes find them there), without a
// register: a per-thread copy, landed for this thread after copies_wait_all. For a thread's own
// few pieces, where a bulk copy's barrier would cost more.
__device__ __forceinline__ void copy_16_to_shared(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(shared_address(dst)), "l"(src) : "memory");
}

// Closes this thread's copy_16_to_shared copies issued so far into one group.
__device__ __forceinline__ void copies_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Waits until every group of this thread's copies has landed; their bytes are then visible to it.
__device__ __forceinline__ void copies_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

// The address of p (in this CTA's shared memory) in the shared memory of the cluster's CTA `rank`.
__device__ __forceinline__ std::uint32_t cluster_shared_address(const void* p, std::uint32_t rank) {
  std::uint32_t a;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(shared_address(p)), "r"(rank));
  return a;
}

// Stores v into the shared memory of the cluster's CTA `rank` at the same place as p (in this
// CTA's shared memory), its 4 bytes counting towards that CTA's barrier at the same place as bar.
// From a register: no copy engine, and nothing of this CTA's shared memory is read later.
__device__ __forceinline__ void store_to_cluster_cta(float* p, float v, std::uint64_t* bar, std::uint32_t rank) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(
                   cluster_shared_address(p, rank)),
               "r"(__float_as_uint(v)), "r"(cluster_shared_address(bar, rank))
               : "memory");
}

// The same for an 8-byte v. No release: a store that orders the thread's earlier global stores
// waits for them to complete.
__device__ __forceinline__ void store_to_cluster_cta(std::int64_t* p, std::int64_t v, std::uint64_t* bar,
                                                     std::uint32_t rank) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" ::"r"(
                   cluster_shared_address(p, rank)),
               "l"(v), "r"(cluster_shared_address(bar, rank))
               : "memory");
}

// This thread's arrival (release: its earlier shared-memory stores are seen by whoever waits for
// the phase).
__device__ __forceinline__ void barrier_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(bar)) : "memory");
}

// barrier_wait for bytes that other CTAs of the cluster landed in this CTA's shared memory:
// the wait relaxed, then an acquire at cluster scope restricted to shared memory. An acquire of
// the wait itself (try_wait.acquire.cluster) also orders global memory, which ptxas implements
// by invalidating the SM's whole L1 (CCTL.IVALL) at every row sum; these waits order only the
// shared-memory bytes that st.async landed.
__device__ __forceinline__ void barrier_wait_cluster(std::uint64_t* bar, std::uint32_t parity) {
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "wait:\n\t"
      "mbarrier.try_wait.parity.relaxed.cluster.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra wait;\n\t"
      "fence.acquire.sync_restrict::shared::cluster.cluster;\n\t}" ::"r"(shared_address(bar)),
      "r"(parity)
      : "memory");
}

// Makes this thread's barrier initialisations visible to the other CTAs of the cluster (whose
// copies complete on them), before a cluster barrier.
__device__ __forceinline__ void fence_barrier_init_cluster() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

}  // namespace boundary::dev
