// The gate and the self-test driven through their options structs, on the CPU: without a GPU hook
// (the CPU parts, exit 77), and with fake GPU hooks built on the emulator: one that agrees (exit
// 0) and one that flips one bit of `out` in one variant, so that the mismatch, diagnosis, shrink,
// report and JUnit paths run without a GPU.
#include "temp_dir.hpp"

#include <boundary/mutant_emulators.hpp>
#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/edge_suite.hpp>
#include <boundary/verify/gate.hpp>
#include <boundary/reference.hpp>
#include <boundary/verify/replay.hpp>

#include <doctest/doctest.h>

#include "schema_validator.hpp"

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

using namespace boundary;
namespace st = boundary::safetensors;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kFfn = BOUNDARY_SOURCE_DIR "/fixtures/constants/muse-spark-post-ffn.json";
const fs::path kSchema = BOUNDARY_SOURCE_DIR "/verify/report-schema.json";
const fs::path kFixtures = BOUNDARY_SOURCE_DIR "/fixtures/boundary";
constexpr std::int64_t kFlipColumn = 5;
// The sanitizer build skips the costliest case (the self-test's GPU half on every suite, about two
// fifths of this program's time; the gate runs below build the same suites); the Release build runs it.
#ifdef BOUNDARY_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

using test::TempDir;

cli::GateOptions small_gate() {
  cli::GateOptions o;
  o.constants = kFfn;
  o.rows = 8;
  o.threads = 2;
  o.fixtures = kFixtures;
  o.quiet = true;
  return o;
}

// The emulator (or its twin of planted bug m) standing in for the GPU, with every intermediate
// when asked.
cli::StageValues emulated(const Constants& c, const BoundTensors& b, bool store, bool intermediates,
                          Mutant m = Mutant::none) {
  cli::StageValues v;
  auto add = [&](const std::string& name, st::Dtype d, std::vector<std::int64_t> shape) -> st::Tensor& {
    return v[name] = st::make_tensor(d, std::move(shape));
  };
  ref::Outputs o;
  o.out = add("out", st::Dtype::BF16, {b.m, kH}).data<std::uint16_t>();
  o.new_stream = add("res", st::Dtype::F32, {b.m, kH}).data<float>();
  if (intermediates) {
    o.post_row_sum = add("post_row_sum", st::Dtype::F32, {b.m}).data<float>();
    o.r1 = add("r1", st::Dtype::F32, {b.m}).data<float>();
    o.y_b = add("y_b", st::Dtype::BF16, {b.m, kH}).data<std::uint16_t>();
    o.z = add("z", st::Dtype::BF16, {b.m, kH}).data<std::uint16_t>();
    o.pre_row_sum = add("pre_row_sum", st::Dtype::F32, {b.m}).data<float>();
    o.r2 = add("r2", st::Dtype::F32, {b.m}).data<float>();
  }
  mutants::run_emulator(m, c, b.operands, b.inputs, o, 1);
  if (store) v["new_stream"] = v.at("res");
  if (!intermediates) v.erase("res");
  return v;
}

