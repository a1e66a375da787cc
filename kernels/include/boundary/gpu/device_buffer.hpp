// Device memory owned by one object: allocated, filled from the host, read back, freed.
#pragma once

#include <boundary/gpu/draft_boundary.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace boundary::gpu {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);  // throws CudaError
  DeviceBuffer(const void* host, std::size_t bytes);  // allocates and copies host -> device, landed
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* get() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  // `offset` bytes in: a row of a batch, or a deliberately misaligned operand.
  void* at(std::size_t offset) const { return static_cast<std::uint8_t*>(data_) + offset; }
  void fill(unsigned char byte);                 // synchronous
  void download(void* host, std::size_t bytes) const;  // synchronous, device -> host
  TensorView view(Dtype dtype, std::vector<std::int64_t> shape) const { return {data_, dtype, std::move(shape)}; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace boundary::gpu
