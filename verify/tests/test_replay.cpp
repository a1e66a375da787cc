// boundary-verify replay and its report, driven through ReplayOptions (no argv), on the CPU: every
// fixture is made here (replay_fixture.hpp). The --gpu path and the report's schema:
// test_replay_gpu_hook.cpp.
#include "replay_fixture.hpp"
#include "temp_dir.hpp"

#include <boundary/verify/replay.hpp>
#include <boundary/verify/report.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

using namespace boundary;
using namespace boundary::test;
namespace fs = std::filesystem;
using nlohmann::json;

TEST_CASE("ulp distance and value class, from bit patterns") {
  using report::ulp_distance_bf16, report::ulp_distance_f32, report::value_class_bf16, report::value_class_f32;
  SUBCASE("bf16") {
    CHECK(ulp_distance_bf16(0x3F80, 0x3F80) == 0);
    CHECK(ulp_distance_bf16(0x3F80, 0x3F81) == 1);
    CHECK(ulp_distance_bf16(0x3F81, 0x3F80) == 1);
    CHECK(ulp_distance_bf16(0x0000, 0x8000) == 1);  // +0 and -0: adjacent, not equal
    CHECK(ulp_distance_bf16(0x0001, 0x8001) == 3);  // +min subnormal .. -min subnormal, across both zeros
    CHECK(ulp_distance_bf16(0x7F7F, 0x7F80) == 1);  // largest finite to +inf
    CHECK(ulp_distance_bf16(0xFF80, 0x7F80) == 2 * 0x7F80 + 1);
    CHECK(ulp_distance_bf16(0x7FC0, 0x3F80) == -1);  // NaN
    CHECK(ulp_distance_bf16(0x3F80, 0xFFFF) == -1);
    CHECK(ulp_distance_bf16(0x7FFF, 0x7FFF) == -1);  // even equal NaNs have no distance
    CHECK(value_class_bf16(0x0000) == "+zero");
    CHECK(value_class_bf16(0x8000) == "-zero");
    CHECK(value_class_bf16(0x0001) == "+subnormal");
    CHECK(value_class_bf16(0x807F) == "-subnormal");
    CHECK(value_class_bf16(0x0080) == "+normal");  // smallest normal
    CHECK(value_class_bf16(0xFF7F) == "-normal");  // most negative finite
    CHECK(value_class_bf16(0x7F80) == "+inf");
    CHECK(value_class_bf16(0xFF80) == "-inf");
    CHECK(value_class_bf16(0x7F81) == "+nan");
    CHECK(value_class_bf16(0xFFC0) == "-nan");
  }
  SUBCASE("f32") {
    CHECK(ulp_distance_f32(0x3F800000u, 0x3F800001u) == 1);
    CHECK(ulp_distance_f32(0x00000000u, 0x80000000u) == 1);
    CHECK(ulp_distance_f32(0x7F7FFFFFu, 0x7F800000u) == 1);
    CHECK(ulp_distance_f32(0xFF800000u, 0x7F800000u) == 2 * std::int64_t{0x7F800000} + 1);  // beyond 32 bits
    CHECK(ulp_distance_f32(0x7FFFFFFFu, 0x3F800000u) == -1);
    CHECK(ulp_distance_f32(0x00000000u, 0xFFC00000u) == -1);
    CHECK(value_class_f32(0x00000000u) == "+zero");
    CHECK(value_class_f32(0x80000000u) == "-zero");
    CHECK(value_class_f32(0x00000001u) == "+subnormal");
    CHECK(value_class_f32(0x807FFFFFu) == "-subnormal");
    CHECK(value_class_f32(0x00800000u) == "+normal");
    CHECK(value_class_f32(0xBF800000u) == "-normal");
    CHECK(value_class_f32(0x7F800000u) == "+inf");
    CHECK(value_class_f32(0xFF800000u) == "-inf");
    CHECK(value_class_f32(0x7F800001u) == "+nan");
    CHECK(value_class_f32(0xFFC00000u) == "-nan");
  }
}

