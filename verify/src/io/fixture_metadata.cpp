#include <boundary/verify/fixture_metadata.hpp>

#include <boundary/verify/constants_json.hpp>

#include <sstream>
#include <utility>

namespace boundary {

namespace st = safetensors;

Constants fixture_constants(const st::File& file, const std::string& name) {
  const auto it = file.metadata.find("constants");
  if (it == file.metadata.end())
    throw InputError(name + ": __metadata__ has no 'constants' entry (the constants JSON, as emulate writes it)");
  return parse_constants(it->second, name + " (__metadata__ 'constants')");
}

const st::Tensor* recorded_new_stream(const st::File& file, const std::string& name, std::int64_t m) {
  const bool present = file.tensors.count("new_stream") > 0;
  if (const auto v = file.metadata.find("variant"); v != file.metadata.end()) {
    std::stringstream items(v->second);
    for (std::string item; std::getline(items, item, ',');) {
      if (item == "store_stream=1" && !present)
        throw InputError(name + ": no tensor 'new_stream', although __metadata__ 'variant' says store_stream=1 "
                                "(the kernel stored it): expected it recorded");
      if (item == "store_stream=0" && present)
        throw InputError(name + ": tensor 'new_stream' recorded, although __metadata__ 'variant' says "
                                "store_stream=0 (the kernel did not store it)");
    }
  }
  return present ? &st::require(file, name, "new_stream", {st::Dtype::F32}, {m, kH}) : nullptr;
}

std::string variant_metadata(StreamDtype stream, bool store_stream, bool late_gates, bool pdl, const std::string& layout) {
  return std::string("stream=") + (stream == StreamDtype::f32 ? "f32" : "bf16") + ",store_stream=" + (store_stream ? "1" : "0") +
         ",late_gates=" + (late_gates ? "1" : "0") + ",pdl=" + (pdl ? "1" : "0") + ",layout=" + layout;
}

Fixture::Fixture(st::File f, std::string n)
    : name(std::move(n)),
      file(std::move(f)),
      constants(fixture_constants(file, name)),
      bound(bind_inputs(file, constants, name)),
      out(&st::require(file, name, "out", {st::Dtype::BF16}, {bound.m, kH})),
      new_stream(recorded_new_stream(file, name, bound.m)) {}

Fixture::Fixture(const std::filesystem::path& path) : Fixture(st::read_file(path), path.string()) {}

std::string Fixture::metadata(const std::string& key) const {
  const auto it = file.metadata.find(key);
  return it == file.metadata.end() ? std::string() : it->second;
}

}  // namespace boundary
