// Defect 1 of issue 13: the gate and self-test failed correct kernels ("VACUOUS: no edge row catches
// gain_unrounded") under legal constants in which a planted bug cannot change any output. Over the
// space of legal constants (each norm without a weight, or with a BF16, FP16 or FP32 weight, after or
// before the norm, gain centre 0 or 1; fma squares on and off; eps 0), every applicable mutant must be
// caught by the edge suite and every other one reported not applicable, never failing the gate.
#include "temp_dir.hpp"

#include <boundary/verify/boundary_tensors.hpp>
#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/edge_suite.hpp>
#include <boundary/verify/gate.hpp>
#include <boundary/mutant_emulators.hpp>
#include <boundary/results.hpp>

#include <doctest/doctest.h>

#include "schema_validator.hpp"

#include <algorithm>
#include <bit>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace boundary;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kSchema = BOUNDARY_SOURCE_DIR "/verify/report-schema.json";
// The sanitizer build runs everything about 10 times slower: it takes every fourth constants set
// of the sweep and the first gate run, and the order rows' sets of seed 1 only, every other one.
#ifdef BOUNDARY_SANITIZED
constexpr std::size_t kSweepStride = 4;
constexpr std::size_t kGateRuns = 1;
constexpr std::uint64_t kOrderSeeds[] = {1};
constexpr std::size_t kOrderSetStride = 2;
#else
constexpr std::size_t kSweepStride = 1;
constexpr std::size_t kGateRuns = 2;
constexpr std::uint64_t kOrderSeeds[] = {1, 2, 3};
constexpr std::size_t kOrderSetStride = 1;
#endif

// One norm of the space: no weight, or a weight of `dtype` with gain centre `centre`.
struct NormCase {
  std::optional<WeightDtype> dtype;
  double centre = 1.0;
  bool input_scale = false;
};

// Every legal norm: none, and each dtype x centre x input scale (13).
std::vector<NormCase> every_norm() {
  std::vector<NormCase> all{{}};
  for (const WeightDtype d : {WeightDtype::bf16, WeightDtype::fp16, WeightDtype::fp32})
    for (const double centre : {0.0, 1.0})
      for (const bool scale : {false, true}) all.push_back({d, centre, scale});
  return all;
}

NormConstants norm(const NormCase& n, bool fma, double eps) {
  NormConstants c;
  c.eps = eps;
  c.fma_squares = fma;
  if (n.dtype) {
    c.gain_center = n.centre;
    c.weight_dtype = *n.dtype;
    c.input_scale = n.input_scale;
  }
  return c;
}

// The contract (section 3): a gain is rounded to its weight's dtype only for BF16 and FP16, and the
// rounding can change a value only when the centre is not 0.
bool rounds_gain(const NormCase& n) { return n.dtype && *n.dtype != WeightDtype::fp32 && n.centre != 0.0; }

fs::path write_constants(const fs::path& dir, const Constants& c) {
  const fs::path p = dir / "constants.json";
  std::ofstream(p) << constants_to_json(c).dump();
  return p;
}

