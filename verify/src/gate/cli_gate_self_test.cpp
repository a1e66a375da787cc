// boundary-verify self-test: the gate's suites against every planted bug. A mutant no row catches
// is a defect of the suites. GPU: the kernel mutants (boundary/gpu/diagnostics.hpp) of the
// DraftBoundary and the all-reduce boundary on the gate's suites; CPU: the emulator twins on the
// committed fixtures and on the edge suites.
#include "cli_gate_parts.hpp"

#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/fixture_metadata.hpp>
#include <boundary/verify/input_limits.hpp>
#include <boundary/mutant_emulators.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <set>
#include <sstream>

namespace boundary::cli {

using namespace gate_parts;

CLI::App* setup_self_test(CLI::App& app, SelfTestOptions& o) {
  CLI::App* sub = app.add_subcommand("self-test", "Run the gate's suites against every planted bug; each must be caught");
  sub->add_option("--constants", o.constants, "Constants JSON")->required();
  sub->add_option("--seed", o.seed, "Seed of the generated suites")->check(io::unsigned_decimal());
  sub->add_option("--level", o.level, "Edge suite size: 1 or 2")->check(CLI::IsMember({1, 2}));
  sub->add_option("--rows", o.rows, "Fuzzed rows per stream dtype")->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 20));
  sub->add_option("--fixtures", o.fixtures, "Committed fixtures the emulator twins must fail")->capture_default_str();
  sub->add_option("--threads", o.threads, "Host threads (0: every core)")->check(io::unsigned_decimal());
  return sub;
}

namespace {

// Rows in which the mutant's out or new_stream (when both have it) differ from the expected.
std::int64_t rows_caught(const StageValues& expected, const StageValues& actual) {
  std::vector<char> caught = differing_rows(expected.at("out"), actual.at("out"));
  if (expected.count("new_stream") && actual.count("new_stream")) {
    const std::vector<char> ns = differing_rows(expected.at("new_stream"), actual.at("new_stream"));
    for (std::size_t r = 0; r < caught.size(); ++r) caught[r] |= ns[r];
  }
  return std::count(caught.begin(), caught.end(), 1);
}

// Rows caught per mutant, and the mutants that can change an output in at least one fixture or
// suite run (suite::not_applicable: under its constants, on its rank count): only those can
// survive. why_not keeps a reason from a run it did not apply to.
struct Caught {
  std::map<Mutant, std::int64_t> rows;
  std::set<Mutant> applicable;
  std::map<Mutant, std::string> why_not;

