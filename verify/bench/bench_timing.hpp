// Timing as a serving engine runs a decode step: N launches captured as one CUDA graph, each
// replay timed with its own pair of events, the per-launch median and best reported. And the CUDA
// resources of a run, which free themselves when an error unwinds it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>

namespace boundary::bench {

struct StreamDeleter {
  void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
using Stream = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDeleter>;

// Non-blocking: legacy default-stream work can neither join the capture nor fence the replays.
Stream make_stream();

struct DeviceInfo {
  std::string name;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
};
DeviceInfo device_info();

struct Timing {
  double median_us = 0;
  double min_us = 0;
};

struct Schedule {
  int launches, replays, warmup;
};

// Enqueues launch i of the graph (i picks the buffer set where buffers rotate).
using Enqueue = std::function<void(int)>;

// Per-launch microseconds: each replay's time over its launches; median and best replay. `what`
// names the launches in any CUDA error.
Timing time_graph(cudaStream_t s, const Schedule& sched, const Enqueue& enqueue, const std::string& what);

}  // namespace boundary::bench
