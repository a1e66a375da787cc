#include <boundary/verify/report.hpp>

#include <boundary/types.hpp>
#include <boundary/verify/version.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <thread>

namespace boundary::report {

namespace st = safetensors;

namespace {

// Position in the IEEE total order of the non-NaN patterns of a `width`-bit float: +0 is 0, -0 is
// -1, so that the sign-magnitude encoding becomes one monotonic integer line.
std::int64_t total_order_index(std::uint32_t bits, int width) {
  const std::uint32_t sign = std::uint32_t{1} << (width - 1);
  const std::int64_t magnitude = bits & (sign - 1);
  return (bits & sign) ? -1 - magnitude : magnitude;
}

std::int64_t ulp_distance(std::uint32_t a, std::uint32_t b, int width, bool a_nan, bool b_nan) {
  if (a_nan || b_nan) return -1;
  const std::int64_t d = total_order_index(a, width) - total_order_index(b, width);
  return d < 0 ? -d : d;
}

bool is_nan_f32(std::uint32_t bits) { return (bits & 0x7FFFFFFFu) > 0x7F800000u; }
bool is_nan_bf16(std::uint16_t bits) { return (bits & 0x7FFFu) > 0x7F80u; }

std::string value_class(bool negative, std::uint32_t exponent, std::uint32_t max_exponent,
                        std::uint32_t fraction) {
  const char* name = exponent == max_exponent ? (fraction ? "nan" : "inf")
                     : exponent == 0          ? (fraction ? "subnormal" : "zero")
                                              : "normal";
  return std::string(negative ? "-" : "+") + name;
}

// Bits of element i of a tensor, widened to 32 bits, with its ulp/class helpers.
struct ElementView {
  const std::uint16_t* half = nullptr;
  const std::uint32_t* word = nullptr;

  explicit ElementView(const st::Tensor& t) {
    if (t.dtype == st::Dtype::F32)
      word = t.data<std::uint32_t>();
    else
      half = t.data<std::uint16_t>();
  }
  std::uint32_t bits(std::int64_t i) const { return word ? word[i] : half[i]; }
};

std::int64_t ulp_in(st::Dtype dtype, std::uint32_t a, std::uint32_t b) {
  if (dtype == st::Dtype::F32) return ulp_distance_f32(a, b);
  if (dtype == st::Dtype::BF16)
    return ulp_distance_bf16(static_cast<std::uint16_t>(a), static_cast<std::uint16_t>(b));
  return -1;  // F16 outputs do not exist in this project; no ulp scale is claimed for them
}

std::string class_in(st::Dtype dtype, std::uint32_t bits) {
  if (dtype == st::Dtype::F32) return value_class_f32(bits);
  if (dtype == st::Dtype::BF16) return value_class_bf16(static_cast<std::uint16_t>(bits));
  const auto h = static_cast<std::uint16_t>(bits);
  return value_class((h & 0x8000u) != 0, (h >> 10) & 0x1Fu, 0x1Fu, h & 0x3FFu);
}


}  // namespace

std::string hex_bits(std::uint32_t bits, const std::string& dtype) {
  char text[16];
  std::snprintf(text, sizeof text, dtype == "F32" ? "0x%08X" : "0x%04X", bits);
  return text;
}

std::int64_t ulp_distance_f32(std::uint32_t a, std::uint32_t b) {
  return ulp_distance(a, b, 32, is_nan_f32(a), is_nan_f32(b));
}

std::int64_t ulp_distance_bf16(std::uint16_t a, std::uint16_t b) {
  return ulp_distance(a, b, 16, is_nan_bf16(a), is_nan_bf16(b));
}

std::string value_class_f32(std::uint32_t bits) {
  return value_class((bits >> 31) != 0, (bits >> 23) & 0xFFu, 0xFFu, bits & 0x7FFFFFu);
}

std::string value_class_bf16(std::uint16_t bits) {
  return value_class((bits >> 15) != 0, (bits >> 7) & 0xFFu, 0xFFu, bits & 0x7Fu);
}

void MismatchLog::add(Mismatch m) {
  ++total_;
  if (kept_.size() < cap_) kept_.push_back(std::move(m));
}

TensorCount compare_tensors(const st::Tensor& expected, const st::Tensor& actual, const std::string& check,
                            const CompareContext& where, MismatchLog& log) {
  if (expected.dtype != actual.dtype || expected.shape != actual.shape)
    throw std::logic_error("compare_tensors: " + where.file + " '" + where.tensor + "': dtype or shape differ");
  const std::int64_t n = expected.numel();
  const std::int64_t columns =
      expected.shape.size() >= 2 ? n / std::max<std::int64_t>(expected.shape[0], 1) : n;
  TensorCount count{check, where.tensor, n, 0};
  if (expected.bytes == actual.bytes) return count;  // the usual case, at memcmp speed

  const ElementView e(expected), a(actual);
  const std::string dtype(st::dtype_name(expected.dtype));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t eb = e.bits(i), ab = a.bits(i);
    if (eb == ab) continue;
    ++count.mismatches;
    log.add(Mismatch{where.suite, where.pair, where.variant, where.file, where.tensor, i / columns, i % columns,
                     eb, ab, dtype, ulp_in(expected.dtype, eb, ab), class_in(expected.dtype, eb),
                     class_in(expected.dtype, ab), std::nullopt, nullptr, std::nullopt});
  }
  return count;
}

