// What the benchmark measures: the SM copy ceiling once, then per m the fused DraftBoundary (the
// dispatched variant, both stream dtypes, each layout forced), the eager chain, its floors (empty
// launches, the traffic of its bytes, the SM copy of its bytes) and, with ranks, the all-reduce boundary against its chain.
#pragma once

#include "bench_inputs.hpp"
#include "bench_timing.hpp"

#include <filesystem>
#include <optional>
#include <vector>

namespace boundary::bench {

struct Options {
  std::vector<std::int64_t> rows = {1, 8, 32, 132, 1024, 8192};
  std::filesystem::path constants;
  std::optional<std::filesystem::path> json;
  int launches = 20;   // per graph: amortises the graph's own launch over many boundaries
  int replays = 50;    // timed replays; the median is reported
  int warmup = 10;     // untimed replays first: clocks up, module loaded, graph resident
  std::uint64_t seed = 1;
  double copy_gib = 2.0;  // source size of the copy-bandwidth reference
  int ranks = 8;          // partials of the all-reduce boundary; 0: not measured
};

// Decode batches stay L2-resident between boundaries (the next layer's stream is this one's
// output), so only prefill-sized batches are timed from HBM.
inline constexpr std::int64_t kRotateFromRows = 1024;

struct CopyTiming {
  Timing time;
  double gbps_median = 0, gbps_best = 0;
};

// Both copies of one buffer far larger than the L2, so that every byte comes from and goes to HBM.
// The SM copy is the ceiling every "% of copy" is taken against: the copy engines behind
// cudaMemcpyAsync move less (kept as a second figure).
struct CopyResult {
  std::size_t bytes = 0;  // source size; read + written is twice that
  CopyTiming sm, memcpy;
  double gbps_median() const { return sm.gbps_median; }
};
CopyResult measure_copy(cudaStream_t s, const Options& o, const DeviceInfo& dev);

// The all-reduce boundary at one m: the fused kernel against the all-reduce kernel followed by
// the DraftBoundary, F32 stream stored, each with its own buffer rotation.
struct AllReduceResult {
  int ranks = 0, sets = 1, launches = 0;
  gpu::Layout layout = gpu::Layout::quad;  // the dispatcher's choice for m
  Timing fused, chain;
  Timing cluster, pair, quad;  // each layout forced
  Timing empty_cluster, cluster_barriers, traffic;  // the floors of the cluster grid, PDL on
  double bytes = 0;
};

struct RowResult {
  std::int64_t m = 0;
  int sets = 1;
  int launches = 0;  // per graph
  Timing empty_plain, empty_pdl, fused_f32, fused_bf16, eager;
  gpu::Layout layout = gpu::Layout::cta;  // the dispatcher's choice for m (fused_f32, fused_bf16)
  Timing cta_f32, cluster_f32, pair_f32, quad_f32;  // each layout forced, F32 stream stored
  Timing traffic;  // the floor of its bytes: the traffic kernel over branch, stream, out and new_stream
  Timing copy;     // the SM copy of the same four tensors on a full grid (bench_kernels.hpp), PDL on
  double bytes_f32 = 0, bytes_bf16 = 0, bytes_eager = 0;
  std::optional<AllReduceResult> all_reduce;

  // The floor one launch of this grid can reach: the faster of the two empty launches.
  const Timing& empty() const { return empty_pdl.median_us <= empty_plain.median_us ? empty_pdl : empty_plain; }
};

struct Bench {
  const Options& options;
  const DeviceInfo& dev;
  const HostInputs& inputs;
  gpu::DraftBoundary& fused;
  gpu::EagerChain& eager;
  gpu::AllReduceBoundary& all_reduce;
  cudaStream_t stream;
  std::size_t operands;  // bytes of the gates and weights
};

// Throws Mismatch (bench_bits.hpp) before timing a kernel whose bits differ.
RowResult measure_rows(const Bench& b, std::int64_t m);

inline double gbps(double bytes, const Timing& t) { return bytes / (t.median_us * 1e3); }

}  // namespace boundary::bench