TEST_CASE("replay: a fixture of the emulator's own outputs is equal in every element") {
  TempDir dir;
  const fs::path path = dir.path / "clean.safetensors";
  st::write_file(path, make_fixture());
  int code = -1;
  const json r = cli::run_replay(options_for(path), &code);
  CHECK(code == cli::kSuccess);
  CHECK(r["exit_code"] == 0);
  CHECK(r["result"] == "equal");
  CHECK(r["schema_version"] == "boundary-verify/report/3");
  CHECK(r["gpu"] == "not requested");
  CHECK(r["environment"]["gpu"].is_null());
  CHECK(r["counts"]["elements_compared"] == 2 * kRows * kH);
  CHECK(r["counts"]["mismatches"] == 0);
  CHECK(r["mismatches"]["items"].empty());
  REQUIRE(r["files"].size() == 1);
  const json& f = r.at("files").at(0);
  CHECK(f["path"] == path.string());
  CHECK(f["kernel"] == "draft_boundary");
  CHECK(f["variant"] == "f32-stored");
  CHECK(f["rows"] == kRows);
  CHECK(f["checks"] == json::array({"emulator"}));
  CHECK(f["provenance"].empty());
  for (const char* tensor : {"out", "new_stream"}) {
    const json c = find_count(f, "emulator", tensor);
    REQUIRE_MESSAGE(c.is_object(), tensor);
    CHECK(c["compared"] == kRows * kH);
    CHECK(c["mismatches"] == 0);
  }
  CHECK(cli::format_replay(r).find("every bit equal") != std::string::npos);
}

TEST_CASE("replay: without new_stream only out is compared; provenance keys are reported when present") {
  TempDir dir;
  st::File fixture = make_fixture(kRows, /*with_new_stream=*/false);
  fixture.metadata.erase("kernel");
  fixture.metadata["gpu"] = "NVIDIA H200";
  fixture.metadata["seed"] = "7";
  st::write_file(dir.path / "f.safetensors", fixture);
  int code = -1;
  const json r = cli::run_replay(options_for(dir.path / "f.safetensors"), &code);
  CHECK(code == cli::kSuccess);
  const json& f = r.at("files").at(0);
  CHECK(f["counts"].size() == 1);
  CHECK(find_count(f, "emulator", "out").is_object());
  CHECK(f["kernel"].is_null());
  CHECK(f["provenance"] == json{{"gpu", "NVIDIA H200"}, {"seed", "7"}});
  CHECK(r["counts"]["elements_compared"] == kRows * kH);
}

TEST_CASE("replay names exactly the flipped bits: file, tensor, row, column, bits, ulp, classes") {
  TempDir dir;
  st::File fixture = make_fixture();
  // The lowest mantissa bit: one ulp away, same class (the values are normal, checked below).
  const std::uint16_t out_before = out_at(fixture, 3, 1234);
  const std::uint32_t ns_before = new_stream_at(fixture, 1, 8000);
  REQUIRE(report::value_class_bf16(out_before).substr(1) == "normal");
  REQUIRE(report::value_class_f32(ns_before).substr(1) == "normal");
  out_at(fixture, 3, 1234) ^= 1;
  new_stream_at(fixture, 1, 8000) ^= 1;
  const fs::path path = dir.path / "flipped.safetensors";
  st::write_file(path, fixture);

  int code = -1;
  const json r = cli::run_replay(options_for(path), &code);
  CHECK(code == cli::kMismatch);
  CHECK(r["result"] == "mismatch");
  CHECK(r["counts"]["mismatches"] == 2);
  CHECK(r["mismatches"]["total"] == 2);
  CHECK(r["mismatches"]["truncated"] == false);
  CHECK(find_count(r.at("files").at(0), "emulator", "out").at("mismatches") == 1);
  CHECK(find_count(r.at("files").at(0), "emulator", "new_stream").at("mismatches") == 1);
  const json& items = r["mismatches"]["items"];
  REQUIRE(items.size() == 2);
  const std::string out_class = report::value_class_bf16(out_before);
  CHECK(items[0] == json{{"suite", ""}, {"pair", "emulator vs fixture"}, {"variant", "f32-stored"},
                         {"file", path.string()}, {"tensor", "out"}, {"row", 3}, {"column", 1234},
                         {"dtype", "BF16"}, {"expected_bits", hex(out_before ^ 1u, 4)},
                         {"actual_bits", hex(out_before, 4)}, {"ulp_distance", 1},
                         {"expected_class", out_class}, {"actual_class", out_class}, {"seed", nullptr}, {"inputs", nullptr}, {"first_divergent_stage", nullptr}});
  const std::string ns_class = report::value_class_f32(ns_before);
  CHECK(items[1] == json{{"suite", ""}, {"pair", "emulator vs fixture"}, {"variant", "f32-stored"},
                         {"file", path.string()}, {"tensor", "new_stream"}, {"row", 1}, {"column", 8000},
                         {"dtype", "F32"}, {"expected_bits", hex(ns_before ^ 1u, 8)},
                         {"actual_bits", hex(ns_before, 8)}, {"ulp_distance", 1},
                         {"expected_class", ns_class}, {"actual_class", ns_class}, {"seed", nullptr}, {"inputs", nullptr}, {"first_divergent_stage", nullptr}});
  const std::string text = cli::format_replay(r);
  CHECK(text.find("2 mismatches") != std::string::npos);
  CHECK(text.find("[row 3, column 1234]") != std::string::npos);
  CHECK(text.find(hex(out_before, 4)) != std::string::npos);
}

