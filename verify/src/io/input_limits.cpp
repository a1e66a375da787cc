#include <boundary/verify/input_limits.hpp>
#include <boundary/types.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace boundary::io {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

std::string size_text(std::uint64_t bytes) {
  return bytes >= (1ull << 30) ? std::to_string(bytes >> 30) + " GiB"
         : bytes >= (1ull << 20) ? std::to_string(bytes >> 20) + " MiB"
                                 : std::to_string(bytes) + " bytes";
}

}  // namespace

std::vector<std::uint8_t> read_input_file(const fs::path& path, std::uint64_t max_bytes, std::string_view what) {
  const auto fail = [&](const std::string& why) { throw InputError(path.string() + ": " + why); };
  if (path.empty()) throw InputError("an empty path, expected " + std::string(what));
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever before fstat refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail("cannot open: " + errno_text(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0) fail("cannot stat: " + errno_text(errno));
  if (S_ISDIR(st.st_mode)) fail("is a directory, expected " + std::string(what));
  if (!S_ISREG(st.st_mode)) fail("is not a regular file (a device, pipe or socket), expected " + std::string(what));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes)
    fail("is " + std::to_string(size) + " bytes, more than the limit of " + size_text(max_bytes) + " for " +
         std::string(what));
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  // Reads what fstat promised; a file that grows meanwhile is cut there, one that shrinks is refused.
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot read: " + errno_text(errno));
    if (n == 0) fail("shrank while being read");
    done += static_cast<std::size_t>(n);
  }
  return bytes;
}

std::string brief_text(std::string_view text) {
  constexpr std::size_t kMax = 40;
  if (text.size() <= kMax) return std::string(text);
  return std::string(text.substr(0, kMax)) + "... (" + std::to_string(text.size()) + " bytes)";
}

std::string brief(const nlohmann::json& value) {
  using nlohmann::json;
  if (value.is_array() || value.is_object()) {
    // A few scalars are shown as they are; anything larger or nested only by its size.
    const bool small = value.size() <= 4 && std::all_of(value.begin(), value.end(), [](const json& v) {
      return v.is_primitive() && (!v.is_string() || v.get_ref<const std::string&>().size() <= 40);
    });
    if (small) return value.dump(-1, ' ', false, json::error_handler_t::replace);
    return std::string(value.is_array() ? "an array" : "an object") + " of size " + std::to_string(value.size());
  }
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    // Cut before quoting; dump's replace mode mends a UTF-8 sequence the cut split.
    const std::string quoted = json(s.substr(0, 40)).dump(-1, ' ', false, json::error_handler_t::replace);
    return s.size() <= 40 ? quoted : quoted + "... (" + std::to_string(s.size()) + " bytes)";
  }
  return value.dump();  // a number, boolean or null: short
}

void check_outputs(const std::vector<OutputPath>& outputs, const std::vector<fs::path>& inputs) {
  std::error_code ec;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string& option = outputs[i].option;  // not a structured binding: lambdas capture it
    const fs::path& path = outputs[i].path;
    const auto fail = [&](const std::string& why) { throw InputError(option + " '" + path.string() + "': " + why); };
    if (path.empty()) throw InputError(option + ": an empty path, expected a file path");
    if (!path.has_filename() || fs::is_directory(path, ec)) fail("names a directory, expected a file path");
    if (!path.parent_path().empty() && !fs::is_directory(path.parent_path(), ec))
      fail("its directory does not exist");
    if (!fs::exists(path, ec)) continue;
    for (const fs::path& input : inputs)
      if (fs::equivalent(path, input, ec))
        fail("is the input " + input.string() + " of this run: refusing to overwrite an input");
  }
  // Outputs need not exist yet: two are the same file when they resolve to the same path.
  for (std::size_t i = 0; i < outputs.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (fs::weakly_canonical(outputs[i].path, ec) == fs::weakly_canonical(outputs[j].path, ec))
        throw InputError(outputs[i].option + " '" + outputs[i].path.string() + "': is also the output of " +
                         outputs[j].option);
}

std::uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
}

}  // namespace boundary::io