  // why: suite::not_applicable of the run, nullopt when m applies to it.
  void add(Mutant m, const std::optional<std::string>& why, std::int64_t caught_rows) {
    rows[m] += caught_rows;
    if (why) why_not.emplace(m, *why);
    else applicable.insert(m);
  }
  bool survives(Mutant m) const { return applicable.count(m) && rows.at(m) == 0; }
  // Why m applied to none of the runs; nullopt when it applied to one, or none ran.
  std::optional<std::string> not_applicable(Mutant m) const {
    if (applicable.count(m) || !why_not.count(m)) return std::nullopt;
    return why_not.at(m);
  }
};

// The emulator twins against the committed fixtures' recorded (hardware) outputs.
Caught twins_on_fixtures(const std::filesystem::path& dir, unsigned threads, int* files) {
  Caught caught;
  for (const std::filesystem::path& path : fixture_files(dir, "--fixtures")) {
    ++*files;
    const std::string name = path.string();
    const st::File f = st::read_file(path);
    const Constants constants = fixture_constants(f, name);
    const BoundTensors bound = bind_inputs(f, constants, name);
    StageValues recorded;
    recorded["out"] = st::require(f, name, "out", {st::Dtype::BF16}, {bound.m, kH});
    if (const st::Tensor* new_stream = recorded_new_stream(f, name, bound.m)) recorded["new_stream"] = *new_stream;
    for (const Mutant m : mutants::kEmulatorTwins)
      caught.add(m, suite::not_applicable(m, constants, suite::ranks_of(bound.inputs)),
                 rows_caught(recorded, emulate(constants, bound, threads, false, m)));
  }
  return caught;
}

// One GPU implementation a mutant runs in: a gate variant on bound rows.
struct MutantRun {
  GateVariant variant;
  const BoundTensors* bound;
  const StageValues* expected;
};

// The kernel mutants on the gate's suites: the DraftBoundary in every layout, and the all-reduce
// boundary on the same rows as rank partials (suite::as_rank_partials) in each of its layouts. The rows counted
// are the fewest of the runs the mutant applies to: a planted bug counts as caught only when every
// one catches it. pdl_wait_missing needs a slow producer in front, which only the DraftBoundary's
// runs have (gpu::run_after_producer): the all-reduce's runs leave it out.
Caught kernel_mutants_on_suites(const SelfTestOptions& o, const Constants& base, unsigned threads) {
  Caught caught;
  for (const SuiteSpec& spec : gate_suites(base, o.level, o.rows, o.seed)) {
    for (suite::Suite& made : spec.make()) {
      const auto s = bind_suite(spec, std::move(made), nullptr, "");
      const st::File partials_file = suite::as_rank_partials(s->suite.inputs);
      const BoundTensors partials = bind_inputs(partials_file, s->constants, spec.name + " (rank partials)");
      const StageValues expected = emulate(s->constants, s->bound, threads, false);
      const StageValues expected_partials = emulate(s->constants, partials, threads, false);
      for (const Mutant m : kAllMutants) {
        std::vector<MutantRun> runs;
        const bool late = m == Mutant::late_gates_wrong_columns;
        for (const GateVariant::Layout layout : kGateLayouts)
          runs.push_back({{"mutant", GateVariant::Kind::fused, spec.stream, true, late, true, layout}, &s->bound, &expected});
        if (m != Mutant::pdl_wait_missing)
          for (const GateVariant::Layout layout : kGateLayouts)
            if (layout != GateVariant::Layout::cta)  // the all-reduce boundary has none
              runs.push_back({{"mutant all-reduce", GateVariant::Kind::all_reduce, spec.stream, true, late, true, layout},
                              &partials, &expected_partials});
        std::int64_t fewest = -1;
        std::optional<std::string> why;
        for (const MutantRun& r : runs) {
          if (const auto no = suite::not_applicable(m, s->constants, suite::ranks_of(r.bound->inputs))) {
            why = no;
            continue;
          }
          const std::int64_t n = rows_caught(*r.expected, o.gpu_hook.run_mutant(m, s->constants, *r.bound, r.variant));
          fewest = fewest < 0 ? n : std::min(fewest, n);
        }
        caught.add(m, fewest < 0 ? why : std::nullopt, std::max<std::int64_t>(fewest, 0));
      }
    }
  }
  return caught;
}

nlohmann::json count_or_null(const Caught& caught, Mutant m) {
  const auto it = caught.rows.find(m);
  return it == caught.rows.end() ? nlohmann::json(nullptr) : nlohmann::json(it->second);
}

}  // namespace