// The order rows of `s` (family "order (overflow): <layout>...") that mutant m leaves unchanged.
std::vector<std::string> order_rows_missed(const Constants& c, const suite::Suite& s, Mutant m, const std::string& layout) {
  const BoundTensors bound = bind_inputs(s.inputs, c, "order rows");
  const auto run = [&](Mutant which) {
    ref::Results r(bound.m);
    mutants::run_emulator(which, c, bound.operands, bound.inputs, r.outputs(), 2);
    return r;
  };
  const auto production = run(Mutant::none), mutant = run(m);
  std::vector<std::string> missed;
  for (std::int64_t row = 0; row < bound.m; ++row) {
    const std::string& family = s.row_family[static_cast<std::size_t>(row)];
    if (family.rfind("order (overflow): " + layout, 0) != 0) continue;
    const std::size_t at = static_cast<std::size_t>(row) * kH;
    if (std::equal(&production.out[at], &production.out[at + kH], &mutant.out[at]) &&
        std::equal(&production.new_stream[at], &production.new_stream[at + kH], &mutant.new_stream[at], [](float a, float b) {
          return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
        }))
      missed.push_back(family);
  }
  return missed;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

// Each of the 13 norm cases once as the post norm and once as the pre norm, fma squares and eps 0
// varying with the index; every set builds an edge suite (about 2 s each in Release), with the
// gate's default seed. Every order row, in the branch and in the stream, is caught by its twin.
TEST_CASE("gate_vacuity_over_every_legal_constants: applicable mutants caught, the others not applicable") {
  const std::vector<NormCase> norms = every_norm();
  const std::size_t n = norms.size();
  int sets = 0;
  for (std::size_t i = 0; i < n; i += kSweepStride) {
    const std::size_t j = (i + 6) % n;
    const Constants c{norm(norms[i], i % 2 == 1, i % 4 < 2 ? 0.0 : 1e-8), norm(norms[j], i % 3 == 0, i % 4 == 1 ? 0.0 : 1e-5)};
    const StreamDtype stream = i % 2 ? StreamDtype::bf16 : StreamDtype::f32;
    CAPTURE(constants_to_json(c).dump());
    const suite::Suite edge = suite::make_edge_suite(c, 1, 1, stream);
    const suite::Vacuity v = suite::check_vacuity(c, edge.inputs, 2);
    CHECK(v.uncaught == std::vector<std::string>{});
    CHECK(order_rows_missed(c, edge, Mutant::warp_order, "warp butterfly") == std::vector<std::string>{});
    CHECK(order_rows_missed(c, edge, Mutant::cross_warp_order, "warp totals") == std::vector<std::string>{});
    CHECK(order_rows_missed(c, edge, Mutant::fragment_order, "fragments") == std::vector<std::string>{});
    const bool gain_applies = rounds_gain(norms[i]) || rounds_gain(norms[j]);
    CHECK(v.not_applicable.count("gain_unrounded") == (gain_applies ? 0u : 1u));
    CHECK(v.not_applicable.count("rank_order") == 1u);  // a branch: one rank
    CHECK(v.not_applicable.size() == (gain_applies ? 1u : 2u));
    CHECK((v.rows_caught.at("gain_unrounded") > 0) == gain_applies);
    ++sets;
  }
  CHECK(sets == static_cast<int>((n + kSweepStride - 1) / kSweepStride));
}

// What broke: with seed 1 (the gate's default) and constants under which no norm rounds a gain (no
// weights, FP32 weights, centre 0), the edge suite's order rows found no BF16 tie to break, and the
// gate called the suite vacuous for warp_order on correct kernels. The order bugs must be caught
// under every such constants set and every seed, with input scale, fma squares and eps 0 varying.
TEST_CASE("gate_vacuous_warp_order_without_rounded_gains: the order bugs are caught for every seed") {
  const std::vector<Constants> sets = {
      Constants{norm({}, false, 1e-8), norm({}, false, 1e-5)},
      Constants{norm({}, true, 0.0), norm({}, true, 0.0)},
      Constants{norm({WeightDtype::fp32, 1.0, true}, false, 1e-8), norm({WeightDtype::fp32, 1.0, false}, false, 1e-5)},
      Constants{norm({WeightDtype::fp32, 0.0, true}, true, 0.0), norm({}, false, 1e-5)},
      Constants{norm({}, true, 1e-8), norm({WeightDtype::fp32, 0.0, true}, true, 0.0)},
      Constants{norm({WeightDtype::bf16, 0.0, true}, false, 0.0), norm({WeightDtype::fp16, 0.0, true}, true, 1e-5)},
  };
  for (const std::uint64_t seed : kOrderSeeds)
    for (std::size_t i = 0; i < sets.size(); i += kOrderSetStride) {
      const Constants& c = sets[i];
      CAPTURE(seed);
      CAPTURE(constants_to_json(c).dump());
      const StreamDtype stream = (i + seed) % 2 ? StreamDtype::bf16 : StreamDtype::f32;
      const suite::Vacuity v = suite::check_vacuity(c, suite::make_edge_suite(c, 1, seed, stream).inputs, 2);
      CHECK(v.uncaught == std::vector<std::string>{});
      CHECK(v.rows_caught.at("warp_order") > 0);
      CHECK(v.rows_caught.at("cross_warp_order") > 0);
      CHECK(v.rows_caught.at("fragment_order") > 0);
    }
}

TEST_CASE("not_applicable: gain_unrounded when no norm rounds a gain, rank_order below 3 ranks") {
  Constants bf16_centre_1{norm({WeightDtype::bf16, 1.0, false}, false, 1e-5), norm({}, false, 0.0)};
  Constants fp16_centre_0{norm({WeightDtype::fp16, 0.0, true}, true, 0.0), norm({WeightDtype::fp32, 1.0, false}, false, 0.0)};
  for (const Mutant m : kAllMutants) {
    CAPTURE(mutant_name(m));
    for (int ranks = 1; ranks <= 8; ++ranks) {
      CAPTURE(ranks);
      const bool few_ranks = m == Mutant::rank_order && ranks < 3;
      CHECK(suite::not_applicable(m, bf16_centre_1, ranks).has_value() == few_ranks);
      CHECK(suite::not_applicable(m, fp16_centre_0, ranks).has_value() == (few_ranks || m == Mutant::gain_unrounded));
    }
  }
  CHECK(suite::not_applicable(Mutant::rank_order, bf16_centre_1, 2).value_or("applicable") ==
        "R = 2 rank partials: the all-reduce sums fewer than 3, which add_rn, being commutative, adds alike in any order");
}

// The self-test's all-reduce runs (suite::as_rank_partials): in rank order the partials sum to the
// branch bit for bit (a -0 to +0); last rank first they lose it, so rank_order changes the rows.
TEST_CASE("rank_order_caught_on_rank_partials: as_rank_partials keeps the branch, and rank_order loses it") {
  const Constants c{norm({WeightDtype::bf16, 1.0, true}, false, 1e-8), norm({WeightDtype::bf16, 1.0, false}, false, 1e-5)};
  const suite::Suite edge = suite::make_edge_suite(c, 1, 1, StreamDtype::f32);
  const safetensors::File partials = suite::as_rank_partials(edge.inputs);
  const safetensors::Tensor& p = partials.tensors.at("partials");
  CHECK(p.shape == std::vector<std::int64_t>{suite::kRankPartials, edge.inputs.tensors.at("branch").shape[0], kH});
  CHECK(partials.tensors.count("branch") == 0);
  const BoundTensors bound = bind_inputs(partials, c, "partials");
  CHECK(suite::ranks_of(bound.inputs) == 3);
  ref::Results r(bound.m, ref::Results::Wanted::everything);
  ref::Boundary(c, bound.operands).run(bound.inputs, r.outputs(), 2);
  const auto* branch = edge.inputs.tensors.at("branch").data<std::uint16_t>();
  // The branch's bits, but for -0 (+0 now) and a NaN (the canonical NaN: add_rn makes it).
  const auto summed = [](std::uint16_t b) -> std::uint16_t {
    if (b == 0x8000u) return 0x0000u;
    return (b & 0x7F80u) == 0x7F80u && (b & 0x007Fu) != 0 ? 0x7FFFu : b;
  };
  for (std::size_t i = 0; i < r.branch.size(); ++i)
    if (r.branch[i] != summed(branch[i])) {
      FAIL_CHECK("element " << i << ": all-reduced " << r.branch[i] << ", the branch " << branch[i]);
      break;
    }
  const suite::Vacuity v = suite::check_vacuity(c, partials, 2);
  CHECK(v.uncaught == std::vector<std::string>{});
  CHECK(v.not_applicable.empty());
  MESSAGE("rank_order changes " << v.rows_caught.at("rank_order") << " of " << bound.m << " rows");
  CHECK(v.rows_caught.at("rank_order") > bound.m / 2);
}

TEST_CASE("gate_fails_correct_kernels_without_weights: not applicable in summary, report and JUnit; exit 77") {
  const std::vector<Constants> sets = {Constants{norm({}, false, 1e-8), norm({}, true, 0.0)},
                                       Constants{norm({WeightDtype::fp32, 1.0, true}, false, 1e-8),
                                                 norm({WeightDtype::fp32, 1.0, false}, false, 1e-5)}};
  for (std::size_t k = 0; k < kGateRuns; ++k) {
    const Constants& c = sets[k];
    CAPTURE(constants_to_json(c).dump());
    test::TempDir dir;
    fs::create_directories(dir.path / "no-fixtures");
    cli::GateOptions o;
    o.constants = write_constants(dir.path, c);
    o.seed = 1;  // the default
    o.rows = 0;
    o.threads = 2;
    o.fixtures = dir.path / "no-fixtures";
    o.quiet = true;
    o.report = dir.path / "report.json";
    o.junit = dir.path / "junit.xml";
    int code = -1;
    const json r = cli::run_gate(o, &code);
    CHECK(code == cli::kNoDevice);  // every CPU part passed
    CHECK(r["result"] == "equal");
    CHECK(test::schema_errors(kSchema, r) == std::vector<std::string>{});
    const json& v = r["gate"]["vacuity"];
    CHECK(v["uncaught"] == json::array());
    REQUIRE(v["not_applicable"].size() == 2);  // and rank_order: the suites' branch is one rank
    CHECK(v["not_applicable"]["rank_order"].get<std::string>().find("R = 1 rank partial") == 0);
    const std::string why = v["not_applicable"]["gain_unrounded"].get<std::string>();
    CHECK(why.find("no norm rounds its gain") == 0);
    CHECK(v["rows_caught"]["gain_unrounded"] == 0);
    const std::string summary = cli::format_gate(r);
    CHECK(summary.find("not applicable: gain_unrounded (" + why + ")") != std::string::npos);
    CHECK(summary.find("every one of " + std::to_string(mutants::kEmulatorTwins.size() - 2) +
                       " applicable emulator mutants is caught") != std::string::npos);
    CHECK(summary.find("VACUOUS") == std::string::npos);
    const std::string xml = read_text(*o.junit);
    CHECK(xml.find("<testcase classname=\"gate.vacuity\" name=\"gain_unrounded\">\n      <skipped message=\"not "
                   "applicable: " + why + "\"/>") != std::string::npos);
    CHECK(xml.find("<failure ") == std::string::npos);
  }
}

TEST_CASE("self_test_fails_correct_kernels_without_weights: gain_unrounded not applicable, no survivor") {
  test::TempDir dir;
  fs::create_directories(dir.path / "no-fixtures");
  cli::SelfTestOptions o;
  o.seed = 1;  // the default
  o.constants = write_constants(dir.path, Constants{norm({}, false, 1e-8), norm({WeightDtype::bf16, 0.0, false}, false, 1e-5)});
  o.fixtures = dir.path / "no-fixtures";
  o.threads = 2;
  int code = -1;
  const json r = cli::run_self_test(o, &code);
  CHECK(code == cli::kNoDevice);
  CHECK(r["survivors"] == json::array());
  for (const json& m : r["mutants"]) {
    CAPTURE(m.dump());
    // rank_order: no fixture and no GPU here, and the edge suites' branch is one rank.
    const bool gain = m["mutant"] == "gain_unrounded" || m["mutant"] == "rank_order";
    CHECK(m["not_applicable"].is_string() == gain);
    if (gain) CHECK(m["edge_rows_caught"] == 0);
    else if (m["emulator_twin"].get<bool>()) CHECK(m["edge_rows_caught"].get<std::int64_t>() > 0);
  }
  CHECK(cli::format_self_test(r).find("not applicable: no norm rounds its gain") != std::string::npos);
}
