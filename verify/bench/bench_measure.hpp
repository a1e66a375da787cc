// What the benchmark measures: the SM copy ceiling once, then per m the fused DraftBoundary (the
// dispatched variant, both stream dtypes, each layout forced), the eager chain, its floors (empty
// launches, the traffic of its bytes, the SM copy of its bytes) and, with ranks, the all-reduce boundary against its chain.
// Each SM copy twice, its work divided statically and at run time (Division): the faster is the
// ceiling, since SMs stream at different rates and a static division waits for the slowest.
#pragma once

#include "bench_inputs.hpp"
#include "bench_kernels.hpp"
#include "bench_timing.hpp"

#include <filesystem>
#include <optional>
#include <string>
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
  // The fused kernels' gates: auto, the dispatcher's choice (Variant::late_gates from variant_for),
  // or early / late at every m, to measure one against the other in one run.
  std::string gates = "auto";
  // Rows a resident CTA (F32, BF16 stream) and a resident quad cluster above which the fused
  // kernels hand rows out (gpu::HandoutThresholds; 0: never); empty: the device's measured ones.
  std::vector<std::int64_t> handout;
};

// Decode batches stay L2-resident between boundaries (the next layer's stream is this one's
// output), so only prefill-sized batches are timed from HBM.
inline constexpr std::int64_t kRotateFromRows = 1024;

struct CopyTiming {
  Timing time;
  double gbps_median = 0, gbps_best = 0;
};

// The copies of one buffer far larger than the L2, so that every byte comes from and goes to HBM.
// The faster SM copy is the ceiling every "% of SM copy" is taken against: the copy engines
// behind cudaMemcpyAsync move less (kept as a further figure).
struct CopyResult {
  std::size_t bytes = 0;  // source size; read + written is twice that
  CopyTiming sm, sm_dynamic, memcpy;  // sm: grid-stride; sm_dynamic: chunks handed out at run time
  Division ceiling_division() const {
    return sm_dynamic.gbps_median > sm.gbps_median ? Division::dynamic : Division::grid_stride;
  }
  const CopyTiming& ceiling() const { return ceiling_division() == Division::dynamic ? sm_dynamic : sm; }
  double gbps_median() const { return ceiling().gbps_median; }
};
// counter: the dynamic copy's (kChunkCounterBytes, zero). Throws Mismatch before timing a copy
// whose destination differs from its source.
CopyResult measure_copy(cudaStream_t s, const Options& o, const DeviceInfo& dev, unsigned* counter);

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

// The SM copy of a boundary's own tensors at one m (bench_kernels.hpp: launch_boundary_copy), on
// its full grid with PDL, in both divisions; the faster (division()) is the floor of those bytes.
struct CopyFloor {
  Timing grid_stride, dynamic;
  Division division() const {
    return dynamic.median_us < grid_stride.median_us ? Division::dynamic : Division::grid_stride;
  }
};

struct RowResult {
  std::int64_t m = 0;
  int sets = 1;
  int launches = 0;  // per graph
  Timing empty_plain, empty_pdl, fused_f32, fused_bf16, eager;
  gpu::Layout layout = gpu::Layout::cta;  // the dispatcher's choice for m (fused_f32, fused_bf16)
  gpu::ClusterPlacement placement = gpu::ClusterPlacement::spread;  // the same (the cluster layout's)
  // Each layout forced, F32 stream stored (the cluster layout placed spread, and balanced).
  Timing cta_f32, cluster_f32, cluster_balanced_f32, pair_f32, quad_f32;
  Timing traffic;  // the floor of its bytes: the traffic kernel over branch, stream, out and new_stream
  CopyFloor copy_f32, copy_bf16;  // the SM copy of its tensors (branch, stream, out, new_stream), each stream dtype
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
  unsigned* chunk_counter;  // the dynamic copies' (kChunkCounterBytes, zero between launches)
};

// Throws Mismatch (bench_bits.hpp) before timing a kernel whose bits differ (or a copy whose
// destination differs from its source).
RowResult measure_rows(const Bench& b, std::int64_t m);

inline double gbps(double bytes, const Timing& t) { return bytes / (t.median_us * 1e3); }

}  // namespace boundary::bench
