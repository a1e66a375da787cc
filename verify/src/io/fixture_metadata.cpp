#include <boundary/fixture_metadata.hpp>

#include <boundary/constants_json.hpp>

#include <sstream>

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

}  // namespace boundary
