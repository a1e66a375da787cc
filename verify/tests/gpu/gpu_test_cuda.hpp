// The GPU tests' CUDA plumbing: checked calls, device and pinned buffers, streams, graphs and
// captures, uploads and the poison fill, and the namespace every GPU test helper lives in.
#pragma once

#include <boundary/gpu/cuda_check.hpp>
#include <boundary/gpu/device_buffer.hpp>
#include <boundary/gpu/draft_boundary.hpp>
#include <boundary/types.hpp>

#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <utility>

namespace gpu_test {

using namespace boundary;
using gpu::DeviceBuffer;
using gpu::Dtype;
using gpu::TensorView;
using gpu::Variant;

// Every CUDA call is checked; a failure ends the test case, naming the call and CUDA's error.
#define CUDA_CHECK(call)                                                           \
  do {                                                                             \
    const cudaError_t cuda_check_error = (call);                                   \
    if (cuda_check_error != cudaSuccess) FAIL(boundary::gpu::cuda_error_message(#call, cuda_check_error)); \
  } while (false)

// In destructors, which must not throw: the failure is recorded and the test case goes on.
#define CUDA_CHECK_NOTHROW(call)                                                        \
  do {                                                                                  \
    const cudaError_t cuda_check_error = (call);                                        \
    if (cuda_check_error != cudaSuccess) FAIL_CHECK(boundary::gpu::cuda_error_message(#call, cuda_check_error)); \
  } while (false)

// Page-locked host memory: downloads of 4096-row batches at full PCIe speed.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes) : bytes_(bytes) { CUDA_CHECK(cudaMallocHost(&data_, bytes)); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (data_) CUDA_CHECK_NOTHROW(cudaFreeHost(data_));
  }
  void* get() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// A blocking stream by default: the legacy-stream cudaMemcpy uploads are ordered before it.
class Stream {
 public:
  explicit Stream(unsigned flags = cudaStreamDefault) { CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, flags)); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (stream_) CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream_));
  }
  operator cudaStream_t() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class Graph {
 public:
  Graph() = default;
  explicit Graph(cudaGraph_t g) : graph_(g) {}
  Graph(Graph&& o) noexcept : graph_(std::exchange(o.graph_, nullptr)) {}
  Graph& operator=(Graph&& o) noexcept {
    std::swap(graph_, o.graph_);
    return *this;
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph() {
    if (graph_) CUDA_CHECK_NOTHROW(cudaGraphDestroy(graph_));
  }
  cudaGraph_t get() const { return graph_; }

 private:
  cudaGraph_t graph_ = nullptr;
};

class GraphExec {
 public:
  explicit GraphExec(const Graph& g) {
    REQUIRE(g.get() != nullptr);
    CUDA_CHECK(cudaGraphInstantiate(&exec_, g.get(), 0));
  }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec() {
    if (exec_) CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec_));
  }
  cudaGraphExec_t get() const { return exec_; }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

// A stream capture that is ended (and what it captured destroyed) even when a check fails
// half-way, so that no later test finds its stream still capturing.
class Capture {
 public:
  Capture(cudaStream_t stream, cudaStreamCaptureMode mode) : stream_(stream) {
    CUDA_CHECK(cudaStreamBeginCapture(stream, mode));
    active_ = true;
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  cudaGraph_t end() {
    active_ = false;
    cudaGraph_t g = nullptr;
    CUDA_CHECK(cudaStreamEndCapture(stream_, &g));
    return g;
  }
  ~Capture() {
    if (!active_) return;
    // Only on a failure path: the capture may be invalidated, so its errors are expected here.
    cudaGraph_t g = nullptr;
    if (cudaStreamEndCapture(stream_, &g) == cudaSuccess && g) cudaGraphDestroy(g);
    cudaGetLastError();
  }

 private:
  cudaStream_t stream_;
  bool active_ = false;
};

inline std::size_t elements(std::int64_t rows) { return static_cast<std::size_t>(rows) * kH; }
inline std::size_t bytes16(std::int64_t rows) { return elements(rows) * 2; }
inline std::size_t bytes32(std::int64_t rows) { return elements(rows) * 4; }

template <class T>
inline DeviceBuffer upload(const T* host, std::size_t count) {
  return DeviceBuffer(host, count * sizeof(T));
}

inline void poison(void* device, std::size_t bytes, cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(device, 0xFF, bytes, stream));
}

inline unsigned host_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace gpu_test
