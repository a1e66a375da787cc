// boundary-verify capture: runs the fused DraftBoundary kernel and the eager chain on the GPU,
// checks both against the emulator bit for bit, and writes a fixture: the inputs, the operands,
// the hardware's outputs and their provenance. It refuses to write a fixture whose kernels and
// emulator disagree, and says where.
#pragma once

#include <boundary/verify/replay.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace boundary::cli {

struct CaptureOptions {
  std::filesystem::path constants;
  std::optional<std::filesystem::path> operands;  // alpha, beta, weights: replace the inputs' own
  std::optional<std::filesystem::path> inputs;
  std::optional<std::int64_t> generate_rows;
  int ranks = 0;                     // with --generate: R rank partials instead of a branch (the all-reduce boundary)
  bool edge_rows = false;            // one row per edge pattern (boundary/edge_rows.hpp)
  bool edge_suite = false;           // the level-1 edge suite's rows that catch the planted bugs
  int witness_rows = 3;              // with edge_suite: rows kept per emulator twin
  std::uint64_t seed = 1;
  std::string stream_dtype = "f32";  // for --generate
  std::filesystem::path output;
  bool no_store_stream = false;
  std::string gates = "auto";        // auto (late above the SM count), early, late
  bool no_pdl = false;
  unsigned threads = 0;
};

CLI::App* setup_capture(CLI::App& app, CaptureOptions& options);
// Sets *exit_code: 0 written, 1 kernels and emulator disagree (nothing written), 77 no device.
nlohmann::json run_capture(const CaptureOptions& options, int* exit_code);
std::string format_capture(const nlohmann::json& result);

// replay --gpu: the fixture's inputs through the fused kernel and the eager chain on this GPU.
GpuReplayHook make_gpu_replay_hook();

}  // namespace boundary::cli
