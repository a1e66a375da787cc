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

// The fields of one RMSNorm, one row each, in the order the constants file's reader takes them:
//   member   the C++ name; the file's keys are post_<member> and pre_<member>
//   type, default
//   rule     how the file spells and checks it: a struct of verify's constants_json.cpp (read,
//            check, write), shared by every field of the same kind
//   shape, meaning   the README table's two columns and --help (Markdown, backticks for code)
// The reader, the writer, the known-keys list, the README table (checked by test_constants_json)
// and the help all come from this list, so that a new key is one row here.
#define BOUNDARY_NORM_FIELDS(X)                                                                              \
  X(eps, double, 1e-5, NonNegativeNumber, "number, finite, >= 0 (required)",                                 \
    "converted as `float(double(value))`")                                                                   \
  X(gain_center, std::optional<double>, std::nullopt, GainCenter, "number or `null` (required)",             \
    "`null`: that norm has no weight")                                                                       \
  X(weight_dtype, WeightDtype, WeightDtype::bf16, WeightDtypeName, R"(`"bf16"`, `"fp16"`, `"fp32"`)",        \
    "required with a weight, an error without")                                                              \
  X(input_scale, bool, false, InputScale, "bool (default false)",                                            \
    "weight applied before the norm; an error without a weight")                                             \
  X(fma_squares, bool, false, Flag, "bool (default false)", "row sum accumulates with fma")

// One RMSNorm of the boundary. Decimal values are kept as given (double); the arithmetic
// uses float(eps) and float(gain_center), as contract section 2 says. gain_center nullopt: this
// norm has no weight, no gamma, no multiply; weight_dtype means something only with a weight;
// input_scale: the weight is applied before the norm instead of after. Build one with designated
// initializers ({.eps = 1e-5, .gain_center = 1.0}): a new field then breaks no caller.
struct NormConstants {
#define BOUNDARY_DECLARE_NORM_FIELD(member, type, default_value, ...) type member = default_value;
  BOUNDARY_NORM_FIELDS(BOUNDARY_DECLARE_NORM_FIELD)
#undef BOUNDARY_DECLARE_NORM_FIELD

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
