// libFuzzer: a fixture as replay reads it before any arithmetic: the safetensors file, then its
// __metadata__ (the constants JSON inside it, the variant's store_stream), the inputs bound under
// those constants and the recorded outputs. Anything else than a checked fixture or an InputError
// (a sanitizer report, another exception, a crash) is a finding.
//
// An input is a fixture file as it is, or a padded one: the tag "BVPAD", a 4-byte little-endian
// count n and a file's first bytes, to which n zero bytes are appended. No parser reads the values
// of the tensor data, only its extent, and a fixture holds at least 180 KB of it behind a 1 to 2 KB
// header: fuzz.sh seeds with padded fixtures (fixture_seeds.py), so that libFuzzer mutates and
// hashes the header, not the data, and runs several times faster. Every file stays reachable (n = 0
// is the file itself; a padded input whose file part exceeds 64 KiB, or n 8 MiB, is skipped), the
// extent checks included (n is mutated like any other byte).
#include <boundary/verify/fixture_metadata.hpp>

#include <sanitizer/asan_interface.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

using namespace boundary;
namespace st = boundary::safetensors;

namespace {

constexpr std::string_view kTag = "BVPAD";
constexpr std::size_t kMaxPad = std::size_t{8} << 20;  // above the largest committed fixture (2.3 MB)

void check_fixture(std::span<const std::uint8_t> bytes) {
  try {
    const Fixture fixture(st::parse(bytes, "fuzz"), "fuzz");
  } catch (const InputError&) {
  }
}

// The padded file lives at the end of one zeroed buffer, kept from run to run (a new 300 KB
// buffer a run would cost more in page faults and zeroing than the parsing); ASan poisons the rest
// of the buffer, so that a read before or past the file is still a finding.
class PaddedFile {
 public:
  static constexpr std::size_t kCapacity = kMaxPad + (std::size_t{1} << 16);
  PaddedFile() : buffer_(std::make_unique<std::uint8_t[]>(kCapacity)) {}
  // The file of `head` bytes and `pad` zeros: checked, then the buffer zeroed again.
  void check(std::span<const std::uint8_t> head, std::size_t pad) {
    const std::size_t n = head.size() + pad;
    std::uint8_t* const file = buffer_.get() + ((kCapacity - n) & ~std::size_t{7});  // ASan's 8-byte granules
    ASAN_POISON_MEMORY_REGION(buffer_.get(), file - buffer_.get());
    ASAN_POISON_MEMORY_REGION(file + n, buffer_.get() + kCapacity - (file + n));
    std::memcpy(file, head.data(), head.size());
    check_fixture({file, n});
    std::memset(file, 0, head.size());
    ASAN_UNPOISON_MEMORY_REGION(buffer_.get(), kCapacity);
  }

 private:
  std::unique_ptr<std::uint8_t[]> buffer_;  // zero-initialized
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::size_t head = kTag.size() + 4;
  if (size < head || std::memcmp(data, kTag.data(), kTag.size()) != 0) {
    check_fixture({data, size});
    return 0;
  }
  std::size_t pad = 0;
  for (std::size_t i = 0; i < 4; ++i) pad |= std::size_t{data[kTag.size() + i]} << (8 * i);
  if (pad > kMaxPad || size - head > PaddedFile::kCapacity - kMaxPad) return 0;
  static PaddedFile padded;
  padded.check({data + head, size - head}, pad);
  return 0;
}
