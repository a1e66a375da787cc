// The gate's --implementation hook on its own, on two generated rows: the emulator as the command
// gives the emulator's bits; each way a command can fail is an InputError saying which; paths with
// a space and a quote reach the command as one word each.
#include "temp_dir.hpp"

#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/external.hpp>
#include <boundary/verify/generate.hpp>

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

using namespace boundary;
namespace st = boundary::safetensors;

namespace {

const std::filesystem::path kFfn = BOUNDARY_SOURCE_DIR "/fixtures/constants/muse-spark-post-ffn.json";
const std::string kEmulate = std::string(BOUNDARY_VERIFY_EXE) + " emulate --inputs {inputs} --output {output}";

struct Rows {
  Constants constants = read_constants(kFfn);
  st::File file = generate_inputs(constants, 2, 7);
  BoundTensors bound = bind_inputs(file, constants, "generated");
};

cli::StageValues run(const std::string& command) {
  const Rows rows;
  return cli::make_external_hook(command).run(rows.constants, rows.bound, cli::external_variant());
}

std::string error_of(const std::string& command) {
  try {
    run(command);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("the emulator as the command: the emulator's bits, out and new_stream") {
  const Rows rows;
  const cli::StageValues got = cli::make_external_hook(kEmulate).run(rows.constants, rows.bound, cli::external_variant());
  st::Tensor out = st::make_tensor(st::Dtype::BF16, {2, kH}), new_stream = st::make_tensor(st::Dtype::F32, {2, kH});
  ref::Outputs o;
  o.out = out.data<std::uint16_t>();
  o.new_stream = new_stream.data<float>();
  ref::Boundary(rows.constants, rows.bound.operands).run(rows.bound.inputs, o, 1);
  CHECK(got.at("out").bytes == out.bytes);
  CHECK(got.at("new_stream").bytes == new_stream.bytes);
}

TEST_CASE("a command that fails, dies, writes nothing or the wrong file: InputError saying which") {
  const std::string status = error_of("echo 'broken implementation' >&2; exit 3 # {inputs} {output}");
  CHECK(status.find("exited with status 3") != std::string::npos);
  CHECK(status.find("broken implementation") != std::string::npos);
  CHECK(error_of("kill -9 $$ # {inputs} {output}").find("killed by signal 9") != std::string::npos);
  CHECK(error_of("true {inputs} {output}").find("wrote no {output} file") != std::string::npos);
  CHECK(error_of("cp {inputs} {output}").find("unexpected tensor 'alpha'") != std::string::npos);
  CHECK(error_of("true {output}").find("has no {inputs}") != std::string::npos);
}

TEST_CASE("paths with a space and a quote reach the command as one word each") {
  test::TempDir dir;
  const std::filesystem::path tmp = dir.path / "it's a dir";
  std::filesystem::create_directories(tmp);
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", tmp.c_str(), 1);
  const std::string error = error_of(kEmulate);
  if (old) ::setenv("TMPDIR", saved.c_str(), 1);
  else ::unsetenv("TMPDIR");
  CHECK(error == "no error");
  CHECK(std::filesystem::is_empty(tmp));  // every run's files removed
}
