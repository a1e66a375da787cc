// libFuzzer: a fixture as replay reads it before any arithmetic: the safetensors file, then its
// __metadata__ (the constants JSON inside it, the variant's store_stream), the inputs bound under
// those constants and the recorded outputs. Anything else than a checked fixture or an InputError
// (a sanitizer report, another exception, a crash) is a finding.
#include <boundary/boundary_tensors.hpp>
#include <boundary/fixture_metadata.hpp>

#include <cstdint>

using namespace boundary;
namespace st = boundary::safetensors;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const st::File file = st::parse({data, size}, "fuzz");
    const Constants constants = fixture_constants(file, "fuzz");
    const BoundTensors bound = bind_inputs(file, constants, "fuzz");
    st::require(file, "fuzz", "out", {st::Dtype::BF16}, {bound.m, kH});
    recorded_new_stream(file, "fuzz", bound.m);
  } catch (const InputError&) {
  }
  return 0;
}
