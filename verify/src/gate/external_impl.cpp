// The gate's --implementation CMD: each run writes the rows as a case file in this tool's own
// temporary directory, runs CMD through /bin/sh, and reads back what it wrote.
#include <boundary/verify/cases.hpp>
#include <boundary/verify/external.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

extern char** environ;

namespace boundary::cli {

namespace st = safetensors;

namespace {

constexpr std::size_t kStderrTail = 2000;  // bytes of CMD's stderr quoted in an error

// A path as one shell word: single quotes, each ' written as '\''.
std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string replace_all(std::string text, const std::string& what, const std::string& with) {
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size()))
    text.replace(at, what.size(), with);
  return text;
}

std::string tail_of(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (text.empty()) return "(nothing)";
  return text.size() > kStderrTail ? "..." + text.substr(text.size() - kStderrTail) : text;
}

// Runs `/bin/sh -c command`: stdin /dev/null, stdout and stderr into files. Returns the wait status.
int run_shell(const std::string& command, const std::filesystem::path& out, const std::filesystem::path& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const char* argv[] = {"sh", "-c", command.c_str(), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, "/bin/sh", &actions, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw InputError("--implementation: cannot start /bin/sh: " + std::string(std::strerror(spawned)));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error("waitpid: " + std::string(std::strerror(errno)));
  return status;
}

// The temporary directory of one gate run and its command; each run gets a fresh subdirectory,
// removed when it is done (a case file can be hundreds of MB).
class Runner {
 public:
  explicit Runner(std::string command) : command_(std::move(command)) {
    for (const char* placeholder : {"{inputs}", "{output}"})
      if (command_.find(placeholder) == std::string::npos)
        throw InputError("--implementation: the command has no " + std::string(placeholder) +
                         " (it is run as: CMD with {inputs} and {output} replaced by paths)");
    std::string dir = (std::filesystem::temp_directory_path() / "boundary-implementation-XXXXXX").string();
    if (!::mkdtemp(dir.data())) throw InputError("--implementation: cannot make a temporary directory: " + std::string(std::strerror(errno)));
    dir_ = dir;
  }
  ~Runner() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  StageValues run(const Constants& constants, const BoundTensors& bound) {
    const std::filesystem::path call = dir_ / std::to_string(calls_++);
    std::filesystem::create_directory(call);
    struct Cleanup {
      std::filesystem::path path;
      ~Cleanup() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
      }
    } cleanup{call};
    const std::filesystem::path inputs = call / "inputs.safetensors", output = call / "output.safetensors";
    st::File file = inputs_file(constants, bound);
    cases::describe(file, constants, true);
    st::write_file(inputs, file);
    const std::string command =
        replace_all(replace_all(command_, "{inputs}", shell_quote(inputs.string())), "{output}", shell_quote(output.string()));
    const int status = run_shell(command, call / "stdout", call / "stderr");
    const std::string what = "the implementation `" + command_ + "` on " + std::to_string(bound.m) + " rows";
    if (WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0))
      throw InputError(what + (WIFSIGNALED(status) ? " was killed by signal " + std::to_string(WTERMSIG(status))
                                                   : " exited with status " + std::to_string(WEXITSTATUS(status))) +
                       "; its stderr ends with:\n" + tail_of(call / "stderr"));
    if (!std::filesystem::exists(output))
      throw InputError(what + " exited 0 but wrote no {output} file; its stderr ends with:\n" + tail_of(call / "stderr"));
    try {
      return cases::read_outputs(output, bound.m, true);
    } catch (const InputError& e) {
      throw InputError(what + " wrote a bad {output} file: " + e.what());
    }
  }

 private:
  std::string command_;
  std::filesystem::path dir_;
  std::size_t calls_ = 0;
};

}  // namespace

GateVariant external_variant() {
  return {"implementation", GateVariant::Kind::external, std::nullopt, true, false, false};
}

GateGpuHook make_external_hook(const std::string& command) {
  const auto runner = std::make_shared<Runner>(command);
  GateGpuHook hook;
  hook.probe = [] { return std::optional<report::GpuInfo>(); };
  hook.run = [runner](const Constants& c, const BoundTensors& b, const GateVariant&) { return runner->run(c, b); };
  hook.run_with_intermediates = [](const Constants&, const BoundTensors&, const GateVariant&) {
    return std::optional<StageValues>();
  };
  hook.run_mutant = [](Mutant, const Constants&, const BoundTensors&, const GateVariant&) -> StageValues {
    throw std::logic_error("an external implementation has no planted bugs");
  };
  return hook;
}

}  // namespace boundary::cli
