// boundary-verify export: the gate's suites as case files and their manifest.
#include <boundary/verify/atomic_file.hpp>
#include <boundary/verify/cli_cases.hpp>
#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/report.hpp>
#include <boundary/verify/version.hpp>

#include <CLI/CLI.hpp>

#include <sstream>

namespace boundary::cli {

namespace st = safetensors;

CLI::App* setup_export(CLI::App& app, ExportOptions& o) {
  CLI::App* sub = app.add_subcommand("export", "Write the gate's suites as input files for any implementation, with a manifest");
  sub->add_option("--constants", o.constants, "Constants JSON")->required();
  sub->add_option("--dir", o.dir, "Directory to create (or an empty one): <case>.safetensors and manifest.json")->required();
  sub->add_option("--seed", o.cases.seed, "Seed of the generated suites (as the gate's)");
  sub->add_option("--level", o.cases.level, "Edge suite size: 1 (default) or 2")->check(CLI::IsMember({1, 2}));
  sub->add_option("--rows", o.cases.rows, "Fuzzed rows per stream dtype")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 20));
  sub->add_option("--ranks", o.cases.ranks, "Also the partials suites: the edge rows over R rank partials (1..8)")
      ->check(CLI::Range(1, kMaxRanks));
  std::string families = "all";
  for (const std::string& f : cases::families()) families += ", " + f;
  sub->add_option("--suite", o.cases.family, "Only this suite family: " + families)->capture_default_str();
  sub->add_flag("--no-store-stream", [&o](std::int64_t) { o.cases.store_stream = false; },
                "Cases that do not store the stream: outputs hold out only");
  return sub;
}

nlohmann::json run_export(const ExportOptions& o) {
  const Constants base = read_constants(o.constants);
  std::error_code ec;
  if (std::filesystem::exists(o.dir, ec) &&
      (!std::filesystem::is_directory(o.dir, ec) || !std::filesystem::is_empty(o.dir, ec)))
    throw InputError(o.dir.string() + ": exists and is not an empty directory (export writes only into a new or empty one)");
  if (!std::filesystem::create_directories(o.dir, ec) && ec)
    throw InputError(o.dir.string() + ": cannot create the directory: " + ec.message());

  nlohmann::json entries = nlohmann::json::array();
  std::int64_t rows = 0;
  std::uintmax_t bytes = 0;
  cases::for_each_case(base, o.cases, [&](cases::Case&& c) {
    const std::filesystem::path path = o.dir / (c.name + ".safetensors");
    st::write_file(path, c.inputs);
    bytes += std::filesystem::file_size(path);
    rows += c.info.rows;
    entries.push_back(cases::manifest_entry(c));
  });
  const nlohmann::json manifest = {
      {"format", cases::kManifestFormat},
      {"tool", {{"name", "boundary-verify"}, {"version", kVersion}}},
      {"constants", constants_to_json(base)},
      {"seed", o.cases.seed},
      {"level", o.cases.level},
      {"rows", o.cases.rows},
      {"ranks", o.cases.ranks},
      {"suite", o.cases.family},
      {"store_stream", o.cases.store_stream},
      {"cases", entries},
  };
  // Last: a directory with a manifest is a complete export.
  io::write_file_atomically(o.dir / "manifest.json", manifest.dump(2) + "\n");
  return {{"command", "export"}, {"dir", o.dir.string()}, {"cases", entries.size()},
          {"rows", rows},        {"bytes", bytes},          {"manifest", (o.dir / "manifest.json").string()}};
}

std::string format_export(const nlohmann::json& s) {
  std::ostringstream o;
  o << "export: " << s["cases"] << " cases, " << s["rows"] << " rows, " << s["bytes"].get<std::uintmax_t>() / 1000000
    << " MB in " << s["dir"].get<std::string>() << "; manifest " << s["manifest"].get<std::string>() << "\n";
  return o.str();
}

}  // namespace boundary::cli
