// The verification report as data: what was compared, how many elements differed and where,
// written as versioned JSON (schema: verify/report-schema.json). replay and the gate build one;
// the gate adds its `gate` section and, per mismatch, the seed, the inputs at that column and the
// first divergent stage.
//
// Conventions (the schema repeats them):
// - Bits are hexadecimal strings as wide as the dtype ("0x3F80" BF16, "0x3F800000" F32), so that
//   a reader sees the pattern the contract speaks of, NaN payloads and signed zeros included.
// - In a pair "A vs B", A produced actual_bits and B expected_bits: the fixture holds the recorded
//   (expected) outputs and the replayed implementation must reproduce them.
#pragma once

#include <boundary/verify/safetensors.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace boundary::report {

inline constexpr std::string_view kSchemaVersion = "boundary-verify/report/3";

// ---- Bit-pattern helpers, one per dtype.
// Distance in the IEEE total order of non-NaN patterns: adjacent patterns are 1 apart, -0 and +0
// included (so that two different non-NaN patterns are never 0 apart), the largest finite and
// infinity too. -1 when either pattern is a NaN, which has no place in that order.
std::int64_t ulp_distance_f32(std::uint32_t a, std::uint32_t b);
std::int64_t ulp_distance_bf16(std::uint16_t a, std::uint16_t b);
// "+zero", "-zero", "+subnormal", "-normal", "+inf", "-nan", ...: the sign bit, then the class.
std::string value_class_f32(std::uint32_t bits);
std::string value_class_bf16(std::uint16_t bits);

// Where an implementation first left the emulator's path, found by rerunning the row through a
// debug build that writes its intermediates. Stages in contract order: post_row_sum, r1, y_b, res,
// z, pre_row_sum, r2, out.
struct Divergence {
  std::string stage;
  std::optional<std::int64_t> column;  // per-element stages: the first column that differs
  std::uint32_t expected_bits = 0;     // the emulator's
  std::uint32_t actual_bits = 0;
  std::string dtype;
};

// One element whose bits differ.
struct Mismatch {
  std::string suite;    // the gate's suite; empty for replay
  std::string pair;     // "emulator vs fixture": actual's producer vs expected's
  std::string variant;  // the kernel variant, where one applies
  std::string file;
  std::string tensor;
  std::int64_t row = 0;
  std::int64_t column = 0;
  std::uint32_t expected_bits = 0;
  std::uint32_t actual_bits = 0;
  std::string dtype;    // "BF16", "F32": the width of the bits
  std::int64_t ulp_distance = 0;  // in dtype, see ulp_distance_f32; -1 with a NaN
  std::string expected_class;
  std::string actual_class;
  // The gate's additions (absent for replay):
  std::optional<std::uint64_t> seed;               // the suite's seed
  nlohmann::json inputs = nullptr;                 // the row's inputs at that column, as bits
  std::optional<Divergence> first_divergent_stage;  // null: not diagnosed (or not reproducible)
};

// Counts every mismatch, keeps the first `cap` (a broken kernel differs everywhere, and a report
// of 10^9 entries helps nobody).
class MismatchLog {
 public:
  explicit MismatchLog(std::size_t cap) : cap_(cap) {}
  void add(Mismatch m);
  void add_unlisted(std::int64_t n) { total_ += n; }  // counted elsewhere beyond that log's cap
  std::int64_t total() const { return total_; }
  std::size_t cap() const { return cap_; }
  const std::vector<Mismatch>& kept() const { return kept_; }
  std::vector<Mismatch>& kept_mutable() { return kept_; }  // to add what is known later (a stage)
  bool truncated() const { return static_cast<std::size_t>(total_) > kept_.size(); }

 private:
  std::size_t cap_;
  std::int64_t total_ = 0;
  std::vector<Mismatch> kept_;
};

// Where a comparison happens, copied into each of its Mismatches.
struct CompareContext {
  std::string suite, pair, variant, file, tensor;
};

// Elements compared and mismatches found in one tensor by one check.
struct TensorCount {
  std::string check;   // "emulator", "gpu:fused", "gpu:eager"
  std::string tensor;
  std::int64_t compared = 0;
  std::int64_t mismatches = 0;
};

