#include "bench_timing.hpp"

#include <boundary/gpu/cuda_check.hpp>

#include <algorithm>
#include <vector>

namespace boundary::bench {

namespace {

using gpu::cuda_check;

struct EventDeleter {
  void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};
struct GraphDeleter {
  void operator()(cudaGraph_t g) const { cudaGraphDestroy(g); }
};
struct GraphExecDeleter {
  void operator()(cudaGraphExec_t g) const { cudaGraphExecDestroy(g); }
};
using Event = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDeleter>;
using Graph = std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, GraphDeleter>;
using GraphExec = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, GraphExecDeleter>;

std::vector<Event> make_events(int n) {
  std::vector<Event> events;
  for (int i = 0; i < n; ++i) {
    cudaEvent_t e = nullptr;
    cuda_check(cudaEventCreate(&e), "cudaEventCreate");
    events.emplace_back(e);
  }
  return events;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

GraphExec capture(cudaStream_t s, int launches, const Enqueue& enqueue) {
  // Global mode: any call that is unsafe during a capture, from any thread, fails loudly.
  cuda_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  try {
    for (int i = 0; i < launches; ++i) enqueue(i);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(s, &broken);  // leave the stream usable; the first error is the one to report
    if (broken) cudaGraphDestroy(broken);
    throw;
  }
  cudaGraph_t raw = nullptr;
  cuda_check(cudaStreamEndCapture(s, &raw), "cudaStreamEndCapture");
  const Graph graph(raw);
  cudaGraphExec_t exec = nullptr;
  cuda_check(cudaGraphInstantiate(&exec, graph.get(), 0), "cudaGraphInstantiate");
  return GraphExec(exec);
}

}  // namespace

Stream make_stream() {
  cudaStream_t s = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return Stream(s);
}

DeviceInfo device_info() {
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp p{};
  cuda_check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  return {p.name, p.multiProcessorCount, static_cast<std::size_t>(p.l2CacheSize)};
}

Timing time_graph(cudaStream_t s, const Schedule& sched, const Enqueue& enqueue, const std::string& what) {
  const GraphExec exec = capture(s, sched.launches, enqueue);
  cuda_check(cudaGraphUpload(exec.get(), s), ("cudaGraphUpload (" + what + ")").c_str());
  for (int i = 0; i < sched.warmup; ++i)
    cuda_check(cudaGraphLaunch(exec.get(), s), ("cudaGraphLaunch (" + what + ", warm-up)").c_str());
  const std::vector<Event> start = make_events(sched.replays), stop = make_events(sched.replays);
  for (int r = 0; r < sched.replays; ++r) {
    cuda_check(cudaEventRecord(start[r].get(), s), "cudaEventRecord");
    cuda_check(cudaGraphLaunch(exec.get(), s), ("cudaGraphLaunch (" + what + ")").c_str());
    cuda_check(cudaEventRecord(stop[r].get(), s), "cudaEventRecord");
  }
  // A kernel fault surfaces here, not at the launch.
  cuda_check(cudaStreamSynchronize(s), ("replaying the graph (" + what + ")").c_str());
  std::vector<double> per_launch_us;
  for (int r = 0; r < sched.replays; ++r) {
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start[r].get(), stop[r].get()), "cudaEventElapsedTime");
    per_launch_us.push_back(1000.0 * ms / sched.launches);
  }
  return {median(per_launch_us), *std::min_element(per_launch_us.begin(), per_launch_us.end())};
}

}  // namespace boundary::bench
