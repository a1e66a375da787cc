// boundary-verify --constants cfg.json: the gate. Every suite through the emulator, then through
// each GPU implementation asked for, every output bit compared; listed mismatches diagnosed, the
// first one shrunk; the vacuity of the edge suites; the committed fixtures replayed.
#include "cli_gate_parts.hpp"

#include <boundary/verify/atomic_file.hpp>
#include <boundary/verify/cases.hpp>
#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/external.hpp>
#include <boundary/verify/input_limits.hpp>
#include <boundary/verify/junit.hpp>
#include <boundary/verify/replay.hpp>

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <sstream>

#ifndef BOUNDARY_FIXTURES_DIR
#define BOUNDARY_FIXTURES_DIR "fixtures/boundary"
#endif

namespace boundary::cli {

using namespace gate_parts;

std::filesystem::path default_fixtures_dir() { return BOUNDARY_FIXTURES_DIR; }

const char* layout_word(GateVariant::Layout l) {
  switch (l) {
    case GateVariant::Layout::cta: return "cta";
    case GateVariant::Layout::cluster: return "cluster";
    case GateVariant::Layout::pair: return "pair";
    case GateVariant::Layout::quad: return "quad";
    case GateVariant::Layout::cluster_balanced: return "cluster-balanced";
  }
  return "?";
}

std::vector<GateVariant> all_gate_variants() {
  std::vector<GateVariant> all;
  all.push_back({"eager", GateVariant::Kind::eager, std::nullopt, true, false, true});
  for (const GateVariant::Layout layout : kGateLayouts)
    for (const StreamDtype d : {StreamDtype::f32, StreamDtype::bf16})
      for (const bool store : {true, false})
        for (const bool late : {false, true})
          for (const bool pdl : {true, false})
            all.push_back({std::string(d == StreamDtype::f32 ? "f32" : "bf16") + (store ? "-store" : "-nostore") +
                               (late ? "-late" : "-early") + (pdl ? "-pdl" : "-nopdl") +
                               (layout == GateVariant::Layout::cta ? "" : std::string("-") + layout_word(layout)),
                           GateVariant::Kind::fused, d, store, late, pdl, layout});
  all.push_back({"graph", GateVariant::Kind::graph, std::nullopt, true, false, true});
  all.push_back({"all-reduce", GateVariant::Kind::all_reduce, std::nullopt, true, false, true});
  return all;
}

std::vector<GateVariant> named_only_gate_variants() {
  return {{"multi-process", GateVariant::Kind::multi_process, std::nullopt, true, false, true}};
}

std::vector<GateVariant> parse_gate_variants(const std::string& list) {
  std::vector<GateVariant> all = all_gate_variants();
  if (list == "all") return all;
  for (GateVariant& v : named_only_gate_variants()) all.push_back(std::move(v));
  std::vector<GateVariant> chosen;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    const auto it = std::find_if(all.begin(), all.end(), [&](const GateVariant& v) { return v.name == name; });
    if (it == all.end()) {
      std::string known;
      for (const GateVariant& v : all) known += (known.empty() ? "" : ", ") + v.name;
      throw InputError("--variants: unknown variant '" + name + "' (known: all, " + known + ")");
    }
    if (std::none_of(chosen.begin(), chosen.end(), [&](const GateVariant& v) { return v.name == name; }))
      chosen.push_back(*it);
  }
  if (chosen.empty()) throw InputError("--variants: give at least one variant, or all");
  return chosen;
}

