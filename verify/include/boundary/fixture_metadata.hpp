// What a fixture's __metadata__ says, as replay and the self-test read it: the constants it was
// recorded under, and whether its kernel stored new_stream (then the fixture must hold it).
#pragma once

#include <boundary/safetensors.hpp>
#include <boundary/types.hpp>

#include <cstdint>
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

}  // namespace boundary
