#include "boundary/verify/atomic_file.hpp"

#include <boundary/types.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <random>
#include <string>
#include <system_error>
#include <utility>

namespace boundary::io {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const fs::path& target, const std::string& what) {
  throw InputError(target.string() + ": " + what);
}

std::string errno_message(int err) { return std::error_code(err, std::generic_category()).message(); }

// A file descriptor and, until committed, the temporary path it names: both released on scope exit.
class Temporary {
 public:
  Temporary(fs::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  Temporary(const Temporary&) = delete;
  Temporary& operator=(const Temporary&) = delete;
  ~Temporary() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  const fs::path& path() const { return path_; }
  int close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  void commit() { committed_ = true; }

 private:
  fs::path path_;
  int fd_;
  bool committed_ = false;
};

// In the target's directory, since rename() is atomic only within one file system; O_EXCL with
// a random name, so that concurrent writers to one target never share a temporary.
Temporary create_temporary(const fs::path& target) {
  std::random_device random;
  const fs::path dir = target.parent_path();
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::uint64_t tag = (std::uint64_t{random()} << 32) ^ random();
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(tag));
    std::string name = ".";  // appended piecewise: GCC 12 warns falsely (-Wrestrict) on "." + s + ...
    name += target.filename().string();
    name += ".tmp-";
    name += hex;
    const fs::path candidate = dir / name;
    const int fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return Temporary(candidate, fd);
    if (errno != EEXIST) {
      const std::string dir_name = dir.empty() ? "." : dir.string();
      fail(target, "cannot create a temporary file in " + dir_name + ": " + errno_message(errno));
    }
  }
  fail(target, "cannot create a temporary file: every name tried exists");
}

void write_all(int fd, std::span<const std::uint8_t> bytes, const fs::path& target) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(target, "cannot write: " + errno_message(n < 0 ? errno : EIO));
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
}

}  // namespace

void write_file_atomically(const fs::path& path, std::span<const std::uint8_t> bytes) {
  if (!path.has_filename()) fail(path, "names a directory, expected a file path");
  Temporary tmp = create_temporary(path);
  write_all(tmp.fd(), bytes, path);
  // fsync before rename: after a crash the target is the old file or the whole new one.
  if (::fsync(tmp.fd()) != 0) fail(path, "cannot sync: " + errno_message(errno));
  if (tmp.close() != 0) fail(path, "cannot close: " + errno_message(errno));
  if (::rename(tmp.path().c_str(), path.c_str()) != 0)
    fail(path, "cannot rename the temporary file over it: " + errno_message(errno));
  tmp.commit();
}

void write_file_atomically(const fs::path& path, std::string_view text) {
  write_file_atomically(path, {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
}

}  // namespace boundary::io
