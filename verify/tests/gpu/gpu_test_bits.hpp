// Bit comparisons for the GPU tests: a mismatch names the row (in the batch and in the data set),
// the column, both bit patterns and how many elements differ; a poisoned row must stay untouched.
//
// Every launch writes into buffers poisoned with 0xFF bytes: no correct result has those bits
// (a NaN result is the canonical 0x7FFF / 0x7FFFFFFF), so an element a kernel did not write
// cannot pass. One guard row past every batch must stay poisoned.
#pragma once

#include "gpu_test_cuda.hpp"

#include <bit>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace gpu_test {

constexpr std::uint32_t bits_of(std::uint16_t v) { return v; }
inline std::uint32_t bits_of(float v) { return std::bit_cast<std::uint32_t>(v); }
template <class T>
constexpr std::uint32_t kPoison = sizeof(T) == 2 ? 0xFFFFu : 0xFFFFFFFFu;

inline std::string hex(std::uint32_t v, std::size_t bytes) {
  static const char digits[] = "0123456789ABCDEF";
  std::string s = "0x";
  for (int shift = static_cast<int>(bytes) * 8 - 4; shift >= 0; shift -= 4) s += digits[(v >> shift) & 0xFu];
  return s;
}

// Names a row of a data set in failure messages (the edge pattern it holds); may be empty.
using RowLabel = std::function<std::string(std::int64_t)>;

// After this many reported mismatches a further one ends its test case: a broken kernel
// fails every comparison, and the first reports say all there is to say.
inline int& mismatches_reported() {
  static int n = 0;
  return n;
}
constexpr int kMaxReported = 20;

inline void report_mismatch(const std::string& message) {
  if (++mismatches_reported() > kMaxReported) FAIL(std::string(message + " [more mismatches not reported]"));
  FAIL_CHECK(message);
}

// got and want: the same rows of kH elements, bit for bit. On a mismatch: the first differing
// row (in the batch and in the data set), column, both bit patterns, and how many differ.
template <class T>
inline void expect_bits(const std::string& context, const char* tensor, std::span<const T> got, std::span<const T> want,
                 const char* want_name, std::int64_t first_row = 0, const RowLabel& label = {}) {
  REQUIRE(got.size() == want.size());
  REQUIRE(!want.empty());  // nothing compared proves nothing
  REQUIRE(want.size() % kH == 0);
  std::size_t first = want.size(), differing = 0, poison_expected = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const std::uint32_t g = bits_of(got[i]), w = bits_of(want[i]);
    if (g != w && differing++ == 0) first = i;
    poison_expected += w == kPoison<T>;
  }
  if (poison_expected)
    report_mismatch(context + ": " + tensor + ": " + std::to_string(poison_expected) + " expected elements equal the poison " +
                    hex(kPoison<T>, sizeof(T)) + ", so a missing write could not show there");
  if (differing == 0) return;
  const auto row = static_cast<std::int64_t>(first / kH);
  const auto column = static_cast<std::int64_t>(first % kH);
  std::string where = "row " + std::to_string(row);
  if (first_row != 0 || label) {
    where += " (data row " + std::to_string(first_row + row);
    if (label) where += ", " + label(first_row + row);
    where += ")";
  }
  report_mismatch(context + ": '" + tensor + "' differs from " + want_name + " in " + std::to_string(differing) + " of " +
                  std::to_string(want.size()) + " elements; first at " + where + ", column " + std::to_string(column) +
                  ": got " + hex(bits_of(got[first]), sizeof(T)) + ", " + want_name + " " +
                  hex(bits_of(want[first]), sizeof(T)));
}

// A poisoned row nothing may write: by default the guard row past a batch.
template <class T>
inline void expect_untouched(const std::string& context, const char* tensor, std::span<const T> row,
                      const char* which = "past the batch (the guard row)") {
  REQUIRE(row.size() == static_cast<std::size_t>(kH));
  for (std::size_t c = 0; c < row.size(); ++c)
    if (bits_of(row[c]) != kPoison<T>) {
      report_mismatch(context + ": '" + tensor + "' was written " + which + ", column " + std::to_string(c) + ": " +
                      hex(bits_of(row[c]), sizeof(T)));
      return;
    }
}

}  // namespace gpu_test
