#include <boundary/gpu/device_buffer.hpp>

#include <boundary/gpu/cuda_check.hpp>

#include <utility>

namespace boundary::gpu {

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  cuda_check(cudaMalloc(&data_, bytes), "cudaMalloc");
}

DeviceBuffer::DeviceBuffer(const void* host, std::size_t bytes) : DeviceBuffer(bytes) {
  cuda_check(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy host to device");
  // From pageable memory cudaMemcpy may return before its DMA has landed, and a kernel on a
  // non-blocking stream would not wait for it: wait here, so that the buffer is ready for any stream.
  cuda_check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize after cudaMemcpy host to device");
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
  cuda_check(cudaMemset(data_, byte, bytes_), "cudaMemset");
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

void DeviceBuffer::download(void* host, std::size_t bytes) const {
  cuda_check(cudaMemcpy(host, data_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy device to host");
}

}  // namespace boundary::gpu
