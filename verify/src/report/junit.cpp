#include <boundary/verify/junit.hpp>

#include <map>
#include <sstream>
#include <tuple>

namespace boundary::junit {

std::string escape(std::string_view text) {
  std::string out;
  for (const char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(ch) >= 0x20 || ch == '\t' || ch == '\n') out += ch;
    }
  }
  return out;
}

std::string to_xml(const std::string& suite_name, const std::vector<TestCase>& cases) {
  std::size_t failures = 0, skipped = 0;
  for (const TestCase& c : cases) failures += c.failure_message.has_value(), skipped += c.skipped.has_value();
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"" << cases.size() << "\" failures=\""
    << failures << "\" skipped=\"" << skipped << "\">\n  <testsuite name=\"" << escape(suite_name) << "\" tests=\""
    << cases.size() << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\"" << skipped << "\">\n";
  for (const TestCase& c : cases) {
    o << "    <testcase classname=\"" << escape(c.classname) << "\" name=\"" << escape(c.name) << "\"";
    if (!c.failure_message && !c.skipped) {
      o << "/>\n";
      continue;
    }
    o << ">\n";
    if (c.failure_message)
      o << "      <failure message=\"" << escape(*c.failure_message) << "\">" << escape(c.failure_text.value_or(""))
        << "</failure>\n";
    if (c.skipped) o << "      <skipped message=\"" << escape(*c.skipped) << "\"/>\n";
    o << "    </testcase>\n";
  }
  o << "  </testsuite>\n</testsuites>\n";
  return o.str();
}

namespace {

constexpr std::size_t kMismatchesPerFailure = 5;

std::string mismatch_line(const nlohmann::json& m) {
  std::ostringstream o;
  o << m["tensor"].get<std::string>() << " [row " << m["row"] << ", column " << m["column"] << "]: expected "
    << m["expected_bits"].get<std::string>() << ", actual " << m["actual_bits"].get<std::string>();
  if (m["first_divergent_stage"].is_object())
    o << ", first divergent stage " << m["first_divergent_stage"]["stage"].get<std::string>();
  return o.str() + "\n";
}

}  // namespace

std::vector<TestCase> gate_cases(const nlohmann::json& r) {
  std::vector<TestCase> cases;
  const nlohmann::json& g = r.at("gate");
  // (suite, variant, pair) -> mismatches of its tensors, in report order.
  std::vector<std::tuple<std::string, std::string, std::string>> order;
  std::map<std::tuple<std::string, std::string, std::string>, std::int64_t> differing;
  for (const auto& run : g.at("runs")) {
    const auto key = std::make_tuple(run["suite"].get<std::string>(), run["variant"].get<std::string>(),
                                     run["pair"].get<std::string>());
    if (!differing.count(key)) order.push_back(key);
    differing[key] += run["mismatches"].get<std::int64_t>();
  }
  for (const auto& key : order) {
    const auto& [suite, variant, pair] = key;
    TestCase c{"gate." + suite, pair, std::nullopt, std::nullopt, std::nullopt};
    if (differing[key] > 0) {
      c.failure_message = std::to_string(differing[key]) + " elements differ";
      std::string text;
      std::size_t shown = 0;
      for (const auto& m : r.at("mismatches").at("items"))
        if (shown < kMismatchesPerFailure && m["suite"] == suite && m["variant"] == variant && m["pair"] == pair)
          text += mismatch_line(m), ++shown;
      c.failure_text = text;
    }
    cases.push_back(std::move(c));
  }
  if (g.at("vacuity").is_object()) {
    TestCase c{"gate.vacuity", "edge suites catch every emulator mutant", std::nullopt, std::nullopt, std::nullopt};
    if (!g["vacuity"]["uncaught"].empty()) {
      c.failure_message = "vacuous: no edge row catches " + g["vacuity"]["uncaught"].dump();
      c.failure_text = g["vacuity"]["rows_caught"].dump();
    }
    cases.push_back(std::move(c));
    for (const auto& [mutant, why] : g["vacuity"]["not_applicable"].items())
      cases.push_back({"gate.vacuity", mutant, std::nullopt, std::nullopt, "not applicable: " + why.get<std::string>()});
  }
  for (const auto& f : r.at("files")) {
    TestCase c{"gate.fixtures", f["path"].get<std::string>(), std::nullopt, std::nullopt, std::nullopt};
    std::int64_t n = 0;
    for (const auto& count : f["counts"]) n += count["mismatches"].get<std::int64_t>();
    if (n > 0) c.failure_message = std::to_string(n) + " elements differ from the fixture";
    cases.push_back(std::move(c));
  }
  if (r.at("gpu") != "run" && r.at("gpu") != "not requested")  // not requested: an external implementation ran
    cases.push_back({"gate.gpu", "GPU implementations vs emulator", std::nullopt, std::nullopt,
                     r["gpu"].get<std::string>()});
  return cases;
}

std::string gate_xml(const nlohmann::json& report) { return to_xml("boundary-verify gate", gate_cases(report)); }

}  // namespace boundary::junit
