// libFuzzer: the safetensors reader (length, header JSON, entries, extents, coverage) and the
// binding of its tensors to the boundary's inputs under both stock constants. A file that parses
// must serialize back to bytes that parse to the same file. Anything else than a parsed file or an
// InputError (a sanitizer report, another exception, a crash, a broken round trip) is a finding.
#include <boundary/verify/boundary_tensors.hpp>
#include <boundary/verify/constants_json.hpp>

#include <cstdint>
#include <cstdlib>
#include <vector>

using namespace boundary;
namespace st = boundary::safetensors;

namespace {

const std::vector<Constants>& stock() {
  static const std::vector<Constants> all = {
      read_constants(BOUNDARY_SOURCE_DIR "/fixtures/constants/muse-spark-post-attention.json"),
      read_constants(BOUNDARY_SOURCE_DIR "/fixtures/constants/muse-spark-post-ffn.json")};
  return all;
}

bool same(const st::File& a, const st::File& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (const auto& [name, t] : a.tensors) {
    const auto it = b.tensors.find(name);
    if (it == b.tensors.end() || it->second.dtype != t.dtype || it->second.shape != t.shape ||
        it->second.bytes != t.bytes)
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  st::File file;
  try {
    file = st::parse({data, size}, "fuzz");
  } catch (const InputError&) {
    return 0;
  }
  for (const Constants& c : stock()) {
    try {
      bind_inputs(file, c, "fuzz");
    } catch (const InputError&) {
    }
  }
  if (!same(st::parse(st::serialize(file), "round trip"), file)) std::abort();
  return 0;
}