// A GPU that agrees with the emulator, except that `flipped` flips the lowest bit of out in
// column kFlipColumn of every row (in its debug build too, so the first divergent stage is out).
cli::GateGpuHook fake_gpu(const std::string& flipped) {
  cli::GateGpuHook h;
  h.probe = [] { return report::GpuInfo{"fake GPU", "9.0", "none", "none"}; };
  auto flip = [flipped](cli::StageValues v, const cli::GateVariant& variant) {
    if (variant.name == flipped) {
      std::uint16_t* out = v.at("out").data<std::uint16_t>();
      for (std::int64_t r = 0; r < v.at("out").shape[0]; ++r) out[r * kH + kFlipColumn] ^= 1;
    }
    return v;
  };
  h.run = [flip](const Constants& c, const BoundTensors& b, const cli::GateVariant& v) {
    return flip(emulated(c, b, v.store, false), v);
  };
  h.run_with_intermediates = [flip](const Constants& c, const BoundTensors& b,
                                    const cli::GateVariant& v) -> std::optional<cli::StageValues> {
    if (v.kind == cli::GateVariant::Kind::eager) return std::nullopt;
    return flip(emulated(c, b, v.store, true), v);
  };
  h.run_mutant = [](Mutant, const Constants& c, const BoundTensors& b, const cli::GateVariant& v) {
    return emulated(c, b, v.store, false);
  };
  return h;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Basic JUnit well-formedness: the declaration, one root, every testcase closed, counts that match.
void check_junit(const std::string& xml, std::size_t failures) {
  CHECK(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites ", 0) == 0);
  CHECK(occurrences(xml, "<testsuites ") == 1);
  CHECK(occurrences(xml, "</testsuites>") == 1);
  const std::size_t cases = occurrences(xml, "<testcase ");
  CHECK(cases > 0);
  CHECK(occurrences(xml, "<testcase ") == occurrences(xml, "\"/>\n") - occurrences(xml, "<skipped ") +
                                               occurrences(xml, "</testcase>"));
  CHECK(xml.find("tests=\"" + std::to_string(cases) + "\" failures=\"" + std::to_string(failures) + "\"") !=
        std::string::npos);
  CHECK(occurrences(xml, "<failure ") == failures);
}

}  // namespace

TEST_CASE("variants: all 83 by name, 16 fused per layout; a list picks some; an unknown name is an InputError naming it") {
  const auto all = cli::all_gate_variants();
  CHECK(all.size() == 83);
  CHECK(all.front().name == "eager");
  CHECK(all.back().name == "all-reduce");
  for (const auto layout : cli::kGateLayouts)
    CHECK(std::count_if(all.begin(), all.end(), [&](const auto& v) {
            return v.kind == cli::GateVariant::Kind::fused && v.layout == layout;
          }) == 16);
  CHECK(std::count_if(all.begin(), all.end(), [](const auto& v) { return v.name == "f32-store-late-pdl-quad"; }) == 1);
  CHECK(std::count_if(all.begin(), all.end(), [](const auto& v) { return v.name == "bf16-nostore-late-nopdl"; }) == 1);
  CHECK(std::count_if(all.begin(), all.end(), [](const auto& v) {
          return v.name == "f32-store-early-pdl-cluster-balanced" && v.layout == cli::GateVariant::Layout::cluster_balanced;
        }) == 1);
  const auto some = cli::parse_gate_variants("graph,f32-store-early-pdl,graph,bf16-nostore-late-nopdl-cluster");
  REQUIRE(some.size() == 3);
  CHECK(some[1].late_gates == false);
  CHECK(some[1].layout == cli::GateVariant::Layout::cta);
  CHECK(some[1].runs_on(StreamDtype::f32));
  CHECK_FALSE(some[1].runs_on(StreamDtype::bf16));
  CHECK(some[2].layout == cli::GateVariant::Layout::cluster);
  CHECK(some[2].late_gates);
  CHECK_FALSE(some[2].store);
  CHECK(some[2].runs_on(StreamDtype::bf16));
  CHECK_THROWS_WITH_AS(cli::parse_gate_variants("f32-store-early"), doctest::Contains("'f32-store-early'"), InputError);
  // The multi-process run starts processes per suite: by name only, never in "all".
  CHECK(std::none_of(all.begin(), all.end(), [](const auto& v) { return v.kind == cli::GateVariant::Kind::multi_process; }));
  const auto mp = cli::parse_gate_variants("multi-process");
  REQUIRE(mp.size() == 1);
  CHECK(mp[0].kind == cli::GateVariant::Kind::multi_process);
  CHECK(mp[0].store);
  CHECK(mp[0].runs_on(StreamDtype::f32));
  CHECK(mp[0].runs_on(StreamDtype::bf16));
}

TEST_CASE("gate without a GPU: the CPU parts run, the fixtures replay, exit 77, the report validates") {
  TempDir dir;
  cli::GateOptions o = small_gate();
  o.report = dir.path / "report.json";
  o.junit = dir.path / "junit.xml";
  int code = -1;
  const json r = cli::run_gate(o, &code);
  CHECK(code == cli::kNoDevice);
  CHECK(r["exit_code"] == 77);
  CHECK(r["result"] == "equal");
  CHECK(r["gpu"] == "not run: this build has no GPU support");
  CHECK(boundary::test::schema_errors(kSchema, r) == std::vector<std::string>{});
  CHECK(json::parse(read_text(*o.report)) == r);
  const json& g = r["gate"];
  CHECK(g["suites"].size() > 6);
  CHECK(g["vacuity"]["uncaught"].empty());
  CHECK(g["vacuity"]["rows_caught"].size() == mutants::kEmulatorTwins.size());
  CHECK(g["vacuity"]["not_applicable"].contains("rank_order"));  // the suites' branch is one rank
  CHECK(r["files"].size() == static_cast<std::size_t>(std::count_if(fs::directory_iterator(kFixtures), fs::directory_iterator{},
                                                                    [](const auto& e) { return e.path().extension() == ".safetensors"; })));
  for (const json& run : g["runs"]) CHECK(run["variant"] == "emulator");  // the emulator's own check only
  CHECK(r["notes"].dump().find("the GPU checks did not run") != std::string::npos);
  const std::string xml = read_text(*o.junit);
  check_junit(xml, 0);
  CHECK(xml.find("<skipped message=\"not run: this build has no GPU support\"/>") != std::string::npos);
  CHECK(cli::format_gate(r).find("DID NOT RUN (exit 77)") != std::string::npos);
}

TEST_CASE("gate with a GPU that agrees: exit 0, every variant counted on the suites of its stream dtype") {
  cli::GateOptions o = small_gate();
  o.variants = "eager,bf16-nostore-late-nopdl,graph";
  o.gpu_hook = fake_gpu("");
  int code = -1;
  const json r = cli::run_gate(o, &code);
  CHECK(code == cli::kSuccess);
  CHECK(boundary::test::schema_errors(kSchema, r) == std::vector<std::string>{});
  std::map<std::string, std::set<std::string>> tensors_of;
  for (const json& run : r["gate"]["runs"]) {
    tensors_of[run["variant"]].insert(run["tensor"].get<std::string>());
    if (run["variant"] == "bf16-nostore-late-nopdl") CHECK(run["suite"].get<std::string>().find("bf16") != std::string::npos);
    CHECK(run["mismatches"] == 0);
  }
  CHECK(tensors_of["eager"] == std::set<std::string>{"out", "new_stream"});
  CHECK(tensors_of["bf16-nostore-late-nopdl"] == std::set<std::string>{"out"});  // the stream is not stored
  CHECK(tensors_of["graph"].size() == 2);
}

TEST_CASE("gate with one flipped bit: exit 1, the mismatch located, diagnosed, shrunk, replayable") {
  TempDir dir;
  cli::GateOptions o = small_gate();
  o.variants = "eager,f32-store-early-pdl";
  o.gpu_hook = fake_gpu("f32-store-early-pdl");
  o.report = dir.path / "report.json";
  o.junit = dir.path / "junit.xml";
  o.max_mismatches = 3;
  int code = -1;
  const json r = cli::run_gate(o, &code);
  CHECK(code == cli::kMismatch);
  CHECK(r["result"] == "mismatch");
  CHECK(boundary::test::schema_errors(kSchema, r) == std::vector<std::string>{});
  std::int64_t f32_rows = 0;
  for (const json& s : r["gate"]["suites"])
    if (s["stream_dtype"] == "F32") f32_rows += s["rows"].get<std::int64_t>();
  CHECK(r["mismatches"]["total"] == f32_rows);  // one element per row of the variant's suites
  REQUIRE(r["mismatches"]["items"].size() == 3);
  const json& m = r["mismatches"]["items"][0];
  CHECK(m["pair"] == "gpu:f32-store-early-pdl vs emulator");
  CHECK(m["variant"] == "f32-store-early-pdl");
  CHECK(m["tensor"] == "out");
  CHECK(m["row"] == 0);
  CHECK(m["column"] == kFlipColumn);
  CHECK(m["seed"] == 1);
  CHECK(m["inputs"]["stream_dtype"] == "F32");
  CHECK(m["inputs"]["post_weight"].is_string());
  CHECK(m["first_divergent_stage"]["stage"] == "out");
  CHECK(m["first_divergent_stage"]["column"] == kFlipColumn);
  CHECK(m["first_divergent_stage"]["expected_bits"] == m["expected_bits"]);
  const json& shrunk = r["gate"]["shrink"];
  REQUIRE(shrunk.is_object());
  CHECK(shrunk["fixture"] == (dir.path / "report-shrunk.safetensors").string());
  CHECK(shrunk["stage"] == "out");
  CHECK(shrunk["nontrivial_after"].get<std::int64_t>() < shrunk["nontrivial_before"].get<std::int64_t>());
  CHECK(cli::format_gate(r).find("  shrunk the first mismatch to ") != std::string::npos);
  // Regression: a shrink that took no step (torch's eager boundary on the H200, 2026-12-05) was
  // summarized as "shrunk ... to 48713 non-trivial elements (from 48713)".
  json unshrunk = r;
  unshrunk["gate"]["shrink"]["steps"] = 0;
  unshrunk["gate"]["shrink"]["nontrivial_after"] = shrunk["nontrivial_before"];
  const std::string said = cli::format_gate(unshrunk);
  CHECK(said.find("could not shrink the first mismatch: no simpler row kept it in ") != std::string::npos);
  CHECK(said.find("shrunk the first mismatch to") == std::string::npos);
  // replay reproduces it: the recorded (flipped) out differs from the emulator's in that one element.
  cli::ReplayOptions replay;
  replay.files = {shrunk["fixture"].get<std::string>()};
  int replay_code = -1;
  const json rr = cli::run_replay(replay, &replay_code);
  CHECK(replay_code == cli::kMismatch);
  CHECK(rr["mismatches"]["total"] == 1);
  CHECK(rr["mismatches"]["items"][0]["column"] == kFlipColumn);
  check_junit(read_text(*o.junit), occurrences(read_text(*o.junit), "gpu:f32-store-early-pdl vs emulator\">"));
  CHECK(read_text(*o.junit).find("first divergent stage out") != std::string::npos);
}

TEST_CASE("gate: bad options, constants and operands are InputErrors, before anything is written") {
  TempDir dir;
  cli::GateOptions o = small_gate();
  o.report = dir.path / "report.json";
  o.level = 3;
  CHECK_THROWS_WITH_AS(cli::run_gate(o, nullptr), doctest::Contains("--level"), InputError);
  o.level = 1;
  o.constants = dir.path / "missing.json";
  CHECK_THROWS_AS(cli::run_gate(o, nullptr), InputError);
  o.constants = kFfn;
  st::File ops;
  ops.tensors["alpha"] = st::make_tensor(st::Dtype::F32, {kH});
  ops.tensors["gamma"] = st::make_tensor(st::Dtype::F32, {kH});
  st::write_file(dir.path / "ops.safetensors", ops);
  o.operands = dir.path / "ops.safetensors";
  CHECK_THROWS_WITH_AS(cli::run_gate(o, nullptr), doctest::Contains("'gamma'"), InputError);
  ops.tensors.erase("gamma");  // beta and the weights missing: bind_inputs names the first
  st::write_file(dir.path / "ops.safetensors", ops);
  CHECK_THROWS_WITH_AS(cli::run_gate(o, nullptr), doctest::Contains("ops.safetensors"), InputError);
  CHECK_FALSE(fs::exists(*o.report));
}

TEST_CASE("self-test without a GPU: the emulator twins on the fixtures and the edge suites; a survivor is named") {
  cli::SelfTestOptions o;
  o.constants = kFfn;
  o.fixtures = kFixtures;
  o.threads = 2;
  int code = -1;
  const json r = cli::run_self_test(o, &code);
  REQUIRE(r["mutants"].size() == kAllMutants.size());
  json survivors = json::array();
  for (const json& m : r["mutants"]) {
    CHECK(m["gpu_rows_caught"].is_null());
    if (!m["emulator_twin"].get<bool>()) {
      CHECK(m["caught"] == true);  // the launch-path bugs have no CPU half to fail
      continue;
    }
    // The edge suites are not vacuous; rank_order needs R >= 3 partials, which only the all-reduce
    // fixtures have (the edge suites' branch is one rank).
    const bool edge_applies = m["mutant"] != "rank_order";
    CHECK((m["edge_rows_caught"].get<std::int64_t>() > 0) == edge_applies);
    CHECK((m["not_applicable_to"] == json::array({"edge"})) == !edge_applies);
    const bool caught = m["fixture_rows_caught"].get<std::int64_t>() > 0 &&
                        (m["edge_rows_caught"].get<std::int64_t>() > 0 || !edge_applies);
    CHECK(m["caught"] == caught);
    if (!caught) survivors.push_back(m["mutant"]);
  }
  CHECK(r["survivors"] == survivors);
  CHECK(code == (survivors.empty() ? cli::kNoDevice : cli::kMismatch));
  CHECK(cli::format_self_test(r).find(survivors.empty() ? "DID NOT RUN" : "SURVIVES") != std::string::npos);
}

// The self-test's GPU half with kernels that are the emulator twins: the all-reduce boundary's runs
// on 3 rank partials catch rank_order, which the DraftBoundary's one rank could not (and is not
// counted there); only the launch-path bugs, which have no twin, survive.
TEST_CASE("self_test_all_reduce_mutants: rank_order caught on the all-reduce boundary's 3 partials" *
          doctest::skip(kSanitized)) {
  test::TempDir dir;
  fs::create_directories(dir.path / "no-fixtures");  // the GPU half alone (and the edge suites)
  cli::SelfTestOptions o;
  o.constants = kFfn;
  o.fixtures = dir.path / "no-fixtures";
  o.threads = 2;
  o.rows = 4;
  std::map<std::string, std::set<int>> ranks_run;  // per mutant and kind, the rank counts it ran on
  o.gpu_hook = fake_gpu("");
  o.gpu_hook.run_mutant = [&](Mutant m, const Constants& c, const BoundTensors& b, const cli::GateVariant& v) {
    const bool all_reduce = v.kind == cli::GateVariant::Kind::all_reduce;
    ranks_run[std::string(mutant_name(m)) + (all_reduce ? " all-reduce" : " fused")].insert(suite::ranks_of(b.inputs));
    return emulated(c, b, v.store, false, has_emulator_twin(m) ? m : Mutant::none);
  };
  int code = -1;
  const json r = cli::run_self_test(o, &code);
  CHECK(code == cli::kMismatch);
  CHECK(r["survivors"] == json::array({"late_gates_wrong_columns", "pdl_wait_missing"}));
  for (const json& m : r["mutants"]) {
    CAPTURE(m.dump());
    CHECK(m["not_applicable"].is_null());
    if (m["emulator_twin"].get<bool>()) CHECK(m["gpu_rows_caught"].get<std::int64_t>() > 0);
  }
  CHECK(ranks_run["rank_order all-reduce"] == std::set<int>{suite::kRankPartials});
  CHECK(ranks_run.count("rank_order fused") == 0);  // not applicable to one rank: not run there
  CHECK(ranks_run["fragment_order fused"] == std::set<int>{1});
  CHECK(ranks_run["fragment_order all-reduce"] == std::set<int>{suite::kRankPartials});
  CHECK(ranks_run.count("pdl_wait_missing all-reduce") == 0);  // needs a producer, which it has not
}

TEST_CASE("self-test with a GPU whose mutants change nothing: every kernel mutant survives, exit 1" *
          doctest::skip(kSanitized)) {
  cli::SelfTestOptions o;
  o.constants = kFfn;
  o.fixtures = kFixtures;
  o.threads = 2;
  o.rows = 4;
  o.gpu_hook = fake_gpu("");
  int code = -1;
  const json r = cli::run_self_test(o, &code);
  CHECK(code == cli::kMismatch);
  CHECK(r["survivors"].size() == kAllMutants.size());
}