// Compares two tensors of equal dtype and shape element by element, bit for bit; rows are the
// first dimension (a 1-D tensor is one row). Throws std::logic_error when dtype or shape differ:
// callers check the files' tensors first and name the file in an InputError.
TensorCount compare_tensors(const safetensors::Tensor& expected, const safetensors::Tensor& actual,
                            const std::string& check, const CompareContext& where, MismatchLog& log);

struct GpuInfo {
  std::string name, compute_capability, driver, cuda;
};

struct Environment {
  std::string host;
  unsigned host_threads = 0;
  std::optional<GpuInfo> gpu;  // the device the GPU checks ran on; none when they did not run
};

// One replayed file.
struct FileReport {
  std::string path;
  std::optional<std::string> kernel, variant;  // from the fixture's metadata, when it says
  std::map<std::string, std::string> provenance;  // the fixture's provenance keys that it has
  std::int64_t rows = 0;
  std::string stream_dtype;  // "F32", "BF16"
  std::vector<std::string> checks;  // in the order run
  std::vector<TensorCount> counts;
};

// ---- The gate's section.
struct SuiteInfo {
  std::string name;       // "edge/f32", "fuzz/bf16", "edge/f32@eps-zero"
  std::string constants;  // "base" or the edge constants' name
  std::string stream_dtype;
  std::int64_t rows = 0;
  std::uint64_t seed = 0;
};

// One suite through one implementation, one tensor compared with the emulator's.
struct RunCount {
  std::string suite, variant, pair, tensor;
  std::int64_t rows = 0, compared = 0, mismatches = 0;
};

struct VacuityReport {
  std::map<std::string, std::int64_t> rows_caught;  // per emulator mutant, rows of the edge suites
  std::map<std::string, std::string> not_applicable;  // mutant -> why it cannot change an output here
  std::vector<std::string> uncaught;                // applicable, yet no row catches these: vacuous
};

struct ShrinkReport {
  std::string fixture;  // written; `boundary-verify replay` reproduces the mismatch
  std::string suite, variant, pair, tensor;
  std::int64_t row = 0;
  std::optional<std::string> stage;
  int steps = 0, predicate_calls = 0;
  std::int64_t nontrivial_before = 0, nontrivial_after = 0;
};

struct GateReport {
  std::string constants_file;
  nlohmann::json constants;  // as constants_to_json writes them
  std::uint64_t seed = 0;
  int level = 1;
  std::int64_t fuzz_rows = 0;
  std::vector<std::string> variants;  // the GPU implementations asked for
  std::optional<std::string> implementation;  // the external one: --implementation's command, check's outputs
  std::vector<SuiteInfo> suites;
  std::vector<RunCount> runs;
  std::optional<VacuityReport> vacuity;
  std::optional<ShrinkReport> shrink;
  std::string shrink_note;            // why there is no shrink, when there is a mismatch
  std::int64_t emulator_rows = 0;
  double seconds = 0;
};

struct Report {
  std::string command;       // "replay", "gate"
  std::string tool_version;  // kVersion
  std::string created;       // UTC, ISO 8601
  Environment environment;
  std::string gpu = "not requested";  // or "run", or "not run: <why>"
  std::vector<FileReport> files;
  std::int64_t elements_compared = 0;
  MismatchLog mismatches{0};
  std::optional<GateReport> gate;  // the gate's runs; null for replay
  int exit_code = 0;
};

// The host's name and the current UTC time, for a report's environment and `created`.
Environment host_environment();
// A report of `command` begun now: the tool's version, this host, the mismatch cap.
Report start_report(std::string command, std::size_t max_mismatches);
std::string utc_now_iso8601();

// Bits as the report writes them: "0x3F80" (BF16, F16), "0x3F800000" (F32).
std::string hex_bits(std::uint32_t bits, const std::string& dtype);

nlohmann::json to_json(const Mismatch&);
nlohmann::json to_json(const Report&);


}  // namespace boundary::report
