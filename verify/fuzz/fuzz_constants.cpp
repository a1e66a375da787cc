// libFuzzer: the constants JSON reader. What it accepts must write back (constants_to_json) to text
// that reads as the same constants, every double bit for bit. Anything else than constants or an
// InputError (a sanitizer report, another exception, a crash, a broken round trip) is a finding.
#include <boundary/verify/constants_json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

using namespace boundary;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Constants c;
  try {
    c = parse_constants(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const InputError&) {
    return 0;
  }
  const Constants again = parse_constants(constants_to_json(c).dump(), "round trip");
  if (!same_bits(c, again)) std::abort();  // every field of the table, doubles by their bits
  return 0;
}
