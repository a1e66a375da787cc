// A boundary object's row hand-out on the host side: the device words its cta launches take rows
// from (boundary/device/row_handout.cuh) and the tags that tell its launches apart.
#pragma once

#include <boundary/device/row_handout.hpp>

#include <atomic>
#include <cstdint>

namespace boundary::gpu::detail {

class RowCounter {
 public:
  // Allocates the two words on the current device and zeroes them (synchronously: a launch on a
  // non-blocking stream must find them idle). Throws CudaError.
  RowCounter();
  ~RowCounter();
  RowCounter(const RowCounter&) = delete;
  RowCounter& operator=(const RowCounter&) = delete;

  // The words and a tag for one launch: a host sequence number, never 0 (the idle word's).
  dev::RowHandout next_launch();
  unsigned long long* words() const { return words_; }

 private:
  unsigned long long* words_ = nullptr;
  std::atomic<std::uint32_t> last_tag_{0};
};

}  // namespace boundary::gpu::detail
