// Fits rsqrt_interpolated's coefficients to the captured MUFU.RSQ values (read through
// rsqrt_approx_ftz_f32, i.e. the table built into the library) and prints the table source,
// reference/src/rsqrt_interpolated_table.cpp. With --check FILE it compares instead and exits 1 on
// any difference (ctest: the committed table is the fit of the committed capture). For another
// GPU: capture its table (hardware/), rebuild, run this; a segment without exactly one
// solution means that GPU's unit is built otherwise.
//
// Per segment: the least-squares quadratic in dx seeds (c1, c2); every (c1, c2) within +-kWindow
// is tried exactly: the captured y(dx) = floor((c0 * 2^14 - c1 * dx - 1 + 4 * c2 * sq(dx)) / 2^16)
// for all dx holds iff c0 * 2^14 lies in [max v, min v + 2^16), v = y * 2^16 + c1 * dx + 1 -
// 4 * c2 * sq(dx). The interval is a few units wide; the search needs exactly one hit.
#include "../src/rsqrt_interpolated_table.hpp"

#include <boundary/primitives.hpp>
#include <boundary/rsqrt_model.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace interp = boundary::ref::rsqrt_interpolation;
constexpr std::uint32_t kOffsets = 1u << interp::kOffsetBits;
constexpr int kWindow = 4;

// The same truncated squarer as reference/src/rsqrt_interpolated.cpp, written out once more on
// purpose: the fit must not share code with the model it checks.
std::int64_t truncated_square(std::uint32_t dx) {
  std::uint64_t sum = 0;
  for (int i = 0; i < interp::kOffsetBits; ++i)
    for (int j = i; j < interp::kOffsetBits; ++j) {
      const bool bit = ((dx >> i) & 1u) && ((dx >> j) & 1u);
      const int weight = (i == j) ? 2 * i : i + j + 1;
      if (bit && weight >= 19) sum += std::uint64_t{1} << weight;
    }
  return static_cast<std::int64_t>(sum >> 19);
}

// The captured significand y (result = y * 2^-24) for table index i.
std::int64_t captured_y(std::uint32_t index) {
  const float x = std::bit_cast<float>(boundary::rsqrt_model::table_input_bits(index));
  return static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(boundary::ref::rsqrt_approx_ftz_f32(x))) -
         (126 << 23) + (1 << 23);
}

// Least-squares c1, c2 (the model's units) of y over one segment.
std::array<double, 2> least_squares(const std::vector<std::int64_t>& y, std::uint32_t first) {
  double m[3][4] = {};
  for (std::uint32_t dx = first; dx < kOffsets; ++dx) {
    const double t = dx / static_cast<double>(kOffsets), p[3] = {1, t, t * t};
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) m[r][c] += p[r] * p[c];
      m[r][3] += p[r] * static_cast<double>(y[dx] - y[first]);
    }
  }
  for (int k = 0; k < 3; ++k)  // Gauss-Jordan; the 3x3 normal matrix is well conditioned in t
    for (int r = 0; r < 3; ++r)
      if (r != k) {
        const double f = m[r][k] / m[k][k];
        for (int c = k; c < 4; ++c) m[r][c] -= f * m[k][c];
      }
  // y ~ b1 * t + b2 * t^2 with t = dx / 2^17: c1 = -b1 / 2, c2 = b2 / 2 (model: c1 * dx / 2^16,
  // c2 * dx^2 / 2^33).
  return {-m[1][3] / m[1][1] / 2, m[2][3] / m[2][2] / 2};
}

int fit(std::string& table) {
  std::vector<std::int64_t> y(kOffsets), sq(kOffsets);
  for (std::uint32_t dx = 0; dx < kOffsets; ++dx) sq[dx] = truncated_square(dx);
  std::ostringstream rows;
  for (int s = 0; s < interp::kSegments; ++s) {
    const std::uint32_t base = static_cast<std::uint32_t>(s) << interp::kOffsetBits;
    for (std::uint32_t dx = 0; dx < kOffsets; ++dx) y[dx] = captured_y(base + dx);
    const std::uint32_t first = (s == 0) ? 1 : 0;  // f = 1 is the exact rule, not the quadratic
    const auto seed = least_squares(y, first);
    int hits = 0;
    std::int64_t c0 = 0, c1 = 0, c2 = 0;
    for (std::int64_t a = std::llround(seed[0]) - kWindow; a <= std::llround(seed[0]) + kWindow; ++a)
      for (std::int64_t b = std::llround(seed[1]) - kWindow; b <= std::llround(seed[1]) + kWindow; ++b) {
        std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
        for (std::uint32_t dx = first; dx < kOffsets; ++dx) {
          const std::int64_t v = (y[dx] << 16) + a * dx + 1 - 4 * b * sq[dx];
          lo = std::max(lo, v);
          hi = std::min(hi, v + (1 << 16));
        }
        const std::int64_t c = (lo + (1 << 14) - 1) >> 14;  // the least c0 with c0 * 2^14 >= lo
        if ((c << 14) < hi) { ++hits; c0 = c; c1 = a; c2 = b; }
      }
    if (hits != 1) {
      std::fprintf(stderr, "segment %d: %d solutions near c1 = %.1f, c2 = %.1f\n", s, hits, seed[0], seed[1]);
      return 1;
    }
    rows << ((s % 4 == 0) ? "    " : " ") << '{' << c0 << ", " << c1 << ", " << c2 << "},";
    if (s % 4 == 3) rows << "  // " << s - 3 << '-' << s << '\n';
  }
  table = "// The 128 segments of rsqrt_interpolated, {c0, c1, c2} (format: rsqrt_interpolated_table.hpp),\n"
          "// printed by reference/tools/fit_rsqrt_interpolation.cpp from the H200 capture (fixtures/rsqrt):\n"
          "// per segment the one (c1, c2) near the least-squares quadratic for which some c0 reproduces all\n"
          "// 2^17 captured values, and that c0 (its interval is 1 to 4 units of 2^-40 wide and holds one\n"
          "// point of the 2^-26 grid).\n"
          "#include \"rsqrt_interpolated_table.hpp\"\n\n"
          "namespace boundary::ref::rsqrt_interpolation {\n\n"
          "const Segment kSegmentTable[kSegments] = {\n" +
          rows.str() + "};\n\n}  // namespace boundary::ref::rsqrt_interpolation\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string table;
  if (fit(table) != 0) return 1;
  if (argc == 3 && std::string(argv[1]) == "--check") {
    std::ifstream f(argv[2]);
    const std::string committed{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    if (committed == table) return 0;
    std::fprintf(stderr, "%s is not the fit of the capture; the fit prints:\n%s", argv[2], table.c_str());
    return 1;
  }
  if (argc != 1) {
    std::fprintf(stderr, "usage: %s [--check reference/src/rsqrt_interpolated_table.cpp]\n", argv[0]);
    return 2;
  }
  std::fputs(table.c_str(), stdout);
  return 0;
}
