// Edge rows: one pattern of special values per row (NaN payloads, infinities, signed zeros,
// subnormals, overflowing and vanishing sums of squares, FPRev order-revealing rows), each laid
// over a realistic row. Shared by the GPU tests and capture's edge fixtures.
#pragma once

#include <boundary/verify/generate.hpp>
#include <boundary/verify/safetensors.hpp>
#include <boundary/types.hpp>

#include <cstdint>
#include <span>
#include <vector>

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
  // The same value in both stream dtypes (the BF16 one rounded).
  void set_stream(int c, float v) const;
  // Bits copied as they are (NaN payloads kept), one pattern per dtype.
  void set_stream_bits(int c, std::uint32_t f32_pattern, std::uint16_t bf16_pattern) const;
};

// Bit patterns from their fields.
constexpr std::uint16_t bf16_bits(std::uint32_t sign, std::uint32_t exp, std::uint32_t frac) {
  return static_cast<std::uint16_t>((sign << 15) | (exp << 7) | frac);
}
constexpr std::uint32_t f32_bits(std::uint32_t sign, std::uint32_t exp, std::uint32_t frac) {
  return (sign << 31) | (exp << 23) | frac;
}
float f32_value(std::uint32_t sign, std::uint32_t exp, std::uint32_t frac);

// Realistic inputs (generate_inputs with an F32 stream) whose rows are edited in both stream
// dtypes at once; finish() keeps the stream dtype asked for. Row r's edit gets its own Rng,
// seeded seed + 1000003 * r.
class EditableRows {
 public:
  EditableRows(const Constants& constants, std::int64_t rows, std::uint64_t seed);
  safetensors::File& file() { return file_; }
  template <class Edit>
  void edit(std::int64_t row, Edit&& edit_row) {
    Rng rng(seed_ + 1000003u * static_cast<std::uint64_t>(row));
    const std::size_t at = static_cast<std::size_t>(row) * kH;
    edit_row(RowEdit{&branch_[at], &s32_[at], &s16_[at], &rng});
  }
  safetensors::File finish(StreamDtype stream_dtype) &&;

 private:
  std::uint64_t seed_;
  safetensors::File file_;
  std::uint16_t* branch_;
  float* s32_;
  std::vector<std::uint16_t> s16_;
};

struct EdgePattern {
  const char* name;
  void (*edit)(const RowEdit&);
};

std::span<const EdgePattern> edge_patterns();

// One row per pattern (row i holds pattern i) over realistic rows of `seed`.
safetensors::File generate_edge_inputs(const Constants& constants, std::uint64_t seed, StreamDtype stream_dtype);

}  // namespace boundary
