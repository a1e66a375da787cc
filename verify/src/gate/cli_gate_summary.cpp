// The gate's one-screen summary for a human, from its report.
#include <boundary/verify/gate.hpp>

#include <map>
#include <sstream>

namespace boundary::cli {

namespace {

constexpr std::size_t kMismatchesShown = 5;

void per_implementation(std::ostringstream& o, const nlohmann::json& g) {
  std::vector<std::string> order;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> totals;  // variant -> (differ, compared)
  for (const auto& run : g["runs"]) {
    const std::string v = run["variant"].get<std::string>();
    if (!totals.count(v)) order.push_back(v);
    totals[v].first += run["mismatches"].get<std::int64_t>();
    totals[v].second += run["compared"].get<std::int64_t>();
  }
  if (order.empty()) return;
  o << "  elements differing / compared with the emulator, all suites:\n";
  for (const std::string& v : order) {
    o << "    " << v << std::string(v.size() < 26 ? 26 - v.size() : 1, ' ') << totals[v].first << " / "
      << totals[v].second << "\n";
  }
}

void mismatch_line(std::ostringstream& o, const nlohmann::json& m) {
  o << "    " << m["suite"].get<std::string>() << " " << m["pair"].get<std::string>() << ": "
    << m["tensor"].get<std::string>() << " [row " << m["row"] << ", column " << m["column"] << "] expected "
    << m["expected_bits"].get<std::string>() << " (" << m["expected_class"].get<std::string>() << "), actual "
    << m["actual_bits"].get<std::string>() << " (" << m["actual_class"].get<std::string>() << ")";
  if (m["first_divergent_stage"].is_object()) o << ", first divergent stage " << m["first_divergent_stage"]["stage"].get<std::string>();
  o << "\n";
}

}  // namespace

std::string format_gate(const nlohmann::json& r) {
  std::ostringstream o;
  const nlohmann::json& g = r["gate"];
  std::int64_t rows = 0;
  for (const auto& s : g["suites"]) rows += s["rows"].get<std::int64_t>();
  o << "gate: " << g["constants_file"].get<std::string>() << " (seed " << g["seed"] << ", level " << g["level"]
    << ", " << g["fuzz_rows"] << " fuzzed rows per stream dtype), " << g["seconds"].get<double>() << " s\n";
  o << "  " << g["suites"].size() << " suites, " << rows << " rows; emulator on " << r["environment"]["host_threads"]
    << " host threads\n";
  o << "  GPU: " << r["gpu"].get<std::string>();
  if (r["environment"]["gpu"].is_object())
    o << " on " << r["environment"]["gpu"]["name"].get<std::string>() << " (sm "
      << r["environment"]["gpu"]["compute_capability"].get<std::string>() << ")";
  o << "\n";
  if (g.contains("implementation") && g["implementation"].is_string())
    o << "  implementation: " << g["implementation"].get<std::string>() << "\n";
  per_implementation(o, g);
  if (g["vacuity"].is_object()) {
    const auto& v = g["vacuity"];
    std::int64_t fewest = -1;
    for (const auto& [name, n] : v["rows_caught"].items())
      if (!v["not_applicable"].contains(name) && (fewest < 0 || n.get<std::int64_t>() < fewest))
        fewest = n.get<std::int64_t>();
    const std::size_t applicable = v["rows_caught"].size() - v["not_applicable"].size();
    if (v["uncaught"].empty())
      o << "  vacuity: every one of " << applicable << " applicable emulator mutants is caught (by at least "
        << fewest << " edge rows)\n";
    else
      o << "  vacuity: VACUOUS, no edge row catches " << v["uncaught"].dump() << "\n";
    for (const auto& [name, why] : v["not_applicable"].items())
      o << "    not applicable: " << name << " (" << why.get<std::string>() << ")\n";
  }
  if (!r["files"].empty()) o << "  fixtures replayed: " << r["files"].size() << "\n";
  const std::int64_t total = r["mismatches"]["total"].get<std::int64_t>();
  if (total > 0) {
    const auto& items = r["mismatches"]["items"];
    o << "  " << total << " mismatching elements; the first " << std::min(items.size(), kMismatchesShown) << ":\n";
    for (std::size_t i = 0; i < items.size() && i < kMismatchesShown; ++i) mismatch_line(o, items[i]);
  }
  if (g["shrink"].is_object()) {
    const auto& k = g["shrink"];
    // A mismatch that needs most of its row (a sum in another order) keeps no simpler row: say so,
    // rather than "shrunk to N (from N)".
    if (k["steps"].get<int>() == 0)
      o << "  could not shrink the first mismatch: no simpler row kept it in " << k["predicate_calls"]
        << " calls (--shrink-calls); its row as found, " << k["nontrivial_before"] << " non-trivial elements: ";
    else
      o << "  shrunk the first mismatch to " << k["nontrivial_after"] << " non-trivial elements (from "
        << k["nontrivial_before"] << ", " << k["steps"] << " steps in " << k["predicate_calls"] << " calls): ";
    o << k["fixture"].get<std::string>() << " (boundary-verify replay reproduces it)\n";
  } else if (!g["shrink_note"].get<std::string>().empty())
    o << "  shrink: " << g["shrink_note"].get<std::string>() << "\n";
  if (r.contains("notes"))
    for (const auto& n : r["notes"]) o << "  " << n.get<std::string>() << "\n";
  const int rc = r["exit_code"].get<int>();
  o << "  result: "
    << (rc == 0   ? "PASS: every bit equal"
        : rc == 77 ? "CPU parts passed; the GPU checks DID NOT RUN"
        : total > 0 ? "FAIL: bits differ"
                    : "FAIL: a suite is vacuous")
    << " (exit " << rc << ")\n";
  return o.str();
}

}  // namespace boundary::cli
