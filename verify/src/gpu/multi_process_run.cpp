// The gate's multi-process run: the bound rows as a case file in a fresh directory, R copies of
// this executable's `rank` subcommand started on it, their outputs read back and compared.
#include "multi_process_run.hpp"

#include <boundary/verify/cases.hpp>
#include <boundary/verify/cli_rank.hpp>
#include <boundary/gpu/draft_boundary.hpp>
#include <boundary/gpu/rank_launcher.hpp>

#include <cstring>
#include <iostream>

namespace boundary::cli {

namespace st = safetensors;

namespace {

// A rank's step is one case (seconds); the launch allows for R CUDA start-ups and the timeouts.
constexpr int kRankTimeoutMs = 20000;
constexpr auto kLaunchDeadline = std::chrono::seconds(120);
constexpr std::size_t kLogTail = 2000;

// Marks with the poison every element of `into` where `other` differs; returns how many.
std::int64_t poison_differences(st::Tensor& into, const st::Tensor& other) {
  const std::size_t width = st::dtype_size(into.dtype);
  std::int64_t n = 0;
  for (std::size_t i = 0; i < into.bytes.size(); i += width)
    if (std::memcmp(&into.bytes[i], &other.bytes[i], width) != 0) {
      std::memset(&into.bytes[i], 0xFF, width);
      ++n;
    }
  return n;
}

}  // namespace

StageValues run_multi_process(const Constants& constants, const BoundTensors& bound, const GateVariant& v) {
  const gpu::ChannelDir dir;
  const std::filesystem::path inputs = dir.path() / "case.safetensors", channel = dir.path() / "channel";
  std::filesystem::create_directory(channel);
  st::File file = inputs_file(constants, bound);
  cases::describe(file, constants, v.store);
  st::write_file(inputs, file);
  const auto args = [&](int r) {
    return std::vector<std::string>{"rank", "--channel", channel.string(), "--rank", std::to_string(r), "--ranks",
                                    std::to_string(kMultiProcessRanks), "--inputs", inputs.string(), "--outputs",
                                    dir.path().string(), "--timeout-ms", std::to_string(kRankTimeoutMs)};
  };
  const std::vector<gpu::RankExit> exits =
      gpu::launch_ranks(gpu::this_executable(), kMultiProcessRanks, args, dir.path(), kLaunchDeadline);
  for (const gpu::RankExit& e : exits)
    if (!e.ok()) throw gpu::CudaError("multi-process run: " + e.describe() + "; its log:\n" + e.log_tail(kLogTail));
  std::map<std::string, st::Tensor> first = cases::read_outputs(rank_output_path(dir.path(), inputs, 0, "fused"), bound.m, v.store);
  for (int r = 0; r < kMultiProcessRanks; ++r)
    for (const char* impl : {"fused", "eager"}) {
      if (r == 0 && std::string(impl) == "fused") continue;
      const auto path = rank_output_path(dir.path(), inputs, r, impl);
      const std::map<std::string, st::Tensor> other = cases::read_outputs(path, bound.m, v.store);
      for (auto& [name, tensor] : first)
        if (const std::int64_t n = poison_differences(tensor, other.at(name)); n > 0)
          std::cerr << "multi-process: rank " << r << " (" << impl << ") differs from rank 0 (fused) in " << n
                    << " elements of '" << name << "'; they are reported as 0xFF.. patterns\n";
    }
  StageValues values;
  for (auto& [name, tensor] : first) values[name] = std::move(tensor);
  return values;
}

}  // namespace boundary::cli
