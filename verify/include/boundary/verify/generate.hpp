// Realistic boundary inputs (contract section 9), made from a seed: what a bring-up engineer
// would see in the Muse Spark decoder, for emulate --generate and the benchmarks.
#pragma once

#include <boundary/verify/safetensors.hpp>
#include <boundary/types.hpp>

#include <cstdint>

namespace boundary {

// A small, fully specified generator: the same seed gives the same numbers with any standard
// library (std::normal_distribution is implementation-defined, so it is not used).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();        // splitmix64
  double uniform();            // [0, 1), 53 bits
  double normal();             // Box-Muller
 private:
  std::uint64_t state_;
};

// Tensors branch BF16 [rows, 8192], stream (F32 or BF16) [rows, 8192], alpha and beta F32
// [8192], and post_weight / pre_weight in their dtypes where the constants give a weight:
//   gates from a BF16 gate vector q ~ N(0, 1): u = q / 0.3, beta = sigmoid(u),
//   alpha = sqrt(max(sigmoid(-u) * (1 + beta), 1e-3)); weights ~ N(0, 0.02) (zero-centred
//   gamma); each row's branch and stream ~ N(0, s^2) with a per-row scale s, and a few outlier
//   channels, as decoder activations have.
safetensors::File generate_inputs(const Constants& constants, std::int64_t rows, std::uint64_t seed,
                                  StreamDtype stream_dtype = StreamDtype::f32);

// R rank partials, BF16 [ranks, rows, 8192], for the all-reduce boundary (contract section 7):
// each value ~ N(0, 1) * 2^e with e uniform in [-20, 20], so that their FP32 sums lose different
// bits in different rank orders: a kernel that sums in another order cannot pass on them.
safetensors::Tensor generate_partials(std::int64_t rows, int ranks, std::uint64_t seed);

}  // namespace boundary
