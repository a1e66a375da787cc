// boundary-verify emulate, driven through its options struct (no argv).
#include "temp_dir.hpp"

#include <boundary/verify/cli.hpp>
#include <boundary/primitives.hpp>
#include <boundary/verify/safetensors.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <filesystem>
#include <fstream>
#include <random>

using namespace boundary;
namespace st = boundary::safetensors;
namespace fs = std::filesystem;

namespace {

const fs::path kFfn = BOUNDARY_SOURCE_DIR "/fixtures/constants/muse-spark-post-ffn.json";
const fs::path kAttention = BOUNDARY_SOURCE_DIR "/fixtures/constants/muse-spark-post-attention.json";

using test::TempDir;

st::Tensor filled_bf16(std::vector<std::int64_t> shape, std::uint16_t v) {
  st::Tensor t = st::make_tensor(st::Dtype::BF16, std::move(shape));
  std::fill_n(t.data<std::uint16_t>(), t.numel(), v);
  return t;
}
st::Tensor filled_f32(std::vector<std::int64_t> shape, float v) {
  st::Tensor t = st::make_tensor(st::Dtype::F32, std::move(shape));
  std::fill_n(t.data<float>(), t.numel(), v);
  return t;
}

// The post-attention row worked by hand in reference/tests: with eps 1e-8 vanishing next to 1,
// branch 2 -> r1 = 1/2 -> y_b = 1; res = 0.5 * 1 + 0.5 * 1 = 1; pre gamma = 1 + 1 = 2 -> out 2.
st::File hand_worked_inputs(std::int64_t m) {
  st::File f;
  f.tensors["branch"] = filled_bf16({m, kH}, 0x4000);
  f.tensors["stream"] = filled_f32({m, kH}, 1.0f);
  f.tensors["alpha"] = filled_f32({kH}, 0.5f);
  f.tensors["beta"] = filled_f32({kH}, 0.5f);
  f.tensors["pre_weight"] = filled_bf16({kH}, 0x3F80);
  return f;
}

}  // namespace

TEST_CASE("emulate --inputs: a hand-worked file gives the hand-worked bits") {
  TempDir dir;
  st::write_file(dir.path / "in.safetensors", hand_worked_inputs(2));
  cli::EmulateOptions o;
  o.constants = kAttention;
  o.inputs = dir.path / "in.safetensors";
  o.output = dir.path / "out.safetensors";
  o.intermediates = true;
  const auto summary = cli::run_emulate(o);
  CHECK(summary["rows"] == 2);
  const st::File out = st::read_file(o.output);
  const auto* y = out.tensors.at("out").data<std::uint16_t>();
  for (int i = 0; i < 2 * kH; i += 1001) CHECK(y[i] == 0x4000);
  CHECK(std::bit_cast<std::uint32_t>(out.tensors.at("new_stream").data<float>()[77]) == 0x3F800000u);
  CHECK(std::bit_cast<std::uint32_t>(out.tensors.at("r1").data<float>()[1]) == 0x3F000000u);
  CHECK(out.tensors.at("y_b").data<std::uint16_t>()[5] == 0x3F80);
  CHECK(out.tensors.at("z").data<std::uint16_t>()[5] == 0x3F80);
  CHECK(out.metadata.count("constants") == 1);
  CHECK(out.tensors.count("branch") == 0);  // inputs are not copied unless generated
}

TEST_CASE("emulate --generate writes the inputs with the outputs, and re-emulating them is bitwise equal") {
  TempDir dir;
  cli::EmulateOptions gen;
  gen.constants = kFfn;
  gen.generate_rows = 5;
  gen.seed = 9;
  gen.output = dir.path / "gen.safetensors";
  cli::run_emulate(gen);
  const st::File first = st::read_file(gen.output);
  for (const char* name : {"branch", "stream", "alpha", "beta", "post_weight", "pre_weight", "out", "new_stream"})
    CHECK_MESSAGE(first.tensors.count(name) == 1, name);
  cli::EmulateOptions again;
  again.constants = kFfn;
  again.inputs = gen.output;
  again.output = dir.path / "again.safetensors";
  again.threads = 3;
  cli::run_emulate(again);
  const st::File second = st::read_file(again.output);
  CHECK(second.tensors.at("out").bytes == first.tensors.at("out").bytes);
  CHECK(second.tensors.at("new_stream").bytes == first.tensors.at("new_stream").bytes);
}

TEST_CASE("emulate with partials: the all-reduced branch is an intermediate; --no-store-stream writes res") {
  TempDir dir;
  st::File f = hand_worked_inputs(1);
  f.tensors.erase("branch");
  f.tensors["partials"] = filled_bf16({2, 1, kH}, 0x3F80);  // 1 + 1 = 2: the hand-worked branch
  st::write_file(dir.path / "in.safetensors", f);
  cli::EmulateOptions o;
  o.constants = kAttention;
  o.inputs = dir.path / "in.safetensors";
  o.output = dir.path / "out.safetensors";
  o.intermediates = true;
  o.no_store_stream = true;
  const auto summary = cli::run_emulate(o);
  CHECK(summary["ranks"] == 2);
  const st::File out = st::read_file(o.output);
  CHECK(out.tensors.at("branch").data<std::uint16_t>()[3] == 0x4000);
  CHECK(out.tensors.at("out").data<std::uint16_t>()[3] == 0x4000);
  CHECK(out.tensors.count("new_stream") == 0);
  CHECK(out.tensors.count("res") == 1);
}

TEST_CASE("bad inputs: a clear error naming the tensor, and no output file left behind") {
  TempDir dir;
  cli::EmulateOptions o;
  o.constants = kAttention;
  o.inputs = dir.path / "in.safetensors";
  o.output = dir.path / "out.safetensors";
  auto expect_error = [&](st::File f, const char* words) {
    st::write_file(*o.inputs, f);
    CHECK_THROWS_WITH_AS(cli::run_emulate(o), doctest::Contains(words), InputError);
    CHECK_FALSE(fs::exists(o.output));
  };
  st::File f = hand_worked_inputs(1);
  f.tensors.erase("alpha");
  expect_error(f, "'alpha'");
  f = hand_worked_inputs(1);
  f.tensors["pre_weight"] = filled_f32({kH}, 0.0f);
  expect_error(f, "'pre_weight'");
  f = hand_worked_inputs(1);
  f.tensors["post_weight"] = filled_bf16({kH}, 0);
  expect_error(f, "no weight");
  f = hand_worked_inputs(1);
  f.tensors["stream"] = filled_f32({2, kH}, 0.0f);
  expect_error(f, "'stream'");
  f = hand_worked_inputs(1);
  f.tensors["partials"] = filled_bf16({9, 1, kH}, 0);
  expect_error(f, "both");
  f.tensors.erase("branch");
  expect_error(f, "1 <= R <= 8");
  f = hand_worked_inputs(1);
  f.tensors["pre_wieght"] = filled_bf16({kH}, 0);
  expect_error(f, "unexpected tensor 'pre_wieght'");
  f = hand_worked_inputs(1);
  f.tensors["branch"] = filled_bf16({1, 4096}, 0);
  expect_error(f, "[m, 8192]");
}
