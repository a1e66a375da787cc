// The gate's building blocks, shared by the gate (cli_gate.cpp), its diagnosis and shrinking
// (cli_gate_diagnose.cpp) and the self-test (cli_gate_self_test.cpp).
#pragma once

#include <boundary/verify/edge_suite.hpp>
#include <boundary/verify/gate.hpp>

#include <chrono>
#include <memory>

namespace boundary::cli::gate_parts {

namespace st = safetensors;

// A suite to build: its name in the report, its constants and a maker (a spec may make several
// suites: the operand-special ones, one per special operand column).
struct SuiteSpec {
  std::string name;
  std::string constants_name;  // "base" or the edge constants' name
  Constants constants;
  StreamDtype stream = StreamDtype::f32;
  std::uint64_t seed = 0;
  bool takes_operands = false;  // --operands replace its gates and weights
  std::int64_t estimated_rows = 0;
  std::function<std::vector<suite::Suite>()> make;
};
std::vector<SuiteSpec> gate_suites(const Constants& base, int level, std::int64_t fuzz_rows, std::uint64_t seed);

// A suite with its inputs bound (bound points into suite.inputs, hence held by pointer).
struct BoundSuite {
  BoundSuite(const Constants& c, suite::Suite made, const std::string& source)
      : constants(c), suite(std::move(made)), bound(bind_inputs(suite.inputs, constants, source)) {}
  report::SuiteInfo info;
  Constants constants;
  suite::Suite suite;
  BoundTensors bound;
};
// Binds a made suite; `operands` (alpha, beta, weights of --operands) replace its own where given.
std::unique_ptr<BoundSuite> bind_suite(const SuiteSpec& spec, suite::Suite made, const st::File* operands,
                                       const std::string& operands_name);
// The .safetensors files of a fixture directory, sorted; none for an empty path (no directory
// given, none found); an InputError naming `option` when the path is not a directory.
std::vector<std::filesystem::path> fixture_files(const std::filesystem::path& dir, const std::string& option);

// Reads --operands: only alpha, beta, post_weight, pre_weight (checked when bound).
st::File read_operands(const std::filesystem::path& path);

// The emulator's outputs on bound rows (with every intermediate when asked).
StageValues emulate(const Constants& constants, const BoundTensors& bound, unsigned threads, bool intermediates,
                    Mutant mutant = Mutant::none);

// The bits of the inputs at (row, column): branch, stream, alpha, beta, weights.
nlohmann::json inputs_at(const Constants& constants, const BoundTensors& bound, std::int64_t row, std::int64_t column);

// The first stage (kStages order) where `actual` differs from `expected` on `row`; nullopt when
// every stage given in both is equal there.
std::optional<report::Divergence> first_divergence(const StageValues& expected, const StageValues& actual,
                                                   std::int64_t row);

// Rows (first dimension) in which two tensors of equal shape differ in any bit.
std::vector<char> differing_rows(const st::Tensor& expected, const st::Tensor& actual);

// Compares one implementation's outputs with the emulator's over a whole suite (new_stream when
// store), counting into the gate section's runs; fills each new listed mismatch's seed and
// inputs. `file`: the outputs file, where the outputs came from one. Returns the index of the
// first listed mismatch it added.
std::size_t compare_run(const BoundSuite& s, const std::string& variant, const std::string& pair,
                        const StageValues& expected, const StageValues& actual, bool store, report::Report& rep,
                        const std::string& file = "");

// The fixtures' metadata spelling of a variant on a stream (variant_metadata of
// fixture_metadata.hpp) and the gate's name for it: "stream=f32,...,gate_variant=<name>".
std::string variant_metadata(const GateVariant& v, StreamDtype stream);

// Progress on stderr: rows done, rows/s, time left; silent for runs under ~2 s.
class Progress {
 public:
  Progress(bool enabled, std::int64_t total) : enabled_(enabled), total_(total) {}
  void adjust_total(std::int64_t delta) { total_ += delta; }
  void add(std::int64_t rows);
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_;
  std::int64_t total_, done_ = 0;
  Clock::time_point start_ = Clock::now(), last_ = start_;
  bool printed_ = false;
};

// For mismatches listed by one (suite, variant) run: reruns their rows through the variant's
// debug build and the emulator with intermediates and sets first_divergent_stage.
void diagnose(const GateGpuHook& hook, const BoundSuite& s, const GateVariant& v, report::MismatchLog& log,
              std::size_t first_listed, unsigned threads);

// The first mismatch of a run reduced to a minimal row (shrink::shrink, predicate: the same tensor
// differs at the same first stage on v) and its fixture: inputs, v's outputs, metadata.
struct Shrunk {
  report::ShrinkReport report;
  st::File fixture;
};
std::optional<Shrunk> shrink_first(const GateGpuHook& hook, const BoundSuite& s, const GateVariant& v,
                                   const report::Mismatch& first, const std::filesystem::path& output,
                                   int max_calls, std::string* note);

}  // namespace boundary::cli::gate_parts
