// A fixture as replay, the self-test and the tests read it: what its __metadata__ says (the
// constants it was recorded under, whether its kernel stored new_stream, then the fixture must
// hold it), its bound inputs and its recorded outputs.
#pragma once

#include <boundary/verify/boundary_tensors.hpp>
#include <boundary/verify/safetensors.hpp>
#include <boundary/mutant.hpp>
#include <boundary/types.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace boundary {

// __metadata__ "constants" (the JSON, as emulate and capture write it), checked like a constants
// file; an InputError naming `name` when it is missing or bad.
Constants fixture_constants(const safetensors::File& file, const std::string& name);

// The recorded new_stream (F32 [m, 8192]), or null when the kernel did not store it. The variant
// (as capture and the gate's shrink write it: "stream=f32,store_stream=1,...") says which: a
// fixture whose kernel stored the stream but that lacks new_stream would replay with half its check
// missing, and one that did not store it but holds one is mislabelled; both are InputErrors.
const safetensors::Tensor* recorded_new_stream(const safetensors::File& file, const std::string& name, std::int64_t m);

// The kernel variant as __metadata__ "variant" spells it, for capture, the kernel subcommand and
// the gate's shrunk fixtures alike: "stream=f32,store_stream=1,late_gates=0,pdl=1,layout=cta".
std::string variant_metadata(StreamDtype stream, bool store_stream, bool late_gates, bool pdl, const std::string& layout);

// A fixture read and checked: its constants, bound inputs and recorded outputs; an InputError
// naming it when any of them is missing or bad. Not copyable: bound and the output pointers
// point into file.
struct Fixture {
  Fixture(safetensors::File file, std::string name);
  explicit Fixture(const std::filesystem::path& path);  // named by the path
  Fixture(const Fixture&) = delete;
  Fixture& operator=(const Fixture&) = delete;

  // A __metadata__ value; empty when absent.
  std::string metadata(const std::string& key) const;

  const std::string name;
  const safetensors::File file;
  const Constants constants;
  const BoundTensors bound;
  const safetensors::Tensor* const out;
  const safetensors::Tensor* const new_stream;  // null when not recorded
};

}  // namespace boundary
