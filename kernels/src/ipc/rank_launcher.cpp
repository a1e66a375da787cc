// The rank launcher: posix_spawn per rank (fork and exec in one: the child runs only the new
// program), logs to files, a polling wait with a deadline, SIGKILL for what outlives it.
#include <boundary/gpu/rank_launcher.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace boundary::gpu {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPoll = std::chrono::milliseconds(5);

std::string read_all(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Fills `e` from a waitpid status.
void record(RankExit& e, int status, Clock::time_point start) {
  e.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (WIFEXITED(status)) {
    e.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    e.exit_code = -1;
    e.signal = WTERMSIG(status);
  }
}

void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

pid_t spawn(const std::filesystem::path& program, const std::vector<std::string>& args, std::vector<std::string> env,
            const std::filesystem::path& log) {
  std::vector<std::string> argv_strings{program.string()};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;  // the added entries first: getenv finds the first of a name
  for (std::string& e : env) envp.push_back(e.data());
  for (char** e = environ; *e; ++e) envp.push_back(*e);
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start '" + program.string() + "': " + std::strerror(rc));
  return pid;
}

}  // namespace

std::string RankExit::describe() const {
  std::ostringstream s;
  s << "rank " << rank << ": ";
  if (killed_at_deadline) s << "killed at the deadline";
  else if (exit_code >= 0) s << "exit " << exit_code;
  else s << "killed by signal " << signal;
  s << " after " << seconds << " s";
  return s.str();
}

std::string RankExit::log_tail(std::size_t chars) const {
  return log.size() <= chars ? log : "..." + log.substr(log.size() - chars);
}

ChannelDir::ChannelDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/boundary-ranks-XXXXXX";
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp '" + pattern + "': " + std::strerror(errno));
  path_ = pattern;
}

ChannelDir::~ChannelDir() {
  if (std::getenv("BOUNDARY_KEEP_CHANNEL")) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<RankExit> launch_ranks(const std::filesystem::path& program, int ranks,
                                   const std::function<std::vector<std::string>(int rank)>& args,
                                   const std::filesystem::path& log_dir, std::chrono::milliseconds deadline,
                                   const std::function<std::vector<std::string>(int rank)>& env) {
  const auto start = Clock::now();
  std::vector<pid_t> pids;
  std::vector<RankExit> exits(static_cast<std::size_t>(ranks));
  const auto log_of = [&](int r) { return log_dir / ("rank" + std::to_string(r) + ".log"); };
  try {
    for (int r = 0; r < ranks; ++r) {
      exits[static_cast<std::size_t>(r)].rank = r;
      pids.push_back(spawn(program, args(r), env ? env(r) : std::vector<std::string>{}, log_of(r)));
    }
  } catch (...) {
    for (pid_t pid : pids) kill_and_reap(pid);
    throw;
  }
  std::vector<bool> running(pids.size(), true);
  std::size_t left = pids.size();
  while (left > 0) {
    for (std::size_t r = 0; r < pids.size(); ++r) {
      if (!running[r]) continue;
      int status = 0;
      const pid_t done = ::waitpid(pids[r], &status, WNOHANG);
      if (done == pids[r]) {
        record(exits[r], status, start);
        running[r] = false;
        --left;
      }
    }
    if (left == 0) break;
    if (Clock::now() - start > deadline) {
      for (std::size_t r = 0; r < pids.size(); ++r)
        if (running[r]) {
          kill_and_reap(pids[r]);
          exits[r].killed_at_deadline = true;
          exits[r].exit_code = -1;
          exits[r].signal = SIGKILL;
          exits[r].seconds = std::chrono::duration<double>(Clock::now() - start).count();
        }
      break;
    }
    std::this_thread::sleep_for(kPoll);
  }
  for (int r = 0; r < ranks; ++r) exits[static_cast<std::size_t>(r)].log = read_all(log_of(r));
  return exits;
}

std::filesystem::path this_executable() {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot read /proc/self/exe: " + ec.message());
  return p;
}

}  // namespace boundary::gpu
