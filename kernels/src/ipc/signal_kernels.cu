// The signal kernels of the rank protocol (boundary/gpu/rank_ipc.hpp): one warp each, thread p
// for peer p, launched before and after the boundary in the rank's stream, apart from the
// boundary kernels. Flags are release stores and acquire loads at system scope, so the same
// kernels hold when the peers are other GPUs; the epoch is read and advanced here, on the device,
// so that a CUDA graph of a step replays as the next step.
#include "signal_area.hpp"

#include <boundary/device/pdl_launch.cuh>
#include <boundary/gpu/rank_ipc.hpp>

namespace boundary::gpu::ipc {

namespace {

constexpr int kThreads = 32;
static_assert(kMaxRanks <= kThreads);
constexpr unsigned kSleepNs = 200;  // between polls: less traffic on the flag, the deadline barely later

__device__ __forceinline__ std::uint64_t load_acquire_sys(const std::uint64_t* p) {
  std::uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void store_release_sys(std::uint64_t* p, std::uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Every signal kernel lets its dependent start at once (a PDL dependent still waits, in its own
// griddepcontrol.wait, for this grid's completion), then waits for its own prerequisite: the
// kernel before it has completed and its writes are visible.
__device__ __forceinline__ void pdl_begin() {
  asm volatile("griddepcontrol.launch_dependents;" :::);
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

__device__ __forceinline__ std::uint64_t read_epoch(const SignalArea* a) {
  return *reinterpret_cast<const volatile std::uint64_t*>(&a->epoch);
}

// A wait that timed out earlier in this group: later waits return at once, so that a dead peer
// costs one deadline, not one per remaining step.
__device__ __forceinline__ bool failed(const SignalArea* a) {
  return *reinterpret_cast<const volatile std::uint32_t*>(&a->error) != kNoError;
}

// Spins until *flag >= epoch. At the deadline it records the error (the first wait to time out
// wins the slot) and returns: the host sees it after a synchronize, and nothing hangs.
__device__ void wait_at_least(SignalArea* own, const std::uint64_t* flag, std::uint64_t epoch, ErrorKind kind, int peer,
                              std::uint64_t timeout_ns) {
  const std::uint64_t start = global_ns();
  std::uint64_t seen = 0;
  while ((seen = load_acquire_sys(flag)) < epoch) {
    if (global_ns() - start > timeout_ns) {
      if (atomicCAS(&own->error, static_cast<std::uint32_t>(kNoError), static_cast<std::uint32_t>(kind)) == kNoError) {
        own->error_peer = static_cast<std::uint32_t>(peer);
        own->error_epoch = epoch;
        own->error_seen = seen;
      }
      return;
    }
    __nanosleep(kSleepNs);
  }
}

__device__ __forceinline__ bool is_peer(const SignalParams& p, int peer) { return peer < p.ranks && peer != p.rank; }

// Before this rank writes its partial of step e + 1: every peer has read its partial of step e.
__global__ void __launch_bounds__(kThreads) wait_writable_kernel(const SignalParams p) {
  pdl_begin();
  const int peer = static_cast<int>(threadIdx.x);
  const std::uint64_t e = read_epoch(p.own);
  if (!is_peer(p, peer) || failed(p.own) || p.planted == static_cast<int>(IpcBug::skip_done_wait)) return;
  wait_at_least(p.own, &p.own->done[peer], e, kDoneTimeout, peer, p.timeout_ns);
}

// After this rank wrote its partial: step e = epoch + 1 begins; publish, then wait for every peer's.
__global__ void __launch_bounds__(kThreads) arrive_kernel(const SignalParams p) {
  pdl_begin();
  const int peer = static_cast<int>(threadIdx.x);
  const std::uint64_t e = read_epoch(p.own) + 1;
  const bool skip = failed(p.own) || p.planted == static_cast<int>(IpcBug::skip_ready_wait);
  __syncthreads();  // every thread has read the epoch before thread 0 advances it
  if (peer == 0) p.own->epoch = e;
  if (!is_peer(p, peer)) return;
  // The partial was written by an earlier kernel (or copy); the system-scope fence orders those
  // writes before the flag for a peer on any GPU, as the release alone orders this thread's own.
  __threadfence_system();
  store_release_sys(&p.areas[peer]->ready[p.rank], e);
  if (!skip) wait_at_least(p.own, &p.own->ready[peer], e, kReadyTimeout, peer, p.timeout_ns);
}

// After every kernel of this rank that reads the partials of step e: tell each peer.
__global__ void __launch_bounds__(kThreads) depart_kernel(const SignalParams p) {
  pdl_begin();
  const int peer = static_cast<int>(threadIdx.x);
  const std::uint64_t e = read_epoch(p.own);
  if (!is_peer(p, peer)) return;
  __threadfence_system();  // the reads of the kernels before are complete before the peer may overwrite
  store_release_sys(&p.areas[peer]->done[p.rank], e);
}

}  // namespace

cudaError_t launch_wait_writable(const SignalParams& p, bool pdl, cudaStream_t s) {
  return dev::launch_pdl(wait_writable_kernel, dim3(1), dim3(kThreads), pdl, s, p);
}
cudaError_t launch_arrive(const SignalParams& p, bool pdl, cudaStream_t s) {
  return dev::launch_pdl(arrive_kernel, dim3(1), dim3(kThreads), pdl, s, p);
}
cudaError_t launch_depart(const SignalParams& p, bool pdl, cudaStream_t s) {
  return dev::launch_pdl(depart_kernel, dim3(1), dim3(kThreads), pdl, s, p);
}

cudaError_t prepare_signal_kernels() {
  cudaFuncAttributes a{};
  for (const void* k : {reinterpret_cast<const void*>(wait_writable_kernel), reinterpret_cast<const void*>(arrive_kernel),
                        reinterpret_cast<const void*>(depart_kernel)})
    if (const cudaError_t e = cudaFuncGetAttributes(&a, k); e != cudaSuccess) return e;
  return cudaSuccess;
}

}  // namespace boundary::gpu::ipc
