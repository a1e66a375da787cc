// Eigen 3.4 as an independent oracle of the narrowing and widening conversions: its scalar
// Eigen::bfloat16 and Eigen::half round to nearest even like the GPU on every non-NaN float, so the
// emulator's f32_to_bf16_rn and f32_to_f16_rn must equal them on all 2^32 inputs, and bf16_to_f32
// and f16_to_f32 on all 2^16. NaNs are compared as a class: Eigen makes 0x7FC0 / 0x7E00-style NaNs
// where the GPU makes 0x7FFF. Only Eigen's scalar code may run: its F16C path (_cvtss_sh) and the
// AVX512-BF16 instructions (which flush subnormals) are other implementations, so this file refuses
// to compile with them (built for baseline x86-64 and EIGEN_DONT_VECTORIZE, see CMakeLists.txt).
#include <boundary/primitives.hpp>

#include <Eigen/Core>

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#if defined(__F16C__) || defined(EIGEN_HAS_FP16_C) || defined(__AVX512BF16__) || !defined(EIGEN_DONT_VECTORIZE)
#error "the Eigen oracle must use Eigen's scalar conversions: build without -mf16c / AVX512-BF16, with EIGEN_DONT_VECTORIZE"
#endif
static_assert(EIGEN_WORLD_VERSION == 3 && EIGEN_MAJOR_VERSION == 4, "the oracle is Eigen 3.4");

using namespace boundary;

namespace {

bool bf16_nan(std::uint16_t h) { return (h & 0x7F80u) == 0x7F80u && (h & 0x7Fu) != 0; }
bool f16_nan(std::uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }
bool same_or_both_nan(float a, float b) {
  return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b) || (std::isnan(a) && std::isnan(b));
}

struct Tally {
  std::uint64_t bf16 = 0, f16 = 0;           // inputs whose result differs
  std::uint32_t first_bf16 = 0, first_f16 = 0;  // the first such input (meaningful when counted)
};

// Every float whose bits are in [begin, end), through both narrowing conversions.
Tally narrow(std::uint64_t begin, std::uint64_t end) {
  Tally t;
  for (std::uint64_t i = begin; i < end; ++i) {
    const auto bits = static_cast<std::uint32_t>(i);
    const float x = std::bit_cast<float>(bits);
    const std::uint16_t ours_b = ref::f32_to_bf16_rn(x), eigen_b = Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(x));
    if (ours_b != eigen_b && !(bf16_nan(ours_b) && bf16_nan(eigen_b)) && t.bf16++ == 0) t.first_bf16 = bits;
    const std::uint16_t ours_h = ref::f32_to_f16_rn(x), eigen_h = Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(x));
    if (ours_h != eigen_h && !(f16_nan(ours_h) && f16_nan(eigen_h)) && t.f16++ == 0) t.first_f16 = bits;
  }
  return t;
}

}  // namespace

TEST_CASE("f32_to_bf16_rn and f32_to_f16_rn equal Eigen's scalar bfloat16 and half on all 2^32 floats") {
  ref::check_host_float_environment();  // Eigen's half rounding is float arithmetic on subnormals
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  const std::uint64_t total = std::uint64_t{1} << 32;
  std::vector<Tally> tallies(n);
  std::vector<std::thread> threads;
  for (unsigned k = 0; k < n; ++k)
    threads.emplace_back([&, k] { tallies[k] = narrow(total * k / n, total * (k + 1) / n); });
  for (std::thread& t : threads) t.join();
  Tally all;
  for (const Tally& t : tallies) {  // in input order: the first tally with a mismatch has the first
    if (t.bf16 && !all.bf16) all.first_bf16 = t.first_bf16;
    if (t.f16 && !all.f16) all.first_f16 = t.first_f16;
    all.bf16 += t.bf16;
    all.f16 += t.f16;
  }
  CAPTURE(all.first_bf16);
  CAPTURE(all.first_f16);
  CHECK(all.bf16 == 0);
  CHECK(all.f16 == 0);
}

TEST_CASE("bf16_to_f32 and f16_to_f32 equal Eigen's on all 2^16 patterns") {
  int bf16 = 0, f16 = 0;
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    bf16 += !same_or_both_nan(ref::bf16_to_f32(b), static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(b)));
    f16 += !same_or_both_nan(ref::f16_to_f32(b), static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(b)));
  }
  CHECK(bf16 == 0);
  CHECK(f16 == 0);
}
