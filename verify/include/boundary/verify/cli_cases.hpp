// boundary-verify export and check: the gate's suites written as case files for an implementation
// the toolkit did not build, and that implementation's outputs checked bit for bit against the
// emulator (TestFloat's testfloat_gen and testfloat_ver). cases.hpp has the file formats.
#pragma once

#include <boundary/verify/cases.hpp>
#include <boundary/verify/cli.hpp>

#include <filesystem>
#include <optional>

namespace boundary::cli {

struct ExportOptions {
  std::filesystem::path constants;
  std::filesystem::path dir;  // created; refused when it holds anything
  cases::Options cases;
};

CLI::App* setup_export(CLI::App& app, ExportOptions& options);
// Writes DIR/<case>.safetensors for every case, then DIR/manifest.json; InputError before
// writing anything for bad options or a directory that is not empty.
nlohmann::json run_export(const ExportOptions& options);
std::string format_export(const nlohmann::json& summary);

struct CheckOptions {
  std::filesystem::path constants;
  std::filesystem::path cases;    // what export wrote
  std::filesystem::path outputs;  // OUTPUTS/<case>.safetensors for every case of the manifest
  std::optional<std::filesystem::path> report, junit;
  std::size_t max_mismatches = 100;
  unsigned threads = 0;
};

CLI::App* setup_check(CLI::App& app, CheckOptions& options);
// The gate's report (command "check"); *exit_code 0 every bit equal, 1 mismatches. A missing or
// bad outputs file, a case stored without its new_stream, or a manifest made for other constants
// is an InputError naming the file (exit 2), and nothing is written.
nlohmann::json run_check(const CheckOptions& options, int* exit_code);

}  // namespace boundary::cli
