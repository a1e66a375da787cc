// One rank of the all-reduce boundary in its own process (tensor parallelism as vLLM and SGLang
// run it: one process per GPU, or several on one GPU). Each rank allocates its partial buffer
// and a signal area in one device allocation, exports it with cudaIpcGetMemHandle, publishes the
// handle as a file in a directory the launcher names (the channel), and maps its peers' with
// cudaIpcOpenMemHandle. A step, on the caller's CUDA stream (graph-capturable, PDL-compatible):
//
//   group.wait_writable(s);       // every peer has read this rank's partial of the last step
//   ... write partial(rank) ...   // e.g. the row-parallel GEMM's output
//   group.arrive(s);              // publishes it; waits until every peer's partial of this step is written
//   boundary.launch(...);         // reads all R partials (fused kernel and/or eager chain)
//   group.depart(s);              // tells every peer this rank has read their partials
//
// The epoch (the step count) lives in device memory and advances in arrive's kernel, so a captured
// step replays correctly. Every wait is a device-side spin with a %globaltimer deadline: on expiry
// it records an error in this rank's signal area and returns (later waits then return at once);
// check() after a synchronize throws RankError naming the wait, the peer and the step.
#pragma once

#include <boundary/gpu/all_reduce_boundary.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace boundary::gpu {

// A peer did not come (no handle file in time), died, or did not arrive at a device wait in time.
class RankError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A planted bug, for the tests that must see the protocol's checks fail: a wait skipped.
enum class IpcBug : std::uint8_t {
  none,
  skip_ready_wait,  // arrive does not wait for the peers' partials: a stale read
  skip_done_wait,   // wait_writable does not wait for the peers' reads: an early overwrite
};

struct RankConfig {
  std::filesystem::path channel;  // a directory, fresh for the group, named by the launcher
  int rank = 0;
  int ranks = 1;                  // 1..8
  std::int64_t max_rows = 1;      // the partial buffer's capacity, rows of 8192 BF16
  std::chrono::milliseconds timeout{10000};  // each device wait, and each host rendezvous
  IpcBug planted = IpcBug::none;
};

class RankGroup {
 public:
  // Allocates and exports this rank's memory, writes its handle file, opens every peer's (each
  // within the timeout) and waits until every peer has opened this rank's. InputError for a bad
  // config, RankError for a peer that did not come, CudaError for a failed CUDA call.
  explicit RankGroup(const RankConfig& config);
  // After the caller's last step has completed: closes the peers' mappings, then frees this rank's
  // memory once every live peer has closed its own (freeing first would be undefined behaviour).
  ~RankGroup();
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  int rank() const { return config_.rank; }
  int ranks() const { return config_.ranks; }
  std::int64_t max_rows() const { return config_.max_rows; }
  // Rank r's partial (this rank's own, or a peer's as mapped here): BF16 [m, 8192], m <= max_rows.
  TensorView partial(int r, std::int64_t m) const;
  // All R partials in rank order, as AllReduceBoundary and all_reduce() take them.
  std::vector<TensorView> partials(std::int64_t m) const;
  // This rank's step count in device memory (read by kernels that label a step's data).
  const std::uint64_t* device_epoch() const;

  // The three points of a step (see above): one small kernel each, launched with PDL when pdl.
  void wait_writable(cudaStream_t stream, bool pdl = true) const;
  void arrive(cudaStream_t stream, bool pdl = true) const;
  void depart(cudaStream_t stream, bool pdl = true) const;

  // After the stream has synchronized: the error a wait recorded, if any, as a sentence.
  std::optional<std::string> error() const;
  // Throws RankError with error() when there is one.
  void check() const;
  // The peers whose process has exited, as "rank 3 (pid 4242) has exited; ...", or "" when all
  // live: what a failed synchronize (a dead peer's memory) or a timeout should be read with.
  std::string dead_peers() const;
  // The epoch as the device holds it (synchronous).
  std::uint64_t epoch() const;

 private:
  void rendezvous();
  void teardown() noexcept;

  RankConfig config_;
  void* memory_ = nullptr;  // this rank's allocation: signal area, then the partial
  std::vector<void*> mapped_;  // every rank's allocation as seen here (own: memory_)
  std::vector<std::int64_t> peer_pids_;  // from the peers' handle files; 0: not read
  bool closed_ = false;
};

// The boundary one rank computes on the group's R partials: the fused all-reduce boundary, and
// the eager chain (the all-reduce kernel into a scratch branch, then EagerChain). Launch between
// arrive() and depart().
class RankBoundary {
 public:
  RankBoundary(const Constants& constants, const Operands& operands, std::int64_t max_rows);
  // Readies both for a CUDA graph capture (refused during one).
  void prepare(const Variant& variant, cudaStream_t stream = nullptr);
  // The fused kernel into `fused` (variant: nullopt picks variant_for), the eager chain into `eager`;
  // either may be skipped by giving outputs with out.data == nullptr. No checks beyond m <= max_rows.
  void launch(const RankGroup& group, std::int64_t m, const TensorView& stream, const Outputs& fused,
              const Outputs& eager, cudaStream_t cuda_stream, std::optional<Variant> variant = std::nullopt);
  AllReduceBoundary& fused() { return fused_; }

 private:
  AllReduceBoundary fused_;
  EagerChain eager_;
  std::int64_t max_rows_;
  std::unique_ptr<void, void (*)(void*)> branch_;  // BF16 [max_rows, 8192]: the eager chain's all-reduced branch
};

}  // namespace boundary::gpu
