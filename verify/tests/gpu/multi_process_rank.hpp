// What the multi-process tests hand each rank process they start (this test program again, its
// hidden case "multi-process rank"): the parameters travel in the environment, one variable each.
#pragma once

#include <boundary/gpu/rank_ipc.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpu_test::multi_process {

// How a rank leaves the run early, at step stop_step (0-based, before launching it).
enum class Stop { none, die, stall };

struct RankParams {
  std::filesystem::path channel;
  int rank = 0;
  int ranks = 2;
  int steps = 1000;
  int timeout_ms = 10000;
  gpu::IpcBug planted = gpu::IpcBug::none;
  Stop stop = Stop::none;
  int stop_step = 0;
  std::filesystem::path digest;  // where the rank writes the hash of every output it recorded

  std::vector<std::string> to_environment() const {
    return {"BOUNDARY_RANK_CHANNEL=" + channel.string(),
            "BOUNDARY_RANK=" + std::to_string(rank),
            "BOUNDARY_RANKS=" + std::to_string(ranks),
            "BOUNDARY_RANK_STEPS=" + std::to_string(steps),
            "BOUNDARY_RANK_TIMEOUT_MS=" + std::to_string(timeout_ms),
            "BOUNDARY_RANK_PLANT=" + std::to_string(static_cast<int>(planted)),
            "BOUNDARY_RANK_STOP=" + std::to_string(static_cast<int>(stop)),
            "BOUNDARY_RANK_STOP_STEP=" + std::to_string(stop_step),
            "BOUNDARY_RANK_DIGEST=" + digest.string()};
  }

  static RankParams from_environment() {
    const auto get = [](const char* name) {
      const char* v = std::getenv(name);
      if (!v) throw std::runtime_error(std::string("multi-process rank: ") + name + " is not set (run by the multi-process tests only)");
      return std::string(v);
    };
    const auto number = [&](const char* name) { return std::stoi(get(name)); };
    RankParams p;
    p.channel = get("BOUNDARY_RANK_CHANNEL");
    p.rank = number("BOUNDARY_RANK");
    p.ranks = number("BOUNDARY_RANKS");
    p.steps = number("BOUNDARY_RANK_STEPS");
    p.timeout_ms = number("BOUNDARY_RANK_TIMEOUT_MS");
    p.planted = static_cast<gpu::IpcBug>(number("BOUNDARY_RANK_PLANT"));
    p.stop = static_cast<Stop>(number("BOUNDARY_RANK_STOP"));
    p.stop_step = number("BOUNDARY_RANK_STOP_STEP");
    p.digest = get("BOUNDARY_RANK_DIGEST");
    return p;
  }
};

// The arguments that make this test program run only the rank case.
inline std::vector<std::string> rank_case_arguments() { return {"--no-skip", "--test-case=multi-process rank"}; }

}  // namespace gpu_test::multi_process
