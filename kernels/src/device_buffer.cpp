#include <boundary/gpu/device_buffer.hpp>

#include <cuda_runtime_api.h>

#include <string>
#include <utility>

namespace boundary::gpu {

namespace {
void ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  throw CudaError(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}
}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  ok(cudaMalloc(&data_, bytes), "cudaMalloc");
}

DeviceBuffer::DeviceBuffer(const void* host, std::size_t bytes) : DeviceBuffer(bytes) {
  ok(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy host to device");
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(bytes_, o.bytes_);
  return *this;
}

DeviceBuffer::~DeviceBuffer() { cudaFree(data_); }

void DeviceBuffer::fill(unsigned char byte) {
  ok(cudaMemset(data_, byte, bytes_), "cudaMemset");
  ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

void DeviceBuffer::download(void* host, std::size_t bytes) const {
  ok(cudaMemcpy(host, data_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy device to host");
}

}  // namespace boundary::gpu
