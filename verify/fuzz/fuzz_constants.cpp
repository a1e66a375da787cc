// libFuzzer: the constants JSON reader. What it accepts must write back (constants_to_json) to text
// that reads as the same constants, every double bit for bit. Anything else than constants or an
// InputError (a sanitizer report, another exception, a crash, a broken round trip) is a finding.
#include <boundary/constants_json.hpp>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <string_view>

using namespace boundary;

namespace {

bool same(const NormConstants& a, const NormConstants& b) {
  return std::bit_cast<std::uint64_t>(a.eps) == std::bit_cast<std::uint64_t>(b.eps) &&
         a.has_weight() == b.has_weight() &&
         (!a.has_weight() || (std::bit_cast<std::uint64_t>(*a.gain_center) == std::bit_cast<std::uint64_t>(*b.gain_center) &&
                              a.weight_dtype == b.weight_dtype)) &&
         a.input_scale == b.input_scale && a.fma_squares == b.fma_squares;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Constants c;
  try {
    c = parse_constants(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const InputError&) {
    return 0;
  }
  const Constants again = parse_constants(constants_to_json(c).dump(), "round trip");
  if (!same(c.post, again.post) || !same(c.pre, again.pre)) std::abort();
  return 0;
}
