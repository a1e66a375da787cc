// Edge rows: one pattern of special values per row (NaN payloads, infinities, signed zeros,
// subnormals, overflowing and vanishing sums of squares, FPRev order-revealing rows), each laid
// over a realistic row. Shared by the GPU tests and capture's edge fixtures.
#pragma once

#include <boundary/generate.hpp>
#include <boundary/safetensors.hpp>
#include <boundary/types.hpp>

#include <cstdint>
#include <span>

namespace boundary {

// One row to edit, in both stream dtypes at once (the BF16 stream is the F32 one rounded, unless
// a pattern sets its bits), with the row's own random numbers.
struct RowEdit {
  std::uint16_t* branch;
  float* s32;
  std::uint16_t* s16;
  Rng* rng;
  std::uint32_t sign() const { return static_cast<std::uint32_t>(rng->next() & 1u); }
  std::uint32_t below(std::uint32_t n) const { return static_cast<std::uint32_t>(rng->next() % n); }
};

struct EdgePattern {
  const char* name;
  void (*edit)(const RowEdit&);
};

std::span<const EdgePattern> edge_patterns();

// One row per pattern (row i holds pattern i) over realistic rows of `seed`.
safetensors::File generate_edge_inputs(const Constants& constants, std::uint64_t seed, StreamDtype stream_dtype);

}  // namespace boundary
