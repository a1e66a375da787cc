// boundary-verify check: an implementation's outputs for exported cases, every bit compared with
// the emulator's, reported as the gate reports (same schema, summary, JUnit and exit codes).
#include "cli_gate_parts.hpp"

#include <boundary/verify/atomic_file.hpp>
#include <boundary/verify/cli_cases.hpp>
#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/junit.hpp>

#include <CLI/CLI.hpp>

#include <fstream>

namespace boundary::cli {

using namespace gate_parts;

CLI::App* setup_check(CLI::App& app, CheckOptions& o) {
  CLI::App* sub = app.add_subcommand("check", "Compare an implementation's outputs for exported cases with the emulator, bit for bit");
  sub->add_option("--constants", o.constants, "Constants JSON (the one the cases were exported for)")->required();
  sub->add_option("--cases", o.cases, "Directory written by boundary-verify export")->required();
  sub->add_option("--outputs", o.outputs, "Directory with the implementation's <case>.safetensors (out, new_stream)")->required();
  sub->add_option("--report", o.report, "Write the JSON report (verify/report-schema.json)");
  sub->add_option("--junit", o.junit, "Write JUnit XML");
  sub->add_option("--max-mismatches", o.max_mismatches, "Mismatches listed in the report (all are counted)");
  sub->add_option("--threads", o.threads, "Host threads for the emulator (0: every core)");
  return sub;
}

namespace {

// A manifest field of the JSON type asked for; InputError naming the manifest and the field.
const nlohmann::json& field(const nlohmann::json& object, const std::string& key, nlohmann::json::value_t type,
                            const std::string& where) {
  const auto it = object.find(key);
  const bool number = type == nlohmann::json::value_t::number_unsigned;
  if (it == object.end() || (number ? !it->is_number_unsigned() : it->type() != type))
    throw InputError(where + ": field '" + key + "' is missing or not " + (number ? "a count" : nlohmann::json(type).type_name()));
  return *it;
}

nlohmann::json read_manifest(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot open (a directory written by boundary-verify export has one)");
  nlohmann::json manifest = nlohmann::json::parse(in, nullptr, false);
  if (manifest.is_discarded() || !manifest.is_object()) throw InputError(path.string() + ": not a JSON object");
  const std::string& format = field(manifest, "format", nlohmann::json::value_t::string, path.string()).get_ref<const std::string&>();
  if (format != cases::kManifestFormat)
    throw InputError(path.string() + ": format '" + format + "', expected '" + std::string(cases::kManifestFormat) + "'");
  return manifest;
}

// A case's file name from the manifest: a plain name in the cases directory, never a path.
std::string case_file(const nlohmann::json& entry, const std::string& where) {
  const std::string file = field(entry, "file", nlohmann::json::value_t::string, where).get<std::string>();
  if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..")
    throw InputError(where + ": field 'file' is '" + file + "', expected a file name");
  return file;
}

}  // namespace

nlohmann::json run_check(const CheckOptions& o, int* exit_code) {
  using value_t = nlohmann::json::value_t;
  const Constants base = read_constants(o.constants);
  const std::filesystem::path manifest_path = o.cases / "manifest.json";
  const std::string mp = manifest_path.string();
  const nlohmann::json manifest = read_manifest(manifest_path);
  if (field(manifest, "constants", value_t::object, mp) != constants_to_json(base))
    throw InputError(mp + ": the cases were exported for other constants than " + o.constants.string() + ": " +
                     manifest["constants"].dump());
  for (const auto& out : {o.report, o.junit})
    if (out && !out->parent_path().empty() && !std::filesystem::is_directory(out->parent_path()))
      throw InputError(out->string() + ": its directory does not exist");

  report::Report rep = report::start_report("check", o.max_mismatches);
  rep.gpu = "not requested";
  report::GateReport& g = rep.gate.emplace();
  g.constants_file = o.constants.string();
  g.constants = constants_to_json(base);
  g.seed = field(manifest, "seed", value_t::number_unsigned, mp).get<std::uint64_t>();
  g.level = field(manifest, "level", value_t::number_unsigned, mp).get<int>();
  g.fuzz_rows = field(manifest, "rows", value_t::number_unsigned, mp).get<std::int64_t>();
  g.variants = {"implementation"};
  g.implementation = "outputs in " + o.outputs.string();
  const unsigned threads = host_threads(o.threads);
  const auto t0 = std::chrono::steady_clock::now();

  const nlohmann::json& entries = field(manifest, "cases", value_t::array, mp);
  if (entries.empty()) throw InputError(mp + ": no cases (nothing to check would pass vacuously)");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string where = mp + " cases[" + std::to_string(i) + "]";
    const std::string file = case_file(entries[i], where);
    const std::filesystem::path case_path = o.cases / file, output_path = o.outputs / file;
    suite::Suite made{file, safetensors::read_file(case_path), {}};
    const Constants constants = cases::case_constants(made.inputs, case_path.string());
    const bool store = cases::case_store_stream(made.inputs, case_path.string());
    BoundSuite s(constants, std::move(made), case_path.string());
    s.info = {field(entries[i], "suite", value_t::string, where).get<std::string>(),
              field(entries[i], "constants_name", value_t::string, where).get<std::string>(),
              s.bound.inputs.stream_dtype == StreamDtype::f32 ? "F32" : "BF16", s.bound.m,
              field(entries[i], "seed", value_t::number_unsigned, where).get<std::uint64_t>()};
    g.suites.push_back(s.info);
    const StageValues actual = cases::read_outputs(output_path, s.bound.m, store);
    const StageValues expected = emulate(constants, s.bound, threads, false);
    g.emulator_rows += s.bound.m;
    compare_run(s, "implementation", "implementation vs emulator", expected, actual, store, rep, output_path.string());
  }
  g.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rep.exit_code = rep.mismatches.total() > 0 ? kMismatch : kSuccess;
  if (rep.exit_code == kMismatch)
    g.shrink_note = "check does not shrink: the gate with --implementation reruns the implementation on shrunk rows";
  nlohmann::json json = report::to_json(rep);
  json["notes"] = nlohmann::json::array({"check: " + std::to_string(entries.size()) + " cases of " + o.cases.string() +
                                         ", outputs from " + o.outputs.string()});
  if (o.report) io::write_file_atomically(*o.report, json.dump(2) + "\n");
  if (o.junit) io::write_file_atomically(*o.junit, junit::gate_xml(json));
  *exit_code = rep.exit_code;
  return json;
}

}  // namespace boundary::cli
