// The benchmark's own kernels: its floors and its ceiling, each behind a host launcher, so that
// nvcc compiles this file alone and the rest of the benchmark is plain C++.
//   - an empty kernel (the launch floor of one CTA a row), with or without PDL;
//   - the cluster grid's floors (clusters of 8 CTAs of 128 threads, one a row): an empty cluster
//     launch, and one with three cluster barriers;
//   - the traffic kernel on that grid: the R partials (or the DraftBoundary's branch) and the stream
//     in, out and new_stream out, one add per element and no row sums. A latency floor for small m
//     (one 16-byte word a thread, no loop), no bandwidth ceiling;
//   - the SM copy: the bandwidth ceiling (16-byte loads and stores, four loads in flight a thread),
//     twice: its work divided statically and handed out at run time (Division);
//   - the SM copy of a boundary's own bytes on that grid, PDL on, both ways: the time a kernel that
//     only moves them takes, launch, ramp and tail included, timed like the boundary (per m);
//   - a compare of two buffers, for the copies' checks before timing.
#pragma once

#include <boundary/types.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace boundary::bench {

// m CTAs of kThreads, doing nothing.
void launch_empty(std::int64_t m, bool pdl, cudaStream_t s);

enum class ClusterFloor { empty, barriers };
// m clusters of 8 CTAs of 128 threads, PDL on.
void launch_cluster_floor(ClusterFloor floor, std::int64_t m, cudaStream_t s);

struct TrafficParams {
  const uint4* partials[kMaxRanks];
  int ranks;
  const float4* stream;
  uint4* out;
  float4* new_stream;
};
// The traffic of m rows on m clusters of 8 CTAs of 128 threads, PDL on (waiting, then triggering
// its successor at once, as the fused kernels do).
void launch_traffic(const TrafficParams& p, std::int64_t m, cudaStream_t s);

// How a copy divides its work among the CTAs of its grid (8 CTAs of 256 threads per SM). SMs
// stream at different rates (H200): a static division ends with the slowest SM, one at run time
// with the average, so the ceiling is the faster of the two.
enum class Division {
  grid_stride,  // a grid-stride loop
  dynamic,      // 16 KB chunks taken from a counter (see copy_chunks in bench_kernels.cu)
};
const char* division_name(Division d);  // "grid-stride", "chunks handed out at run time"

// The dynamic copies' counter: two unsigned words on the device (the next chunk, the CTAs done),
// zero before the first launch; every launch leaves them zero. One launch at a time may use it.
inline constexpr std::size_t kChunkCounterBytes = 2 * sizeof(unsigned);

// dst = src, `bytes` (a multiple of 16). counter: for Division::dynamic (ignored otherwise).
void launch_sm_copy(Division d, const void* src, void* dst, std::size_t bytes, unsigned* counter, int sm_count,
                    cudaStream_t s);
// The tensors of one boundary's buffer set: branch -> out (BF16), stream -> new_stream (F32).
struct BoundaryCopy {
  const uint4* branch;
  uint4* out;
  const uint4* stream;  // in the given stream dtype
  uint4* new_stream;
};
// Copies m rows of each, PDL on (the dynamic copy touches its counter only after the wait). A BF16
// stream (half new_stream's bytes) lands in new_stream twice, in its first and its second half.
void launch_boundary_copy(Division d, StreamDtype stream, const BoundaryCopy& c, std::int64_t m, unsigned* counter,
                          int sm_count, cudaStream_t s);
// Adds to *count (device memory) the number of 16-byte words in which a and b (`bytes` each) differ.
void launch_count_differences(const void* a, const void* b, std::size_t bytes, unsigned long long* count,
                              cudaStream_t s);
// A non-constant pattern into `bytes` (a multiple of 4), so that no copy can be elided or compressed.
void fill_pattern(void* p, std::size_t bytes, cudaStream_t s);

// Loads every kernel above now: with lazy loading one would load at its first launch, which is
// inside a capture (the library's prepare() calls do the same for its kernels).
void prepare_bench_kernels();

}  // namespace boundary::bench