TEST_CASE("replay: a class change is reported (a planted NaN and a planted -0)") {
  TempDir dir;
  st::File fixture = make_fixture();
  const std::uint16_t before = out_at(fixture, 0, 0);
  out_at(fixture, 0, 0) = 0x7FFF;
  out_at(fixture, 4, 8191) = 0x8000;
  const std::uint16_t last_before = make_fixture().tensors.at("out").data<std::uint16_t>()[4 * kH + 8191];
  st::write_file(dir.path / "f.safetensors", fixture);
  const json r = cli::run_replay(options_for(dir.path / "f.safetensors"), nullptr);
  const json& items = r["mismatches"]["items"];
  REQUIRE(items.size() == 2);
  CHECK(items[0]["expected_class"] == "+nan");
  CHECK(items[0]["actual_class"] == report::value_class_bf16(before));
  CHECK(items[0]["ulp_distance"] == -1);
  CHECK(items[1]["row"] == 4);
  CHECK(items[1]["column"] == 8191);
  CHECK(items[1]["expected_class"] == "-zero");
  CHECK(items[1]["ulp_distance"] == report::ulp_distance_bf16(0x8000, last_before));
}

TEST_CASE("replay: the mismatch cap limits the list, never the counts") {
  TempDir dir;
  st::File fixture = make_fixture();
  for (std::int64_t i = 0; i < 50; ++i) out_at(fixture, i % kRows, 100 * i) ^= 0x10;
  new_stream_at(fixture, 2, 5) ^= 0x100;
  const fs::path path = dir.path / "many.safetensors";
  st::write_file(path, fixture);
  cli::ReplayOptions o = options_for(path);
  for (std::size_t cap : {std::size_t{0}, std::size_t{7}, std::size_t{51}, std::size_t{1000}}) {
    CAPTURE(cap);
    o.max_mismatches = cap;
    int code = -1;
    const json r = cli::run_replay(o, &code);
    CHECK(code == cli::kMismatch);
    CHECK(r["mismatches"]["total"] == 51);
    CHECK(r["mismatches"]["listed"] == std::min<std::size_t>(cap, 51));
    CHECK(r["mismatches"]["items"].size() == std::min<std::size_t>(cap, 51));
    CHECK(r["mismatches"]["cap"] == cap);
    CHECK(r["mismatches"]["truncated"] == (cap < 51));
    CHECK(find_count(r.at("files").at(0), "emulator", "out").at("mismatches") == 50);
    CHECK(find_count(r.at("files").at(0), "emulator", "new_stream").at("mismatches") == 1);
  }
}