nlohmann::json run_self_test(const SelfTestOptions& o, int* exit_code) {
  const Constants base = read_constants(o.constants);
  if (o.level != 1 && o.level != 2) throw InputError("--level: 1 or 2, not " + std::to_string(o.level));
  const unsigned threads = host_threads(o.threads);

  int fixture_files = 0;
  const Caught on_fixtures = twins_on_fixtures(o.fixtures, threads, &fixture_files);
  Caught on_edge;
  for (const StreamDtype d : {StreamDtype::f32, StreamDtype::bf16}) {
    const suite::Vacuity v = suite::check_vacuity(base, suite::make_edge_suite(base, o.level, o.seed, d).inputs, threads);
    for (const Mutant m : mutants::kEmulatorTwins) {
      const std::string name(mutant_name(m));
      const auto why = v.not_applicable.find(name);
      on_edge.add(m, why == v.not_applicable.end() ? std::nullopt : std::optional(why->second), v.rows_caught.at(name));
    }
  }
  std::string gpu = "not run: this build has no GPU support";
  Caught on_gpu;
  if (o.gpu_hook.available()) {
    gpu = o.gpu_hook.probe() ? "run" : "not run: no CUDA device";
    if (gpu == "run") on_gpu = kernel_mutants_on_suites(o, base, threads);
  }

  nlohmann::json rows = nlohmann::json::array(), survivors = nlohmann::json::array();
  for (const Mutant m : kAllMutants) {
    const bool twin = has_emulator_twin(m);
    // Survives: a half that ran caught it in no row although it applies to that half's constants
    // (fixtures: none recorded means no claim).
    const bool survives = (gpu == "run" && on_gpu.survives(m)) ||
                          (twin && (on_fixtures.survives(m) || on_edge.survives(m)));
    if (survives) survivors.push_back(std::string(mutant_name(m)));
    // Not applicable: to no run of a half that ran (the fixtures under their own constants and rank
    // counts, the edge suites with a branch, the GPU's runs).
    std::optional<std::string> why = on_edge.not_applicable(m);
    if (!twin) why = suite::not_applicable(m, base, 1);
    for (const Caught* half : std::initializer_list<const Caught*>{&on_fixtures, &on_gpu})
      if (half->applicable.count(m)) why = std::nullopt;
    // The halves it applied to no run of (their row counts are 0 by necessity, not a miss).
    nlohmann::json not_applicable_to = nlohmann::json::array();
    for (const auto& [half, caught] : std::initializer_list<std::pair<const char*, const Caught*>>{
             {"gpu", &on_gpu}, {"fixtures", &on_fixtures}, {"edge", &on_edge}})
      if (caught->not_applicable(m)) not_applicable_to.push_back(half);
    rows.push_back({{"mutant", mutant_name(m)},
                    {"not_applicable", why ? nlohmann::json(*why) : nlohmann::json(nullptr)},
                    {"not_applicable_to", not_applicable_to},
                    {"gpu_rows_caught", count_or_null(on_gpu, m)},
                    {"emulator_twin", twin},
                    {"fixture_rows_caught", twin ? count_or_null(on_fixtures, m) : nlohmann::json(nullptr)},
                    {"edge_rows_caught", twin ? count_or_null(on_edge, m) : nlohmann::json(nullptr)},
                    {"caught", !survives}});
  }
  const int rc = !survivors.empty() ? kMismatch : gpu == "run" ? kSuccess : kNoDevice;
  if (exit_code) *exit_code = rc;
  return {{"command", "self-test"}, {"constants_file", o.constants.string()}, {"seed", o.seed}, {"level", o.level},
          {"fuzz_rows", o.rows}, {"fixtures", o.fixtures.string()}, {"fixture_files", fixture_files}, {"gpu", gpu},
          {"mutants", rows}, {"survivors", survivors}, {"exit_code", rc}};
}

std::string format_self_test(const nlohmann::json& r) {
  std::ostringstream o;
  o << "self-test: " << r["constants_file"].get<std::string>() << ", " << r["fixture_files"]
    << " committed fixtures, GPU " << r["gpu"].get<std::string>() << "\n";
  o << "  mutant                    GPU rows   fixture rows (emulator twin)   edge rows (twin)\n";
  for (const auto& m : r["mutants"]) {
    // "n/a": the half ran, but the mutant applied to none of its runs.
    auto cell = [&](const char* half, const char* key) {
      const nlohmann::json& to = m["not_applicable_to"];
      if (std::find(to.begin(), to.end(), half) != to.end()) return std::string("n/a");
      return m[key].is_null() ? std::string("-") : m[key].dump();
    };
    const std::string name = m["mutant"].get<std::string>();
    o << "  " << name << std::string(name.size() < 26 ? 26 - name.size() : 1, ' ') << cell("gpu", "gpu_rows_caught")
      << std::string(11, ' ') << cell("fixtures", "fixture_rows_caught") << std::string(29, ' ')
      << cell("edge", "edge_rows_caught") << (m["caught"].get<bool>() ? "" : "   SURVIVES");
    if (m["not_applicable"].is_string()) o << "   not applicable: " << m["not_applicable"].get<std::string>();
    o << "\n";
  }
  const int rc = r["exit_code"].get<int>();
  o << "  result: "
    << (rc == 1    ? "FAIL: " + r["survivors"].dump() + " survive (a defect of the suites)"
        : rc == 77 ? std::string("every applicable emulator twin caught; the GPU half DID NOT RUN (") + r["gpu"].get<std::string>() + ")"
                   : std::string("every mutant caught"))
    << " (exit " << rc << ")\n";
  return o.str();
}

}  // namespace boundary::cli
