// Host memory for what Boundary::run writes for m rows, and the Outputs that point into it: the
// one place that fills an Outputs for the tests, the suites and the bench.
#pragma once

#include <boundary/reference.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace boundary::ref {

struct Results {
  // outputs: out and new_stream. everything: the intermediates and the all-reduced branch too
  // (each costs the emulator a store per element or row, so a run asks only for what it reads).
  enum class Wanted { outputs, everything };

  explicit Results(std::int64_t m, Wanted wanted = Wanted::outputs)
      : out(elements(m)), new_stream(elements(m)) {
    if (wanted == Wanted::outputs) return;
    branch.resize(elements(m));
    y_b.resize(elements(m));
    z.resize(elements(m));
    for (std::vector<float>* v : {&post_row_sum, &r1, &pre_row_sum, &r2}) v->resize(static_cast<std::size_t>(m));
  }

  // Every tensor held; null where it was not wanted.
  Outputs outputs() {
    return {.out = at(out),
            .new_stream = at(new_stream),
            .branch = at(branch),
            .post_row_sum = at(post_row_sum),
            .r1 = at(r1),
            .y_b = at(y_b),
            .z = at(z),
            .pre_row_sum = at(pre_row_sum),
            .r2 = at(r2)};
  }

  std::vector<std::uint16_t> out;         // BF16 [m, H]
  std::vector<float> new_stream;          // F32 [m, H]
  std::vector<std::uint16_t> branch;      // BF16 [m, H]
  std::vector<float> post_row_sum, r1;    // F32 [m]
  std::vector<std::uint16_t> y_b, z;      // BF16 [m, H]
  std::vector<float> pre_row_sum, r2;     // F32 [m]

 private:
  static std::size_t elements(std::int64_t m) { return static_cast<std::size_t>(m) * kH; }
  template <class T>
  static T* at(std::vector<T>& v) {
    return v.empty() ? nullptr : v.data();
  }
};

}  // namespace boundary::ref
