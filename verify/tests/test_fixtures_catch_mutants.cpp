// The committed hardware fixtures (fixtures/boundary: inputs and the H200's outputs) against the
// emulator twins of the planted bugs: each twin, replayed on every fixture, must differ from the
// hardware's bits somewhere, or these fixtures could not tell that bug from the contract. The
// production build must match every fixture, so that a twin's mismatches are its bug's alone.
#include <boundary/verify/fixture_metadata.hpp>
#include <boundary/mutant_emulators.hpp>
#include <boundary/verify/safetensors.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace boundary;
namespace st = boundary::safetensors;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = BOUNDARY_SOURCE_DIR "/fixtures/boundary";

std::vector<fs::path> committed_fixtures() {
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(kFixtures))
    if (e.path().extension() == ".safetensors") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Elements whose bits differ between two tensors of one dtype and shape.
std::int64_t differing(const st::Tensor& expected, const st::Tensor& actual) {
  const std::size_t size = st::dtype_size(expected.dtype);
  std::int64_t n = 0;
  for (std::size_t i = 0; i < expected.bytes.size(); i += size)
    n += std::memcmp(&expected.bytes[i], &actual.bytes[i], size) != 0;
  return n;
}

// Elements of out and new_stream (when recorded) that the build of m gets wrong on fixture f.
std::int64_t mismatches(const Fixture& f, Mutant m, unsigned threads) {
  st::Tensor out = st::make_tensor(st::Dtype::BF16, {f.bound.m, kH});
  st::Tensor new_stream = st::make_tensor(st::Dtype::F32, {f.bound.m, kH});
  ref::Outputs o;
  o.out = out.data<std::uint16_t>();
  if (f.new_stream) o.new_stream = new_stream.data<float>();
  mutants::run_emulator(m, f.constants, f.bound.operands, f.bound.inputs, o, threads);
  return differing(*f.out, out) + (f.new_stream ? differing(*f.new_stream, new_stream) : 0);
}

struct Caught {
  int fixtures = 0;
  std::int64_t elements = 0;
};

}  // namespace

TEST_CASE("every emulator twin of a planted bug fails the replay of the committed fixtures") {
  const std::vector<fs::path> files = committed_fixtures();
  REQUIRE_MESSAGE(!files.empty(), "no fixtures in " << kFixtures);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());

  std::map<Mutant, Caught> caught;
  for (const fs::path& path : files) {
    const Fixture fixture(path);
    CAPTURE(fixture.name);
    REQUIRE(mismatches(fixture, Mutant::none, threads) == 0);  // production: the hardware's bits
    for (Mutant m : mutants::kEmulatorTwins) {
      const std::int64_t n = mismatches(fixture, m, threads);
      caught[m].fixtures += n > 0;
      caught[m].elements += n;
    }
  }

  std::printf("%zu fixtures against %zu emulator twins:\n", files.size(), mutants::kEmulatorTwins.size());
  for (Mutant m : mutants::kEmulatorTwins)
    std::printf("  %-18s caught by %2d of %zu fixtures, %lld elements differ\n", std::string(mutant_name(m)).c_str(),
                caught[m].fixtures, files.size(), static_cast<long long>(caught[m].elements));
  for (Mutant m : mutants::kEmulatorTwins) {
    CAPTURE(mutant_name(m));
    CHECK_MESSAGE(caught[m].fixtures > 0, "survives every committed fixture: they cannot see this bug");
  }
}
