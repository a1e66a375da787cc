// Starts the R processes of a rank group on this machine and waits for them: a fresh exec per rank
// (posix_spawn), never a forked child that goes on to use CUDA, which the CUDA runtime does not
// support. Host code only; the programs it starts do the CUDA work (boundary/gpu/rank_ipc.hpp).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace boundary::gpu {

// How one rank's process ended.
struct RankExit {
  int rank = 0;
  int exit_code = -1;          // its exit status; -1 when a signal ended it
  int signal = 0;              // the signal that ended it, 0 if none
  bool killed_at_deadline = false;
  double seconds = 0;          // from the launch to its end
  std::string log;             // its stdout and stderr, interleaved
  bool ok() const { return exit_code == 0; }
  // "rank 1: exit 2 after 3.1 s" (or "killed by signal 9", "killed at the deadline").
  std::string describe() const;
  // The last `chars` characters of the log ("..." before them when cut): what a failure report shows.
  std::string log_tail(std::size_t chars) const;
};

// A fresh private directory (mkdtemp under $TMPDIR, else /tmp): one group's channel and logs.
// Removed with its contents on destruction, unless BOUNDARY_KEEP_CHANNEL is set in the environment.
class ChannelDir {
 public:
  ChannelDir();
  ~ChannelDir();
  ChannelDir(const ChannelDir&) = delete;
  ChannelDir& operator=(const ChannelDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Runs `program` with the arguments args(r) for every r in [0, ranks), all at once; rank r's
// stdout and stderr go to log_dir/rank<r>.log. Returns once all have exited, or at the deadline
// after killing (SIGKILL) those still running. Throws std::runtime_error when a process cannot be
// started (the ones already started are killed first). env(r), when given: "NAME=value" entries
// added to this process's environment for rank r.
std::vector<RankExit> launch_ranks(const std::filesystem::path& program, int ranks,
                                   const std::function<std::vector<std::string>(int rank)>& args,
                                   const std::filesystem::path& log_dir, std::chrono::milliseconds deadline,
                                   const std::function<std::vector<std::string>(int rank)>& env = {});

// The path of the running executable (/proc/self/exe), for a program that starts copies of itself.
std::filesystem::path this_executable();

}  // namespace boundary::gpu
