// Shapes, constants and errors shared by every part of the project (contract sections 1 and 3).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>

namespace boundary {

inline constexpr int kH = 8192;         // columns per row
inline constexpr int kThreads = 256;    // reference CTA: threads per row
inline constexpr int kWarps = 8;
inline constexpr int kFragments = 4;    // fragments per thread
inline constexpr int kVec = 8;          // columns per fragment
inline constexpr int kMaxRanks = 8;     // all-reduce partials (contract section 7)

enum class WeightDtype : std::uint8_t { bf16, fp16, fp32 };
enum class StreamDtype : std::uint8_t { f32, bf16 };

// One RMSNorm of the boundary. Decimal values are kept as given (double); the arithmetic
// uses float(eps) and float(gain_center), as contract section 2 says.
struct NormConstants {
  double eps = 1e-5;
  std::optional<double> gain_center;  // nullopt: this norm has no weight, no gamma, no multiply
  bool input_scale = false;           // weight applied before the norm instead of after
  WeightDtype weight_dtype = WeightDtype::bf16;  // meaningful only with a weight
  bool fma_squares = false;

  bool has_weight() const { return gain_center.has_value(); }
};

struct Constants {
  NormConstants post;  // of the branch
  NormConstants pre;   // of the new stream, for the next layer
};

// Bad input from a user: a file, a field, a tensor. Its message names what is wrong and what
// was expected; tools map it to exit code 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace boundary
