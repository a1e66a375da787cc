// Bits first: a kernel is timed only after its out and new_stream equal the reference's bit for bit
// (the eager chain for the DraftBoundary; the all-reduce kernel + DraftBoundary for the all-reduce
// boundary). Each side's outputs are poisoned differently first, so that an element either side
// left unwritten shows as a difference. The copy baselines likewise: dst == src before timing.
#pragma once

#include "bench_inputs.hpp"

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace boundary::bench {

// The bits differ from the reference: timing the kernel would be worthless.
class Mismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// DraftBoundary (variant: nullopt, the dispatcher's) against the eager chain on m rows of set.
void check_bits(gpu::DraftBoundary& fused, gpu::EagerChain& eager, const BufferSet& set, std::int64_t m,
                StreamDtype dtype, cudaStream_t s, const std::optional<gpu::Variant>& variant);

// The all-reduce boundary (variant: the one timed) against the all-reduce kernel + DraftBoundary
// on m rows of set.
void check_all_reduce_bits(gpu::AllReduceBoundary& fused, gpu::DraftBoundary& draft, const PartialSet& set,
                           std::int64_t m, const gpu::Variant& variant, cudaStream_t s);

// One source and destination of a copy kernel, `bytes` (a multiple of 16) each.
struct CopiedBytes {
  const void* src;
  void* dst;
  std::size_t bytes;
};
// `copy` run twice, every dst poisoned before each run: every dst must then equal its src and
// `counter` (a dynamic copy's; nullptr for none) be back at zero. The second run is the one
// compared, so that a launch which left its counter unreset (each graph replay starts from it)
// shows as chunks missing. Synchronizes s.
void check_copy(const std::function<void()>& copy, const std::vector<CopiedBytes>& parts, const unsigned* counter,
                cudaStream_t s, const std::string& what);

}  // namespace boundary::bench
