// The layout of a rank's device allocation and the signal kernels' parameters, shared by the host
// side (rank_group.cpp) and the kernels (signal_kernels.cu).
#pragma once

#include <boundary/types.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace boundary::gpu::ipc {

// At the start of every rank's allocation. Peers store into ready[] and done[] (each rank its own
// slot, st.release.sys through its mapping); the owner polls them locally (ld.acquire.sys), so
// on several GPUs the spinning stays in local memory. Zero at creation: epoch 0, no error.
struct SignalArea {
  std::uint64_t ready[kMaxRanks];  // ready[p] = e: rank p's partial of step e is written
  std::uint64_t done[kMaxRanks];   // done[p] = e: rank p has read every partial of step e
  std::uint64_t epoch;             // this rank's last step; advanced by arrive on the device
  // The first wait that timed out (error != 0), for the host to read after a synchronize.
  std::uint32_t error;             // an ErrorKind
  std::uint32_t error_peer;        // the rank waited for
  std::uint64_t error_epoch;       // the step the wait needed
  std::uint64_t error_seen;        // what the peer's flag held at the deadline
};

enum ErrorKind : std::uint32_t {
  kNoError = 0,
  kReadyTimeout = 1,  // arrive: a peer's partial of this step never came
  kDoneTimeout = 2,   // wait_writable: a peer never finished reading the last step
};

// The partial starts here: past the signal area, on a 4 KiB boundary (16-byte alignment needed).
inline constexpr std::size_t kPartialOffset = 4096;
static_assert(sizeof(SignalArea) <= kPartialOffset);

struct SignalParams {
  SignalArea* own;                   // this rank's area, in its own allocation
  SignalArea* areas[kMaxRanks];      // every rank's area as mapped in this process (own included)
  int rank;
  int ranks;
  std::uint64_t timeout_ns;          // each wait's deadline on %globaltimer
  int planted;                       // an IpcBug: which wait is skipped (tests only)
};

cudaError_t launch_wait_writable(const SignalParams& p, bool pdl, cudaStream_t s);
cudaError_t launch_arrive(const SignalParams& p, bool pdl, cudaStream_t s);
cudaError_t launch_depart(const SignalParams& p, bool pdl, cudaStream_t s);
// Loads the three kernels now (before a capture), not lazily at their first launch.
cudaError_t prepare_signal_kernels();

}  // namespace boundary::gpu::ipc
