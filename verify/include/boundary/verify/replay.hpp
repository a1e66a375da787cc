// boundary-verify replay F.safetensors...: recorded boundary outputs (a fixture) recomputed and
// compared bit for bit. A fixture holds a boundary's inputs and operands (the names emulate
// reads), the hardware's outputs `out` BF16 [m, 8192] and optionally `new_stream` F32 [m, 8192],
// and `__metadata__` with `constants` (constants_to_json(c).dump()) and, optionally, `kernel`,
// `variant` and the provenance keys (gpu, compute_capability, driver, cuda, project_version,
// seed, date).
//
// Checks: "emulator" always (the CPU emulator on every host thread); with --gpu, whatever the GPU
// hook runs ("gpu:fused", "gpu:eager"). Exit codes: 0 every element equal; 1 a mismatch; 2 a
// usage or input error (nothing written); 77 --gpu without a device (the CPU replay still ran
// and is reported).
#pragma once

#include <boundary/verify/boundary_tensors.hpp>
#include <boundary/verify/cli.hpp>
#include <boundary/verify/report.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace boundary::cli {

// Outputs of one implementation run on a fixture's inputs; new_stream is set when asked for.
struct ReplayedOutputs {
  std::string check;  // "gpu:fused", "gpu:eager"
  safetensors::Tensor out;
  std::optional<safetensors::Tensor> new_stream;
};

// The GPU part of replay, filled in by the CUDA build where one exists; empty functions mean "no
// GPU support in this binary". Kept as functions so that this library needs no CUDA.
struct GpuReplayHook {
  // The device the checks would run on; nullopt when there is none.
  std::function<std::optional<report::GpuInfo>()> probe;
  // Runs the fixture's inputs through each GPU implementation. metadata: the fixture's (kernel,
  // variant). store_stream: the fixture has new_stream, so return it. CUDA failures throw
  // gpu::CudaError (exit 3), inputs a kernel refuses InputError.
  std::function<std::vector<ReplayedOutputs>(const Constants&, const BoundTensors&,
                                             const std::map<std::string, std::string>& metadata,
                                             bool store_stream)>
      run;
};

struct ReplayOptions {
  std::vector<std::filesystem::path> files;
  bool gpu = false;
  std::optional<std::filesystem::path> report;  // JSON report, written atomically
  std::size_t max_mismatches = 100;             // listed in the report; all are counted
  unsigned threads = 0;                         // 0: every host core
  GpuReplayHook gpu_hook;
};

CLI::App* setup_replay(CLI::App& app, ReplayOptions& options);

// The report as data, and the exit code it implies.
struct ReplayResult {
  report::Report report;
  int exit_code = kSuccess;
};

// Throws InputError (naming the file) for a bad fixture, before writing anything.
ReplayResult replay(const ReplayOptions& options);

// replay(), then the report file when asked for; returns the report's JSON.
nlohmann::json run_replay(const ReplayOptions& options, int* exit_code);

// One screen for a human: files, rows, elements compared, mismatches by file and tensor, the
// first few mismatches.
std::string format_replay(const nlohmann::json& report);

}  // namespace boundary::cli