Environment host_environment() {
  Environment env;
  char name[256] = {};
  env.host = ::gethostname(name, sizeof name - 1) == 0 ? name : "unknown";
  env.host_threads = std::thread::hardware_concurrency();
  return env;
}

Report start_report(std::string command, std::size_t max_mismatches) {
  Report r;
  r.command = std::move(command);
  r.tool_version = kVersion;
  r.created = utc_now_iso8601();
  r.environment = host_environment();
  r.mismatches = MismatchLog(max_mismatches);
  return r;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

namespace {

nlohmann::json to_json(const std::optional<Divergence>& d) {
  if (!d) return nullptr;
  return {{"stage", d->stage},
          {"column", d->column ? nlohmann::json(*d->column) : nlohmann::json(nullptr)},
          {"dtype", d->dtype},
          {"expected_bits", hex_bits(d->expected_bits, d->dtype)},
          {"actual_bits", hex_bits(d->actual_bits, d->dtype)}};
}

}  // namespace

nlohmann::json to_json(const Mismatch& m) {
  return {
      {"suite", m.suite},
      {"pair", m.pair},
      {"variant", m.variant},
      {"file", m.file},
      {"tensor", m.tensor},
      {"row", m.row},
      {"column", m.column},
      {"dtype", m.dtype},
      {"expected_bits", hex_bits(m.expected_bits, m.dtype)},
      {"actual_bits", hex_bits(m.actual_bits, m.dtype)},
      {"ulp_distance", m.ulp_distance},
      {"expected_class", m.expected_class},
      {"actual_class", m.actual_class},
      {"seed", m.seed ? nlohmann::json(*m.seed) : nlohmann::json(nullptr)},
      {"inputs", m.inputs},
      {"first_divergent_stage", to_json(m.first_divergent_stage)},
  };
}

namespace {

nlohmann::json optional_string(const std::optional<std::string>& s) {
  return s ? nlohmann::json(*s) : nlohmann::json(nullptr);
}

nlohmann::json to_json(const Environment& env) {
  nlohmann::json gpu = nullptr;
  if (env.gpu)
    gpu = {{"name", env.gpu->name},
           {"compute_capability", env.gpu->compute_capability},
           {"driver", env.gpu->driver},
           {"cuda", env.gpu->cuda}};
  return {{"host", env.host}, {"host_threads", env.host_threads}, {"gpu", gpu}};
}

nlohmann::json to_json(const FileReport& f) {
  nlohmann::json counts = nlohmann::json::array();
  for (const TensorCount& c : f.counts)
    counts.push_back({{"check", c.check}, {"tensor", c.tensor}, {"compared", c.compared}, {"mismatches", c.mismatches}});
  return {
      {"path", f.path},
      {"kernel", optional_string(f.kernel)},
      {"variant", optional_string(f.variant)},
      {"provenance", f.provenance},
      {"rows", f.rows},
      {"stream_dtype", f.stream_dtype},
      {"checks", f.checks},
      {"counts", counts},
  };
}

nlohmann::json to_json(const GateReport& g) {
  nlohmann::json suites = nlohmann::json::array(), runs = nlohmann::json::array();
  for (const SuiteInfo& s : g.suites)
    suites.push_back({{"name", s.name}, {"constants", s.constants}, {"stream_dtype", s.stream_dtype},
                      {"rows", s.rows}, {"seed", s.seed}});
  for (const RunCount& c : g.runs)
    runs.push_back({{"suite", c.suite}, {"variant", c.variant}, {"pair", c.pair}, {"tensor", c.tensor},
                    {"rows", c.rows}, {"compared", c.compared}, {"mismatches", c.mismatches}});
  nlohmann::json vacuity = nullptr, shrink = nullptr;
  if (g.vacuity)
    vacuity = {{"rows_caught", g.vacuity->rows_caught}, {"not_applicable", g.vacuity->not_applicable},
               {"uncaught", g.vacuity->uncaught}};
  if (g.shrink)
    shrink = {{"fixture", g.shrink->fixture}, {"suite", g.shrink->suite}, {"variant", g.shrink->variant},
              {"pair", g.shrink->pair}, {"tensor", g.shrink->tensor}, {"row", g.shrink->row},
              {"stage", optional_string(g.shrink->stage)}, {"steps", g.shrink->steps},
              {"predicate_calls", g.shrink->predicate_calls}, {"nontrivial_before", g.shrink->nontrivial_before},
              {"nontrivial_after", g.shrink->nontrivial_after}};
  return {{"constants_file", g.constants_file}, {"constants", g.constants}, {"seed", g.seed}, {"level", g.level},
          {"fuzz_rows", g.fuzz_rows}, {"variants", g.variants},
          {"implementation", optional_string(g.implementation)}, {"suites", suites}, {"runs", runs},
          {"vacuity", vacuity}, {"shrink", shrink}, {"shrink_note", g.shrink_note},
          {"emulator_rows", g.emulator_rows}, {"seconds", g.seconds}};
}

}  // namespace

nlohmann::json to_json(const Report& r) {
  nlohmann::json files = nlohmann::json::array();
  for (const FileReport& f : r.files) files.push_back(to_json(f));
  nlohmann::json items = nlohmann::json::array();
  for (const Mismatch& m : r.mismatches.kept()) items.push_back(to_json(m));
  return {
      {"schema_version", kSchemaVersion},
      {"tool", {{"name", "boundary-verify"}, {"version", r.tool_version}}},
      {"command", r.command},
      {"created", r.created},
      {"environment", to_json(r.environment)},
      {"gpu", r.gpu},
      {"files", files},
      {"counts", {{"elements_compared", r.elements_compared}, {"mismatches", r.mismatches.total()}}},
      {"mismatches",
       {{"total", r.mismatches.total()},
        {"listed", r.mismatches.kept().size()},
        {"cap", r.mismatches.cap()},
        {"truncated", r.mismatches.truncated()},
        {"items", items}}},
      {"gate", r.gate ? to_json(*r.gate) : nlohmann::json(nullptr)},
      {"result", r.mismatches.total() > 0                                              ? "mismatch"
                 : r.gate && r.gate->vacuity && !r.gate->vacuity->uncaught.empty() ? "vacuous"
                                                                                    : "equal"},
      {"exit_code", r.exit_code},
  };
}


}  // namespace boundary::report