TEST_CASE("replay: several files are counted apart") {
  TempDir dir;
  st::write_file(dir.path / "a.safetensors", make_fixture());
  st::File b = make_fixture(2);
  out_at(b, 1, 9) ^= 1;
  st::write_file(dir.path / "b.safetensors", b);
  cli::ReplayOptions o = options_for(dir.path / "a.safetensors");
  o.files.push_back(dir.path / "b.safetensors");
  int code = -1;
  const json r = cli::run_replay(o, &code);
  CHECK(code == cli::kMismatch);
  REQUIRE(r["files"].size() == 2);
  CHECK(find_count(r.at("files").at(0), "emulator", "out").at("mismatches") == 0);
  CHECK(find_count(r.at("files").at(1), "emulator", "out").at("mismatches") == 1);
  CHECK(r.at("files").at(1)["rows"] == 2);
  CHECK(r["counts"]["elements_compared"] == 2 * (kRows + 2) * kH);
  CHECK(r.at("mismatches").at("items").at(0)["file"] == (dir.path / "b.safetensors").string());
}

TEST_CASE("replay: bad fixtures are InputErrors naming the file, and no report is written") {
  TempDir dir;
  const fs::path path = dir.path / "bad.safetensors";
  cli::ReplayOptions o = options_for(path);
  o.report = dir.path / "report.json";
  auto expect_error = [&](const st::File& f, const std::string& words) {
    st::write_file(path, f);
    CHECK_THROWS_WITH_AS(cli::run_replay(o, nullptr), doctest::Contains(words.c_str()), InputError);
    CHECK_THROWS_WITH_AS(cli::run_replay(o, nullptr), doctest::Contains(path.string().c_str()), InputError);
    CHECK_FALSE(fs::exists(*o.report));
  };
  st::File f = make_fixture(1);
  f.metadata.erase("constants");
  expect_error(f, "no 'constants'");
  f = make_fixture(1);
  f.metadata["constants"] = "{\"post_eps\": 1e-8";
  expect_error(f, "constants");
  f = make_fixture(1);
  f.metadata["constants"] = R"({"post_eps": 1e-8, "pre_eps": 1e-5, "post_gain_center": null, "pre_gain_center": null})";
  expect_error(f, "'post_weight'");  // the constants say no weight, the fixture has one
  f = make_fixture(1);
  f.tensors["out"] = st::make_tensor(st::Dtype::BF16, {2, kH});
  expect_error(f, "'out'");
  f = make_fixture(1);
  f.tensors["out"] = st::make_tensor(st::Dtype::F32, {1, kH});
  expect_error(f, "'out'");
  f = make_fixture(1);
  f.tensors.erase("out");
  expect_error(f, "no tensor 'out'");
  f = make_fixture(1);
  f.tensors["new_stream"] = st::make_tensor(st::Dtype::BF16, {1, kH});
  expect_error(f, "'new_stream'");
  f = make_fixture(1);
  f.tensors.erase("alpha");
  expect_error(f, "'alpha'");

  // A good first file does not save a bad second one: nothing is written.
  st::write_file(dir.path / "good.safetensors", make_fixture(1));
  o.files = {dir.path / "good.safetensors", dir.path / "missing.safetensors"};
  CHECK_THROWS_WITH_AS(cli::run_replay(o, nullptr), doctest::Contains("missing.safetensors"), InputError);
  CHECK_FALSE(fs::exists(*o.report));
  o.files.clear();
  CHECK_THROWS_AS(cli::run_replay(o, nullptr), InputError);
}

TEST_CASE("replay --report writes the returned JSON, atomically, and a bad report path is an InputError") {
  TempDir dir;
  st::write_file(dir.path / "f.safetensors", make_fixture(2));
  cli::ReplayOptions o = options_for(dir.path / "f.safetensors");
  o.report = dir.path / "report.json";
  {
    std::ofstream old(*o.report);
    old << "old";
  }
  const json r = cli::run_replay(o, nullptr);
  std::ifstream in(*o.report);
  CHECK(json::parse(in) == r);
  for (const auto& entry : fs::directory_iterator(dir.path))  // no temporary left behind
    CHECK(entry.path().filename().string().find(".tmp-") == std::string::npos);
  o.report = dir.path / "no-such-dir" / "report.json";
  CHECK_THROWS_WITH_AS(cli::run_replay(o, nullptr), doctest::Contains("no-such-dir"), InputError);
}
