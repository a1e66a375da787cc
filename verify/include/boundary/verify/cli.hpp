// The boundary-verify command line: each subcommand an options struct, a setup_* that declares
// it on a CLI11 app, and a run_* that does the work from the struct alone (testable without
// argv) and returns its result as JSON data; main() formats it last.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

// CLI::App by reference only: CLI11 is a heavy header (about 10 s of compiling a file), included
// by the sources that declare options, not by every user of this header.
namespace CLI {
class App;
}  // namespace CLI

namespace boundary::cli {

// Exit codes, documented in the README.
enum ExitCode : int {
  kSuccess = 0,
  kMismatch = 1,       // bits differ (the gate and replay)
  kUsageOrInput = 2,   // bad arguments, constants, or input files; nothing written
  kCudaFailure = 3,
  kPeerFailure = 4,    // a multi-process rank: a peer did not come, or did not arrive in time
  kNoDevice = 77,      // GPU checks asked for, no device
  kInternal = 70,      // a bug of this tool (EX_SOFTWARE)
};

// The host threads a `--threads N` option means: N, or every core for 0.
unsigned host_threads(unsigned asked);

struct EmulateOptions {
  std::filesystem::path constants;
  std::optional<std::filesystem::path> inputs;
  std::optional<std::int64_t> generate_rows;
  std::uint64_t seed = 1;
  std::string stream_dtype = "f32";  // for --generate
  std::filesystem::path output;
  bool no_store_stream = false;
  bool intermediates = false;
  unsigned threads = 0;              // 0: every host core
};

CLI::App* setup_emulate(CLI::App& app, EmulateOptions& options);
// Throws InputError for bad input; writes options.output only when everything succeeded.
nlohmann::json run_emulate(const EmulateOptions& options);
std::string format_emulate(const nlohmann::json& summary);

}  // namespace boundary::cli
