// boundary-verify rank (CUDA builds): one rank of a multi-process all-reduce boundary. R copies run
// at once, one per rank (started by the gate's multi-process variant or the GPU tests through
// boundary/gpu/rank_launcher.hpp); each maps the others' partials through CUDA IPC (rank_ipc.hpp)
// and computes the whole boundary from all R of them, fused and eager, for each case file in turn.
#pragma once

#include <boundary/verify/cli.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace boundary::cli {

struct RankOptions {
  std::filesystem::path channel;                 // the group's directory of handle files
  int rank = 0;
  int ranks = 2;
  std::vector<std::filesystem::path> inputs;     // case files (cases.hpp), run in this order by every rank
  std::filesystem::path outputs;                 // a directory: rank_output_path() names the files
  int timeout_ms = 20000;
  bool no_pdl = false;
  int device = -1;  // -1: rank % the visible devices (one GPU: all on it; R GPUs: one rank each)
};

CLI::App* setup_rank(CLI::App& app, RankOptions& options);
// Throws InputError (bad options or case files), gpu::RankError (a peer did not come or did not
// arrive in time), gpu::CudaError. Sets *exit_code: 0 written, 77 no device.
nlohmann::json run_rank(const RankOptions& options, int* exit_code);
std::string format_rank(const nlohmann::json& result);

// Where rank r writes its outputs of `inputs` (impl: "fused" or "eager"), as a case's outputs file:
// out BF16 [m, 8192], and new_stream F32 [m, 8192] when the case stores the stream.
std::filesystem::path rank_output_path(const std::filesystem::path& dir, const std::filesystem::path& inputs, int rank,
                                       const std::string& impl);

// A case file with a branch runs as R partials: rank row % R holds the row, every other rank -0.0.
// Their rank-order sum is the row's bits exactly (x + -0 = x for every x, -0 and subnormals
// included; a NaN loses its payload, which no output can show: every output is arithmetic on it).
inline constexpr std::uint16_t kNegativeZeroBf16 = 0x8000;

}  // namespace boundary::cli