void setup_gate(CLI::App& app, GateOptions& o) {
  app.add_option("--constants", o.constants, "The gate: constants JSON of the boundary to check");
  app.add_option("--seed", o.seed, "Seed of the generated suites")->check(io::unsigned_decimal());
  app.add_option("--level", o.level, "Edge suite size: 1 (default) or 2 (larger sweeps)")->check(CLI::IsMember({1, 2}));
  app.add_option("--rows", o.rows, "Fuzzed rows per stream dtype (each variant of that dtype runs them)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 20));
  app.add_option("--operands", o.operands, "Safetensors with alpha, beta and the weights of a real model");
  auto* variants =
      app.add_option("--variants", o.variants, "Comma list of GPU implementations (eager, graph, f32-store-early-pdl, ...) or all");
  app.add_option("--implementation", o.implementation,
                 "An external implementation instead of the GPU ones: a shell command with {inputs} and {output}, run once per case")
      ->excludes(variants);
  app.add_option("--report", o.report, "Write the JSON report (verify/report-schema.json)");
  app.add_option("--junit", o.junit, "Write JUnit XML");
  app.add_option("--shrink-output", o.shrink_output, "Where the shrunk first mismatch goes (default: next to the report)");
  app.add_option("--fixtures", o.fixtures, "Committed fixtures replayed by the gate")->capture_default_str();
  app.add_option("--max-mismatches", o.max_mismatches, "Mismatches listed in the report (all are counted)")
      ->check(io::unsigned_decimal());
  app.add_option("--shrink-calls", o.shrink_calls,
                 "The most reruns of the failing implementation while shrinking (an external command's each cost a process); 0: no shrinking")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_flag("--quiet", o.quiet, "No summary on stdout, no progress");
  app.add_flag("--progress", o.progress, "Progress on stderr even when it is not a terminal");
  app.add_option("--threads", o.threads, "Host threads for the emulator (0: every core)")->check(io::unsigned_decimal());
}

namespace {

const std::string kEmulatorPair = "emulator(1 thread) vs emulator";

std::filesystem::path shrink_path(const GateOptions& o) {
  if (o.shrink_output) return *o.shrink_output;
  if (o.report) return o.report->parent_path() / (o.report->stem().string() + "-shrunk.safetensors");
  return "boundary-gate-shrunk.safetensors";
}

void merge_vacuity(report::VacuityReport& into, const suite::Vacuity& v, bool first) {
  for (const auto& [mutant, rows] : v.rows_caught) into.rows_caught[mutant] += rows;
  into.not_applicable.insert(v.not_applicable.begin(), v.not_applicable.end());  // the same constants
  if (first) {
    into.uncaught = v.uncaught;
    return;
  }
  std::erase_if(into.uncaught, [&](const std::string& m) { return into.rows_caught[m] > 0; });
}

// The committed fixtures through the emulator (replay), folded into the gate's report.
void replay_fixtures(const GateOptions& o, const std::vector<std::filesystem::path>& files, unsigned threads,
                     report::Report& rep, std::vector<std::string>& notes) {
  if (files.empty()) {
    notes.push_back(o.fixtures.empty() ? "no fixture directory: none replayed"
                                       : "no committed fixtures found in " + o.fixtures.string() + ": none replayed");
    return;
  }
  ReplayOptions r;
  r.files = files;
  r.threads = threads;
  r.max_mismatches = o.max_mismatches;
  const ReplayResult replayed = replay(r);
  for (const report::FileReport& f : replayed.report.files) rep.files.push_back(f);
  rep.elements_compared += replayed.report.elements_compared;
  for (report::Mismatch m : replayed.report.mismatches.kept()) {
    m.suite = "fixtures";
    rep.mismatches.add(std::move(m));
  }
  rep.mismatches.add_unlisted(replayed.report.mismatches.total() -
                              static_cast<std::int64_t>(replayed.report.mismatches.kept().size()));
  notes.push_back("committed fixtures: " + std::to_string(files.size()) + " files replayed through the emulator");
}

std::string gpu_status(const GateOptions& o, report::Environment& env) {
  if (!o.gpu_hook.available()) return "not run: this build has no GPU support";
  env.gpu = o.gpu_hook.probe();
  return env.gpu ? "run" : "not run: no CUDA device";
}

// One implementation on one suite: compared with the emulator's outputs; its listed mismatches
// diagnosed, the first of the run shrunk unless one was already.
void run_variant(const GateGpuHook& hook, const GateOptions& o, const BoundSuite& s, const GateVariant& v,
                 bool external, const StageValues& expected, GateResult& result, Progress& progress, unsigned threads) {
  report::Report& rep = result.report;
  report::GateReport& g = *rep.gate;
  const std::string pair = (external ? "" : "gpu:") + v.name + " vs emulator";
  const std::size_t first = compare_run(s, v.name, pair, expected, hook.run(s.constants, s.bound, v), v.store, rep);
  progress.add(s.bound.m);
  if (first == rep.mismatches.kept().size()) return;
  diagnose(hook, s, v, rep.mismatches, first, threads);
  if (g.shrink || !g.shrink_note.empty()) return;
  if (o.shrink_calls == 0) {
    g.shrink_note = "not shrunk: --shrink-calls 0";
    return;
  }
  auto shrunk = shrink_first(hook, s, v, rep.mismatches.kept()[first], shrink_path(o), o.shrink_calls, &g.shrink_note);
  if (!shrunk) return;
  g.shrink = shrunk->report;
  result.shrunk_fixture = std::move(shrunk->fixture);
  if (external) result.shrunk_fixture->metadata["implementation"] = *o.implementation;
}

}  // namespace

GateResult gate(const GateOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.constants.empty()) throw InputError("give --constants cfg.json (the gate) or a subcommand");
  if (o.level != 1 && o.level != 2) throw InputError("--level: 1 or 2, not " + std::to_string(o.level));
  if (o.rows < 0) throw InputError("--rows: a count >= 0");
  const std::vector<std::filesystem::path> fixtures = fixture_files(o.fixtures, "--fixtures");
  std::vector<std::filesystem::path> inputs = fixtures;
  inputs.push_back(o.constants);
  if (o.operands) inputs.push_back(*o.operands);
  std::vector<io::OutputPath> outputs{{"--shrink-output", shrink_path(o)}};
  if (o.report) outputs.push_back({"--report", *o.report});
  if (o.junit) outputs.push_back({"--junit", *o.junit});
  io::check_outputs(outputs, inputs);
  const Constants base = read_constants(o.constants);
  // --implementation: the external command stands where the GPU implementations stand.
  const bool external = o.implementation.has_value();
  const GateGpuHook hook = external ? make_external_hook(*o.implementation) : o.gpu_hook;
  const std::vector<GateVariant> variants = external ? std::vector{external_variant()} : parse_gate_variants(o.variants);
  const std::optional<st::File> operands = o.operands ? std::optional(read_operands(*o.operands)) : std::nullopt;
  const unsigned threads = host_threads(o.threads);

  GateResult result{report::start_report("gate", o.max_mismatches), {}, std::nullopt};
  report::Report& rep = result.report;
  rep.gpu = external ? "not requested" : gpu_status(o, rep.environment);
  const bool gpu = external || rep.gpu == "run";  // the implementations run
  rep.gate.emplace();
  report::GateReport& g = *rep.gate;
  g.constants_file = o.constants.string();
  g.constants = constants_to_json(base);
  g.seed = o.seed;
  g.level = o.level;
  g.fuzz_rows = o.rows;
  for (const GateVariant& v : variants) g.variants.push_back(v.name);
  g.implementation = o.implementation;

  const std::vector<SuiteSpec> specs = gate_suites(base, o.level, o.rows, o.seed);
  auto runs_on = [&](StreamDtype d) {
    return gpu ? std::count_if(variants.begin(), variants.end(), [&](const GateVariant& v) { return v.runs_on(d); }) : 0;
  };
  std::int64_t estimate = 0;
  for (const SuiteSpec& spec : specs) estimate += spec.estimated_rows * (1 + runs_on(spec.stream));
  Progress progress(!o.quiet && (o.progress || ::isatty(STDERR_FILENO)), estimate);

  // Making a suite is serial work; every suite is made on its own thread from the start, so that
  // making overlaps with the emulator and the GPU runs of the suites before it.
  std::vector<std::future<std::vector<suite::Suite>>> making;
  for (const SuiteSpec& spec : specs) making.push_back(std::async(std::launch::async, spec.make));

  report::VacuityReport vacuity;
  bool first_vacuity = true;
  for (std::size_t k = 0; k < specs.size(); ++k) {
    const SuiteSpec& spec = specs[k];
    std::vector<suite::Suite> made = making[k].get();
    for (suite::Suite& one : made) {
      const bool several = made.size() > 1;
      const std::string case_id =
          cases::case_name(spec.name, several ? std::optional(static_cast<std::size_t>(&one - made.data())) : std::nullopt);
      SuiteSpec named = spec;
      if (several) named.name += "/" + one.name;
      const auto s = bind_suite(named, std::move(one), operands ? &*operands : nullptr,
                                o.operands ? o.operands->string() : "");
      g.suites.push_back(s->info);
      const std::int64_t m = s->bound.m;
      progress.adjust_total((m - spec.estimated_rows / static_cast<std::int64_t>(made.size())) *
                            (1 + runs_on(spec.stream)));
      const StageValues expected = emulate(s->constants, s->bound, threads, false);
      g.emulator_rows += m;
      progress.add(m);
      // The emulator's own check (contract section 8: a row's bits do not depend on its batch):
      // one host thread, other chunks, the same bits. Edge suites only: they are small.
      if (spec.name.rfind("edge/", 0) == 0)
        compare_run(*s, "emulator", kEmulatorPair, expected, emulate(s->constants, s->bound, 1, false), true, rep);
      if (spec.name == "edge/f32" || spec.name == "edge/bf16") {
        merge_vacuity(vacuity, suite::check_vacuity(s->constants, s->suite.inputs, threads), first_vacuity);
        first_vacuity = false;
      }
      if (!gpu) continue;
      for (const GateVariant& v : variants) {
        if (!v.runs_on(spec.stream)) continue;
        try {
          run_variant(hook, o, *s, v, external, expected, result, progress, threads);
        } catch (const InputError& e) {
          // Named as export names its case file, so that the case can be rerun alone.
          throw InputError("case " + case_id + " (suite " + s->info.name + "): " + e.what());
        }
      }
    }
  }
  progress.finish();
  g.vacuity = vacuity;
  if (!vacuity.uncaught.empty()) {
    std::string names;
    for (const std::string& n : vacuity.uncaught) names += (names.empty() ? "" : ", ") + n;
    result.notes.push_back("VACUOUS: no edge row catches " + names);
  }
  replay_fixtures(o, fixtures, threads, rep, result.notes);
  if (external)
    result.notes.push_back("implementation `" + *o.implementation + "`: run once per suite, no GPU checks");
  if (!gpu)
    result.notes.push_back("the GPU checks did not run (" + rep.gpu.substr(std::string("not run: ").size()) +
                           "): only the CPU parts were checked");
  if (rep.mismatches.total() > 0 && !g.shrink && g.shrink_note.empty())
    g.shrink_note = "no implementation mismatch to shrink (the mismatches are the emulator's or the fixtures')";
  g.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rep.exit_code = rep.mismatches.total() > 0 || !vacuity.uncaught.empty() ? kMismatch : gpu ? kSuccess : kNoDevice;
  return result;
}

nlohmann::json run_gate(const GateOptions& o, int* exit_code) {
  GateResult result = gate(o);
  nlohmann::json json = report::to_json(result.report);
  json["notes"] = result.notes;
  if (result.shrunk_fixture && result.report.gate->shrink)
    st::write_file(result.report.gate->shrink->fixture, *result.shrunk_fixture);
  if (o.report) io::write_file_atomically(*o.report, json.dump(2) + "\n");
  if (o.junit) io::write_file_atomically(*o.junit, junit::gate_xml(json));
  if (exit_code) *exit_code = result.report.exit_code;
  return json;
}

}  // namespace boundary::cli
