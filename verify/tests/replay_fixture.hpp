// The replay tests' fixtures and report look-ups (test_replay, test_replay_gpu_hook): a fixture's
// recorded outputs are the emulator's, so a clean replay must find nothing and every planted bit
// flip must be found exactly where it was planted.
#pragma once

#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/generate.hpp>
#include <boundary/reference.hpp>
#include <boundary/verify/replay.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace boundary::test {

namespace st = safetensors;

inline const std::filesystem::path kFfn = BOUNDARY_SOURCE_DIR "/fixtures/constants/muse-spark-post-ffn.json";
inline constexpr std::int64_t kRows = 5;

// A fixture whose recorded outputs are the emulator's: inputs from generate_inputs, metadata as
// a capture would write it, minus the provenance keys (replay must not need them).
inline st::File make_fixture(std::int64_t rows = kRows, bool with_new_stream = true) {
  const Constants c = read_constants(kFfn);
  st::File f = generate_inputs(c, rows, 7);
  st::Tensor out = st::make_tensor(st::Dtype::BF16, {rows, kH});
  st::Tensor new_stream = st::make_tensor(st::Dtype::F32, {rows, kH});
  const BoundTensors bound = bind_inputs(f, c, "fixture");
  ref::Outputs o;
  o.out = out.data<std::uint16_t>();
  o.new_stream = new_stream.data<float>();
  ref::Boundary(c, bound.operands).run(bound.inputs, o, 2);
  f.tensors["out"] = std::move(out);
  if (with_new_stream) f.tensors["new_stream"] = std::move(new_stream);
  f.metadata["constants"] = constants_to_json(c).dump();
  f.metadata["kernel"] = "draft_boundary";
  f.metadata["variant"] = "f32-stored";
  f.metadata.erase("seed");  // generate_inputs' provenance: a fixture need not have any
  return f;
}

inline std::uint16_t& out_at(st::File& f, std::int64_t row, std::int64_t column) {
  return f.tensors.at("out").data<std::uint16_t>()[row * kH + column];
}
inline std::uint32_t& new_stream_at(st::File& f, std::int64_t row, std::int64_t column) {
  return f.tensors.at("new_stream").data<std::uint32_t>()[row * kH + column];
}

inline cli::ReplayOptions options_for(const std::filesystem::path& file) {
  cli::ReplayOptions o;
  o.files = {file};
  o.threads = 2;
  return o;
}

// The file's count for (check, tensor); null when absent, so that .at() fails the check cleanly.
inline nlohmann::json find_count(const nlohmann::json& file, const std::string& check, const std::string& tensor) {
  for (const nlohmann::json& c : file.at("counts"))
    if (c.at("check") == check && c.at("tensor") == tensor) return c;
  return nullptr;
}

inline std::string hex(std::uint32_t bits, int digits) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%0*X", digits, bits);
  return text;
}

}  // namespace boundary::test
