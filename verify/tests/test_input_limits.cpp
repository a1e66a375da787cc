// Defects 2 to 6 of issue 13, one test case each, named after what broke: outputs written over
// inputs, a stack overflow on deeply nested JSON, unbounded input sizes and echoed values, checks
// that passed with half the check missing, and options wrapped or ignored. The command-line side of
// each (exit codes, messages, untouched files) is verify/tests/malformed_inputs.sh.
#include "temp_dir.hpp"

#include <boundary/verify/cli.hpp>
#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/gate.hpp>
#include <boundary/verify/generate.hpp>
#include <boundary/verify/input_limits.hpp>
#include <boundary/verify/replay.hpp>

#include <CLI/CLI.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

using namespace boundary;
namespace st = boundary::safetensors;
namespace fs = std::filesystem;

namespace {

const fs::path kAttn = BOUNDARY_SOURCE_DIR "/fixtures/constants/muse-spark-post-attention.json";

std::string text_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string nested(char open, int depth) { return std::string(static_cast<std::size_t>(depth), open); }

// The message of the InputError that f throws ("" when it throws none).
template <class F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("output_path_is_an_input_silent_data_loss: every spelling of an input is refused, nothing written") {
  test::TempDir dir;
  const fs::path inputs = dir.path / "in.safetensors", constants = dir.path / "c.json";
  st::write_file(inputs, generate_inputs(read_constants(kAttn), 1, 3));
  fs::copy_file(kAttn, constants);
  fs::create_symlink(inputs, dir.path / "link.safetensors");
  const std::string before = text_of(inputs);
  for (const fs::path& out : {inputs, dir.path / "." / "in.safetensors", dir.path / "link.safetensors", constants}) {
    CAPTURE(out);
    cli::EmulateOptions o;
    o.constants = constants;
    o.inputs = inputs;
    o.output = out;
    CHECK(refusal([&] { cli::run_emulate(o); }).find("is the input") != std::string::npos);
  }
  CHECK(text_of(inputs) == before);
  // replay --report, and two outputs of one run.
  cli::ReplayOptions r;
  r.files = {inputs};
  r.report = dir.path / "link.safetensors";
  CHECK(refusal([&] { cli::run_replay(r, nullptr); }).find("--report '" + r.report->string() + "': is the input") == 0);
  CHECK(refusal([&] { io::check_outputs({{"--report", dir.path / "r"}, {"--junit", dir.path / "." / "r"}}, {}); })
            .find("--junit") == 0);
  CHECK(refusal([&] { io::check_outputs({{"--output", dir.path / "new.safetensors"}}, {inputs, constants}); }).empty());
  CHECK(text_of(inputs) == before);
}

TEST_CASE("deeply_nested_json_stack_overflow: 10^5 nested arrays or objects are refused at depth 16") {
  const std::string arrays = nested('[', 100000) + std::string(100000, ']');
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  CHECK(refusal([&] { parse_constants(arrays, "c.json"); }) ==
        "c.json: JSON nested deeper than 16 levels: expected one flat object of constants");
  CHECK(refusal([&] { parse_constants("{\"pre_eps\":" + objects, "c.json"); }) ==
        "c.json: JSON nested deeper than 16 levels in field 'pre_eps': expected one flat object of constants");
  // Depth 16 is still parsed (and refused for its type, with the value shown by its size only).
  CHECK(refusal([&] { parse_constants(nested('[', 16) + std::string(16, ']'), "c.json"); }) ==
        "c.json: expected one JSON object of constants, got an array of size 1 (array)");
  // The same text as a fixture's __metadata__ constants, through replay.
  test::TempDir dir;
  st::File f = generate_inputs(read_constants(kAttn), 1, 3);
  f.metadata["constants"] = arrays;
  st::write_file(dir.path / "f.safetensors", f);
  cli::ReplayOptions r;
  r.files = {dir.path / "f.safetensors"};
  CHECK(refusal([&] { cli::replay(r); }).find("(__metadata__ 'constants'): JSON nested deeper than 16 levels") !=
        std::string::npos);
}

TEST_CASE("unbounded_input_size: devices, oversized files and huge echoed values are refused short") {
  CHECK(refusal([] { read_constants("/dev/zero"); }) ==
        "/dev/zero: is not a regular file (a device, pipe or socket), expected a constants JSON file");
  CHECK(refusal([] { st::read_file("/dev/urandom"); }) ==
        "/dev/urandom: is not a regular file (a device, pipe or socket), expected a safetensors file");
  test::TempDir dir;
  const fs::path big = dir.path / "big.json";
  std::ofstream(big) << std::string(io::kMaxConstantsBytes + 1, ' ');
  CHECK(refusal([&] { read_constants(big); }) ==
        big.string() + ": is 1048577 bytes, more than the limit of 1 MiB for a constants JSON file");
  const std::string key(50'000'000, 'k');
  const std::string message = refusal([&] { parse_constants("{\"" + key + "\":1}", "c.json"); });
  CHECK(message.rfind("c.json: unknown field '" + std::string(40, 'k') + "... (50000000 bytes)' (known: ", 0) == 0);
  CHECK(message.size() < 400);
  CHECK(io::brief(nlohmann::json(std::string(100, 'x'))) == "\"" + std::string(40, 'x') + "\"... (100 bytes)");
  CHECK(io::brief(nlohmann::json::parse("[1,2,3,4,5]")) == "an array of size 5");
  CHECK(io::brief(nlohmann::json::parse("[1,2]")) == "[1,2]");
  // --generate beyond what the machine holds: refused before anything is made.
  cli::EmulateOptions o;
  o.constants = kAttn;
  o.generate_rows = std::int64_t{1} << 20;
  o.output = dir.path / "g.safetensors";
  if (io::physical_memory_bytes() < (std::uint64_t{1} << 20) * 2 * kH * 12) {
    CHECK(refusal([&] { cli::run_emulate(o); }).find("--generate 1048576: needs about 196608 MiB") == 0);
    CHECK_FALSE(fs::exists(o.output));
  }
}

TEST_CASE("fixture_without_stored_new_stream_passes: half a check is an input error, so is a missing --fixtures") {
  test::TempDir dir;
  const Constants c = read_constants(kAttn);
  st::File f = generate_inputs(c, 1, 3);
  f.tensors["out"] = st::make_tensor(st::Dtype::BF16, {1, kH});
  f.metadata["constants"] = constants_to_json(c).dump();
  f.metadata["variant"] = "stream=f32,store_stream=1,late_gates=0,pdl=1";
  st::write_file(dir.path / "half.safetensors", f);
  cli::ReplayOptions r;
  r.files = {dir.path / "half.safetensors"};
  CHECK(refusal([&] { cli::replay(r); }) ==
        (dir.path / "half.safetensors").string() +
            ": no tensor 'new_stream', although __metadata__ 'variant' says store_stream=1 (the kernel stored it): "
            "expected it recorded");
  cli::GateOptions g;
  g.constants = kAttn;
  g.fixtures = dir.path / "nowhere";
  CHECK(refusal([&] { cli::gate(g); }) ==
        "--fixtures '" + g.fixtures.string() + "': not a directory, expected one of fixtures");
  cli::SelfTestOptions s;
  s.constants = kAttn;
  s.fixtures = g.fixtures;
  CHECK(refusal([&] { cli::run_self_test(s, nullptr); }).rfind("--fixtures '", 0) == 0);
}

TEST_CASE("options_silently_wrapped_or_ignored: unsigned options are plain decimal; --seed needs --generate") {
  const CLI::Validator check = io::unsigned_decimal();
  for (const std::string bad : {"-1", "18446744073709551616", "0x10", "", "1e3", " 1", "+1"}) {
    CAPTURE(bad);
    std::string text = bad;
    CHECK_FALSE(check(text).empty());
  }
  for (const std::string good : {"0", "7", "18446744073709551615", "010"}) {
    std::string text = good;
    CHECK(check(text).empty());
  }
  CLI::App app;
  cli::EmulateOptions o;
  cli::setup_emulate(app, o);
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{"emulate", "--constants", "c", "--inputs", "i", "--seed", "3", "--output", "o"},
        {"emulate", "--constants", "c", "--inputs", "i", "--stream-dtype", "bf16", "--output", "o"},
        {"emulate", "--constants", "c", "--generate", "1", "--seed", "-1", "--output", "o"},
        {"emulate", "--constants", "c", "--generate", "1", "--threads", "-1", "--output", "o"}}) {
    std::vector<std::string> reversed(argv.rbegin(), argv.rend());  // CLI11 takes them last first
    CHECK_THROWS_AS(app.parse(reversed), CLI::ParseError);
    app.clear();
  }
  cli::EmulateOptions empty;
  empty.constants = kAttn;
  empty.generate_rows = 1;
  CHECK(refusal([&] { cli::run_emulate(empty); }) == "--output: an empty path, expected a file path");
}
