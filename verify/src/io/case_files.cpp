// A case file's metadata and an implementation's outputs file (cases.hpp).
#include <boundary/verify/cases.hpp>

#include <boundary/verify/constants_json.hpp>

namespace boundary::cases {

namespace st = safetensors;

namespace {

const std::string& metadata(const st::File& file, const std::string& source, const std::string& key) {
  const auto it = file.metadata.find(key);
  if (it == file.metadata.end())
    throw InputError(source + ": __metadata__ has no '" + key + "' entry (a case file as boundary-verify export writes it)");
  return it->second;
}

}  // namespace

Constants case_constants(const st::File& file, const std::string& source) {
  return parse_constants(metadata(file, source, "constants"), source + " (__metadata__ 'constants')");
}

bool case_store_stream(const st::File& file, const std::string& source) {
  const std::string& value = metadata(file, source, "store_stream");
  if (value != "true" && value != "false")
    throw InputError(source + ": __metadata__ 'store_stream' is '" + value + "', expected \"true\" or \"false\"");
  return value == "true";
}

void describe(st::File& file, const Constants& constants, bool store_stream) {
  file.metadata["constants"] = constants_to_json(constants).dump();
  file.metadata["store_stream"] = store_stream ? "true" : "false";
}

std::map<std::string, st::Tensor> read_outputs(const std::filesystem::path& path, std::int64_t m, bool store_stream) {
  const std::string source = path.string();
  st::File file = st::read_file(path);
  for (const auto& [name, tensor] : file.tensors)
    if (name != "out" && !(name == "new_stream" && store_stream))
      throw InputError(source + ": unexpected tensor '" + name + "' (expected out" +
                       (store_stream ? " and new_stream" : "; this case does not store the stream") + ")");
  if (store_stream && !file.tensors.count("new_stream"))
    throw InputError(source + ": tensor 'new_stream' F32 [" + std::to_string(m) +
                     ", 8192] is missing, and this case stores the stream (store_stream true)");
  st::require(file, source, "out", {st::Dtype::BF16}, {m, kH});
  if (store_stream) st::require(file, source, "new_stream", {st::Dtype::F32}, {m, kH});
  return std::move(file.tensors);
}

}  // namespace boundary::cases
