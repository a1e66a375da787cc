// Emulator throughput: boundary rows per second on one host thread, for both stock boundaries
// (contract section 9), FP32 stream stored. A benchmark program, not a test: prints medians.
//
//   boundary_emulator_bench [--rows N] [--repeats K]
#include <boundary/reference.hpp>
#include <boundary/results.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace boundary;

struct Stock {
  const char* name;
  Constants constants;
};

// Contract section 9.
std::vector<Stock> stock_boundaries() {
  NormConstants no_weight{.eps = 1e-8};
  NormConstants pre{.eps = 1e-5, .gain_center = 1.0};
  NormConstants post_scaled{.eps = 1e-8, .gain_center = 1.0, .input_scale = true};
  return {{"post-attention", {no_weight, pre}}, {"post-ffn", {post_scaled, pre}}};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t rows = 2000;
  int repeats = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rows")) rows = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto bf16 = [&](float scale) { return ref::f32_to_bf16_rn(normal(rng) * scale); };
  const std::size_t n = static_cast<std::size_t>(rows) * kH;
  std::vector<std::uint16_t> branch(n), weight(kH);
  std::vector<float> stream(n), alpha(kH), beta(kH);
  ref::Results results(rows);
  for (auto& v : branch) v = bf16(1.0f);
  for (auto& v : stream) v = normal(rng);
  for (auto& v : weight) v = bf16(0.02f);
  for (int c = 0; c < kH; ++c) {
    alpha[c] = 0.8f + 0.01f * normal(rng);
    beta[c] = 0.6f + 0.01f * normal(rng);
  }

  std::printf("%-16s %10s %12s %14s\n", "boundary", "rows", "median_ms", "rows_per_s");
  for (const Stock& s : stock_boundaries()) {
    ref::Operands ops{alpha.data(), beta.data(), s.constants.post.has_weight() ? weight.data() : nullptr,
                      weight.data()};
    const ref::Boundary boundary(s.constants, ops);
    ref::Inputs in;
    in.m = rows;
    in.branch = branch.data();
    in.stream = stream.data();
    const ref::Outputs o = results.outputs();
    std::vector<double> ms;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      boundary.run(in, o, 1);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    const double m = median(ms);
    std::printf("%-16s %10lld %12.2f %14.0f\n", s.name, static_cast<long long>(rows), m,
                static_cast<double>(rows) / (m / 1e3));
  }
  return 0;
}
