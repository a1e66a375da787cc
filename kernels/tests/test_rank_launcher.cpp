// The rank launcher without a GPU (ctest label cpu): R processes started at once, each with its
// own arguments, environment and log; exit codes and signals reported per rank; a process that
// outlives the deadline killed, not waited for; the channel directory made fresh and removed.
#include <boundary/gpu/rank_launcher.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

using namespace boundary;

namespace {

const std::filesystem::path kShell = "/bin/sh";

std::vector<std::string> script(const std::string& s) { return {"-c", s}; }

}  // namespace

TEST_CASE("launch_ranks: every rank runs with its arguments and environment; its exit and log are its own") {
  const gpu::ChannelDir dir;
  const auto exits = gpu::launch_ranks(
      kShell, 3, [](int r) { return script("echo rank $RANK_UNDER_TEST says " + std::to_string(r) + "; exit " + std::to_string(r)); },
      dir.path(), std::chrono::seconds(20), [](int r) { return std::vector<std::string>{"RANK_UNDER_TEST=" + std::to_string(r)}; });
  REQUIRE(exits.size() == 3);
  for (int r = 0; r < 3; ++r) {
    const gpu::RankExit& e = exits[static_cast<std::size_t>(r)];
    CHECK(e.rank == r);
    CHECK(e.exit_code == r);
    CHECK(e.ok() == (r == 0));
    CHECK_FALSE(e.killed_at_deadline);
    CHECK(e.log == "rank " + std::to_string(r) + " says " + std::to_string(r) + "\n");
  }
  CHECK(exits[2].describe().rfind("rank 2: exit 2 after ", 0) == 0);
  CHECK(exits[1].log_tail(8) == "... says 1\n");
  CHECK(exits[1].log_tail(100) == exits[1].log);
}

TEST_CASE("launch_ranks: a rank past the deadline is killed and named; a rank killed by a signal says which") {
  const gpu::ChannelDir dir;
  const auto start = std::chrono::steady_clock::now();
  const auto exits = gpu::launch_ranks(
      kShell, 3,
      [](int r) { return script(r == 0 ? "exit 0" : r == 1 ? "kill -TERM $$" : "exec sleep 60"); }, dir.path(),
      std::chrono::milliseconds(500));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  REQUIRE(exits.size() == 3);
  CHECK(exits[0].ok());
  CHECK(exits[1].exit_code == -1);
  CHECK(exits[1].signal == 15);
  CHECK(exits[1].describe().find("killed by signal 15") != std::string::npos);
  CHECK(exits[2].killed_at_deadline);
  CHECK_FALSE(exits[2].ok());
  CHECK(exits[2].describe().find("killed at the deadline") != std::string::npos);
}

TEST_CASE("launch_ranks: a program that cannot start is an error naming it; ChannelDir is fresh and removed") {
  std::filesystem::path kept;
  {
    const gpu::ChannelDir dir;
    kept = dir.path();
    CHECK(std::filesystem::is_directory(kept));
    CHECK(std::filesystem::is_empty(kept));
    CHECK_THROWS_WITH_AS(gpu::launch_ranks(dir.path() / "no-such-program", 2, [](int) { return std::vector<std::string>{}; },
                                           dir.path(), std::chrono::seconds(5)),
                         doctest::Contains("no-such-program"), std::runtime_error);
    const gpu::ChannelDir other;
    CHECK(other.path() != kept);
  }
  CHECK_FALSE(std::filesystem::exists(kept));
  CHECK(gpu::this_executable().filename() == "test_rank_launcher");
}
