// The GPU tests of the multi-process all-reduce boundary (ctest label gpu): R rank processes on
// one GPU, each a fresh exec, sharing their partials through CUDA IPC (boundary/gpu/rank_ipc.hpp).
// - boundary-verify rank, R in {2, 4, 8}: every rank's fused and eager outputs == the emulator's,
//   bit for bit, on the gate's edge rows over R partials and on fuzzed partials.
// - 1,000 back-to-back steps replayed from a CUDA graph, the partials new every step, R in
//   {2, 4, 8}: every step == the emulator on every rank, and all ranks' outputs hash equal.
// - the planted stale read and early overwrite (a skipped wait each) must fail those steps.
// - a rank that dies, stalls, or never starts ends its peers with an error naming it, in bounded time.
#include "gpu_test_launches.hpp"
#include "multi_process_rank.hpp"

#include <boundary/verify/boundary_tensors.hpp>
#include <boundary/verify/cases.hpp>
#include <boundary/verify/cli_rank.hpp>
#include <boundary/gpu/rank_launcher.hpp>

#include <fstream>

using namespace gpu_test;
using namespace gpu_test::multi_process;

namespace {

// R in {2, 4, 8} and 1,000 graph steps; the environment may narrow both for slow runs (under
// compute-sanitizer): BOUNDARY_MULTI_PROCESS_RANKS=2, BOUNDARY_MULTI_PROCESS_STEPS=100.
std::vector<int> rank_counts() {
  const char* only = std::getenv("BOUNDARY_MULTI_PROCESS_RANKS");
  if (!only) return {2, 4, 8};
  const int r = std::atoi(only);
  REQUIRE_MESSAGE((r >= 2 && r <= kMaxRanks), "BOUNDARY_MULTI_PROCESS_RANKS: 2 to 8, not '" << only << "'");
  return {r};
}
// BOUNDARY_MULTI_PROCESS_PLANT=stale-read or early-overwrite plants that bug into the 1,000-step
// test itself, which must then fail: the command that shows each check failing.
gpu::IpcBug planted_from_environment() {
  const char* plant = std::getenv("BOUNDARY_MULTI_PROCESS_PLANT");
  if (!plant) return gpu::IpcBug::none;
  if (std::string_view(plant) == "stale-read") return gpu::IpcBug::skip_ready_wait;
  if (std::string_view(plant) == "early-overwrite") return gpu::IpcBug::skip_done_wait;
  FAIL("BOUNDARY_MULTI_PROCESS_PLANT: stale-read or early-overwrite, not '" << plant << "'");
  return gpu::IpcBug::none;
}
// Each device wait's and rendezvous' deadline (10 s); BOUNDARY_MULTI_PROCESS_TIMEOUT_MS=60000 for
// runs under compute-sanitizer, whose start-up and instrumented kernels are slow.
int rank_timeout_ms() {
  const char* ms = std::getenv("BOUNDARY_MULTI_PROCESS_TIMEOUT_MS");
  if (!ms) return RankParams{}.timeout_ms;
  const int n = std::atoi(ms);
  REQUIRE_MESSAGE(n >= 1, "BOUNDARY_MULTI_PROCESS_TIMEOUT_MS: a count >= 1, not '" << ms << "'");
  return n;
}
int graph_steps() {
  const char* steps = std::getenv("BOUNDARY_MULTI_PROCESS_STEPS");
  if (!steps) return 1000;
  const int n = std::atoi(steps);
  REQUIRE_MESSAGE(n >= 1, "BOUNDARY_MULTI_PROCESS_STEPS: a count >= 1, not '" << steps << "'");
  return n;
}
constexpr std::int64_t kFuzzRows = 256;
constexpr std::uint64_t kPartialSeed = 20261216;
constexpr auto kDeadline = std::chrono::seconds(120);  // a launch that outlives it has hung: killed, failed
constexpr int kFailTimeoutMs = 2000;                   // the device deadline in the failure tests
constexpr double kFailBoundSeconds = 30;               // start-up, one deadline, teardown: well inside
// A skipped wait shows in the first steps (one GPU time-slices the rank processes, so one rank
// runs ahead of the other at once); 200 keep the planted runs short. The 1,000-step test with
// BOUNDARY_MULTI_PROCESS_PLANT is the long form.
constexpr int kPlantedSteps = 200;

std::string describe(const std::vector<gpu::RankExit>& exits) {
  std::string s;
  for (const gpu::RankExit& e : exits) s += "\n== " + e.describe() + "\n" + e.log_tail(3000);
  return s;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::string s;
  std::getline(f, s);
  return s;
}

// ---- boundary-verify rank on case files

// The gate's edge rows over R partials (rank row % R holds each), and fuzzed rows whose branch is
// replaced by generate_partials' R partials; the BF16 fuzz case does not store the stream.
std::vector<std::filesystem::path> write_cases(const std::filesystem::path& dir, int ranks) {
  std::vector<std::filesystem::path> files;
  const auto write = [&](cases::Case& c) {
    files.push_back(dir / (c.name + ".safetensors"));
    safetensors::write_file(files.back(), c.inputs);
  };
  cases::Options edge;
  edge.ranks = ranks;
  edge.family = "partials";
  cases::for_each_case(post_ffn(), edge, [&](cases::Case&& c) { write(c); });
  cases::Options fuzz;
  fuzz.family = "fuzz";
  fuzz.rows = kFuzzRows;
  cases::for_each_case(post_ffn(), fuzz, [&](cases::Case&& c) {
    auto& t = c.inputs.tensors;
    const std::int64_t m = t.at("branch").shape.at(0);
    t.erase("branch");
    t["partials"] = generate_partials(m, ranks, kPartialSeed + static_cast<std::uint64_t>(ranks));
    if (c.info.stream_dtype == "BF16") cases::describe(c.inputs, c.constants, false);
    c.name += "-partials";
    write(c);
  });
  return files;
}

// Every rank's fused and eager outputs of one case file against the emulator.
void compare_case(const std::filesystem::path& file, const std::filesystem::path& dir, int ranks) {
  const safetensors::File inputs = safetensors::read_file(file);
  const Constants k = cases::case_constants(inputs, file.string());
  const bool store = cases::case_store_stream(inputs, file.string());
  const BoundTensors bound = bind_inputs(inputs, k, file.string());
  REQUIRE(static_cast<int>(bound.partial_rows.size()) == ranks);
  const std::int64_t m = bound.m;
  std::vector<std::uint16_t> want_out(elements(m));
  std::vector<float> want_new_stream(elements(m));
  ref::Outputs o;
  o.out = want_out.data();
  o.new_stream = want_new_stream.data();
  ref::Boundary(k, bound.operands).run(bound.inputs, o, host_threads());
  for (int r = 0; r < ranks; ++r)
    for (const char* impl : {"fused", "eager"}) {
      const auto got = cases::read_outputs(cli::rank_output_path(dir, file, r, impl), m, store);
      const std::string context = file.filename().string() + " | R = " + std::to_string(ranks) + " | rank " +
                                  std::to_string(r) + " | " + impl;
      expect_bits<std::uint16_t>(context, "out", {got.at("out").data<std::uint16_t>(), elements(m)}, want_out, "the emulator");
      if (store)
        expect_bits<float>(context, "new_stream", {got.at("new_stream").data<float>(), elements(m)}, want_new_stream,
                           "the emulator");
    }
}

// ---- this program's hidden rank case, R copies

std::vector<gpu::RankExit> launch_graph_ranks(const gpu::ChannelDir& dir, int processes, RankParams params,
                                              const std::function<void(RankParams&)>& per_rank = {}) {
  const std::filesystem::path channel = dir.path() / "channel";
  std::filesystem::create_directories(channel);
  params.channel = channel;
  return gpu::launch_ranks(
      gpu::this_executable(), processes, [](int) { return rank_case_arguments(); }, dir.path(), kDeadline,
      [&](int r) {
        RankParams p = params;
        p.rank = r;
        p.digest = dir.path() / ("rank" + std::to_string(r) + ".digest");
        if (per_rank) per_rank(p);
        return p.to_environment();
      });
}

bool mentions(const std::string& log, const std::string& what) { return log.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("multi-process: R processes of boundary-verify rank == the emulator bit for bit, edge and fuzzed rows, R 2, 4, 8") {
  for (int ranks : rank_counts()) {
    INFO("R = " << ranks);
    const gpu::ChannelDir dir;
    const std::vector<std::filesystem::path> files = write_cases(dir.path(), ranks);
    REQUIRE(files.size() == 4);
    const std::filesystem::path channel = dir.path() / "channel";
    std::filesystem::create_directory(channel);
    const auto args = [&](int r) {
      std::vector<std::string> a = {"rank", "--channel", channel.string(), "--rank", std::to_string(r), "--ranks",
                                    std::to_string(ranks), "--outputs", dir.path().string(), "--timeout-ms",
                                    std::to_string(rank_timeout_ms())};
      for (const auto& f : files) a.insert(a.end(), {"--inputs", f.string()});
      return a;
    };
    const auto exits = gpu::launch_ranks(BOUNDARY_VERIFY_EXE, ranks, args, dir.path(), kDeadline);
    for (const gpu::RankExit& e : exits)
      if (!e.ok()) FAIL("a rank failed:" << describe(exits));
    for (const auto& f : files) compare_case(f, dir.path(), ranks);
  }
}

TEST_CASE("multi-process: 1,000 steps replayed from a CUDA graph, partials new every step, R 2, 4, 8: every step == the emulator on every rank") {
  for (int ranks : rank_counts()) {
    INFO("R = " << ranks);
    const gpu::ChannelDir dir;
    RankParams p;
    p.ranks = ranks;
    p.steps = graph_steps();
    p.timeout_ms = rank_timeout_ms();
    p.planted = planted_from_environment();
    const auto exits = launch_graph_ranks(dir, ranks, p);
    for (const gpu::RankExit& e : exits)
      if (!e.ok()) FAIL("a rank failed:" << describe(exits));
    const std::string first = read_text(dir.path() / "rank0.digest");
    CHECK(!first.empty());
    for (int r = 1; r < ranks; ++r) CHECK(read_text(dir.path() / ("rank" + std::to_string(r) + ".digest")) == first);
  }
}

TEST_CASE("multi-process: a planted stale read and a planted early overwrite fail the graph steps") {
  // Without the wait each skips, some step reads a peer's partial of the wrong step; the emulator
  // on the right step's partials must then disagree. A run where no rank sees it is a test failure.
  for (const auto& [bug, name] : {std::pair{gpu::IpcBug::skip_ready_wait, "stale read (arrive skips its wait)"},
                                  std::pair{gpu::IpcBug::skip_done_wait, "early overwrite (wait_writable skips its wait)"}}) {
    INFO("planted: " << name);
    const gpu::ChannelDir dir;
    RankParams p;
    p.steps = std::min(graph_steps(), kPlantedSteps);
    p.timeout_ms = rank_timeout_ms();
    p.planted = bug;
    const auto exits = launch_graph_ranks(dir, 2, p);
    bool caught = false;
    for (const gpu::RankExit& e : exits) {
      CHECK_FALSE(e.killed_at_deadline);
      CHECK_FALSE(mentions(e.log, "timed out"));
      caught = caught || (!e.ok() && mentions(e.log, "differs from the emulator"));
    }
    if (!caught) FAIL("the planted " << name << " was not caught:" << describe(exits));
  }
}

TEST_CASE("multi-process: a rank that dies, stalls or never starts ends its peers with an error naming it, in bounded time") {
  // Every surviving peer's log must name the rank that left and say what happened: a device wait
  // that timed out (in arrive or wait_writable, by when the rank left), or, should the dead rank's
  // memory have gone with it, a failed synchronize that names the exited peer.
  struct Case {
    const char* what;
    int processes, ranks;
    Stop stop;
    std::vector<std::string> any_of;  // one of these in every surviving peer's log
  };
  const std::string timed_out = "timed out after " + std::to_string(kFailTimeoutMs) + " ms";
  const Case cases[] = {
      {"rank 3 of 4 dies at step 6", 4, 4, Stop::die, {timed_out + " in arrive, waiting for rank 3", timed_out + " in wait_writable, waiting for rank 3", "rank 3 (pid"}},
      {"rank 1 of 2 stalls at step 6", 2, 2, Stop::stall, {timed_out + " in arrive, waiting for rank 1", timed_out + " in wait_writable, waiting for rank 1"}},
      {"rank 1 of 2 never starts", 1, 2, Stop::none, {"no handle from rank 1"}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const gpu::ChannelDir dir;
    RankParams p;
    p.ranks = c.ranks;
    p.timeout_ms = kFailTimeoutMs;
    const int last = c.ranks - 1;
    const auto exits = launch_graph_ranks(dir, c.processes, p, [&](RankParams& q) {
      if (q.rank == last) q.stop = c.stop, q.stop_step = 5;
    });
    for (const gpu::RankExit& e : exits) {
      if (e.rank == last) continue;  // the one that left; its own outcome is not the point
      INFO(describe(exits));
      CHECK_FALSE(e.ok());
      CHECK_FALSE(e.killed_at_deadline);
      CHECK(std::any_of(c.any_of.begin(), c.any_of.end(), [&](const std::string& n) { return mentions(e.log, n); }));
      CHECK(e.seconds < kFailBoundSeconds);
    }
  }
}

TEST_CASE("multi-process host API: a bad rank group is refused, naming what is wrong") {
  const gpu::ChannelDir dir;
  const auto refused = [&](gpu::RankConfig c, const char* needle) {
    CHECK_THROWS_WITH_AS(gpu::RankGroup{c}, doctest::Contains(needle), InputError);
  };
  refused({dir.path(), 0, 9, 1}, "ranks 9, expected 1 to 8");
  refused({dir.path(), 2, 2, 1}, "rank 2, expected 0 to 1");
  refused({dir.path(), 0, 2, 0}, "max_rows 0, expected >= 1");
  refused({dir.path() / "missing", 0, 2, 1}, "is not a directory");
  // One rank is a group of its own: no peers, no files; its partial is its own buffer.
  gpu::RankGroup alone({dir.path(), 0, 1, 2});
  CHECK(alone.partials(2).size() == 1);
  CHECK_THROWS_WITH_AS(alone.partial(0, 3), doctest::Contains("3 rows, expected 1 to 2"), InputError);
  CHECK(std::filesystem::is_empty(dir.path()));
}
