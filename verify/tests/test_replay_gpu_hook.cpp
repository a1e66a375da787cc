// boundary-verify replay --gpu, without a device and with a stand-in for the CUDA build's hook, and
// the report checked against verify/report-schema.json (the check seen failing on broken reports).
#include "replay_fixture.hpp"
#include "schema_validator.hpp"
#include "temp_dir.hpp"

#include <boundary/verify/replay.hpp>
#include <boundary/verify/report.hpp>

#include <doctest/doctest.h>

#include <filesystem>

using namespace boundary;
using namespace boundary::test;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kSchema = BOUNDARY_SOURCE_DIR "/verify/report-schema.json";

// A stand-in for the CUDA build's hook: "gpu:fused" returns the fixture's own outputs with one
// bit flipped, "gpu:eager" returns them unchanged.
cli::GpuReplayHook fake_gpu(const st::File& fixture) {
  cli::GpuReplayHook hook;
  hook.probe = [] { return std::optional<report::GpuInfo>(report::GpuInfo{"Fake H200", "9.0", "580.1", "13.0"}); };
  hook.run = [&fixture](const Constants&, const BoundTensors& bound, const std::map<std::string, std::string>& metadata,
                        bool store_stream) {
    CHECK(bound.m == fixture.tensors.at("out").shape[0]);
    CHECK(metadata.at("kernel") == "draft_boundary");
    CHECK(store_stream);
    cli::ReplayedOutputs fused{"gpu:fused", fixture.tensors.at("out"), fixture.tensors.at("new_stream")};
    fused.out.data<std::uint16_t>()[kH + 2] ^= 0x8000;  // row 1, column 2: the sign
    cli::ReplayedOutputs eager{"gpu:eager", fixture.tensors.at("out"), fixture.tensors.at("new_stream")};
    return std::vector<cli::ReplayedOutputs>{fused, eager};
  };
  return hook;
}

}  // namespace

TEST_CASE("replay --gpu: without a device the CPU replay is still reported, exit 77") {
  TempDir dir;
  const fs::path path = dir.path / "f.safetensors";
  st::write_file(path, make_fixture(2));
  cli::ReplayOptions o = options_for(path);
  o.gpu = true;
  int code = -1;
  SUBCASE("no hook in this build") {
    const json r = cli::run_replay(o, &code);
    CHECK(code == cli::kNoDevice);
    CHECK(r["exit_code"] == 77);
    CHECK(r["gpu"].get<std::string>().rfind("not run: no CUDA device", 0) == 0);
    CHECK(r.at("files").at(0)["checks"] == json::array({"emulator"}));
    CHECK(r["counts"]["elements_compared"] == 2 * 2 * kH);
    CHECK(cli::format_replay(r).find("GPU checks: not run: no CUDA device") != std::string::npos);
  }
  SUBCASE("a hook that finds no device") {
    bool ran = false;
    o.gpu_hook.probe = [] { return std::optional<report::GpuInfo>(); };
    o.gpu_hook.run = [&](auto&&...) { ran = true; return std::vector<cli::ReplayedOutputs>(); };
    const json r = cli::run_replay(o, &code);
    CHECK(code == cli::kNoDevice);
    CHECK(r["gpu"] == "not run: no CUDA device");
    CHECK_FALSE(ran);
  }
  SUBCASE("mismatching bits outrank the missing device") {
    st::File f = make_fixture(2);
    out_at(f, 0, 0) ^= 1;
    st::write_file(path, f);
    CHECK(cli::run_replay(o, &code)["exit_code"] == 1);
    CHECK(code == cli::kMismatch);
  }
}

TEST_CASE("replay --gpu with a device: the hook's outputs are compared with the fixture's") {
  TempDir dir;
  const fs::path path = dir.path / "f.safetensors";
  const st::File fixture = make_fixture(2);
  st::write_file(path, fixture);
  cli::ReplayOptions o = options_for(path);
  o.gpu = true;
  o.gpu_hook = fake_gpu(fixture);
  int code = -1;
  const json r = cli::run_replay(o, &code);
  CHECK(code == cli::kMismatch);
  CHECK(r["gpu"] == "run");
  CHECK(r["environment"]["gpu"] == json{{"name", "Fake H200"}, {"compute_capability", "9.0"}, {"driver", "580.1"}, {"cuda", "13.0"}});
  const json& f = r.at("files").at(0);
  CHECK(f["checks"] == json::array({"emulator", "gpu:fused", "gpu:eager"}));
  CHECK(find_count(f, "gpu:fused", "out").at("mismatches") == 1);
  CHECK(find_count(f, "gpu:fused", "new_stream").at("mismatches") == 0);
  CHECK(find_count(f, "gpu:eager", "out").at("mismatches") == 0);
  CHECK(r["counts"]["elements_compared"] == 3 * 2 * 2 * kH);
  REQUIRE(r["mismatches"]["items"].size() == 1);
  const json& m = r.at("mismatches").at("items").at(0);
  CHECK(m["pair"] == "gpu:fused vs fixture");
  CHECK(m["row"] == 1);
  CHECK(m["column"] == 2);
  const std::uint16_t recorded = fixture.tensors.at("out").data<std::uint16_t>()[kH + 2];
  CHECK(m["expected_bits"] == hex(recorded, 4));
  CHECK(m["actual_bits"] == hex(recorded ^ 0x8000u, 4));
  CHECK(m["expected_class"].get<std::string>().substr(1) == m["actual_class"].get<std::string>().substr(1));
  CHECK(m["expected_class"] != m["actual_class"]);
}

TEST_CASE("the report matches verify/report-schema.json, and the check can fail") {
  TempDir dir;
  const fs::path path = dir.path / "f.safetensors";
  st::File fixture = make_fixture(2);
  fixture.metadata["gpu"] = "NVIDIA H200";
  st::write_file(path, fixture);
  cli::ReplayOptions o = options_for(path);
  o.gpu = true;
  o.gpu_hook = fake_gpu(fixture);  // a device, a GPU check, a mismatch: every part of the report filled
  json r = cli::run_replay(o, nullptr);
  REQUIRE(!r["mismatches"]["items"].empty());
  CHECK(schema_errors(kSchema, r) == std::vector<std::string>{});
  o.gpu = false;  // environment.gpu null, no mismatches
  CHECK(schema_errors(kSchema, cli::run_replay(o, nullptr)) == std::vector<std::string>{});

  // The validator sees what it must: a missing key, a wrong type, a value outside an enum.
  json broken = r;
  broken["mismatches"]["items"][0].erase("ulp_distance");
  CHECK(schema_errors(kSchema, broken).size() == 1);
  broken = r;
  broken["files"][0]["rows"] = "2";
  CHECK(schema_errors(kSchema, broken).size() == 1);
  broken = r;
  broken["mismatches"]["items"][0]["actual_class"] = "normal";
  CHECK(schema_errors(kSchema, broken).size() == 1);
  broken = r;
  broken["mismatches"]["items"][0]["expected_bits"] = "0x3f80";
  CHECK(schema_errors(kSchema, broken).size() == 1);
  broken = r;
  broken["environment"]["gpu"].erase("driver");
  CHECK(schema_errors(kSchema, broken).size() == 1);
}
