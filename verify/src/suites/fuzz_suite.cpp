// The fuzz suite and the operand specials: realistic rows (contract section 9) with random bit
// patterns, and gates or weights holding NaN and infinity in one column.
#include <boundary/verify/edge_suite.hpp>

#include <boundary/verify/boundary_tensors.hpp>
#include <boundary/verify/edge_rows.hpp>
#include <boundary/verify/generate.hpp>

#include <cstring>
#include <string>

namespace boundary::suite {

namespace {
namespace st = safetensors;

// NaN payloads (quiet and signalling, both signs) and infinities, per dtype width.
struct Special { const char* name; std::uint32_t f32; std::uint16_t half; };  // half: BF16 and FP16 share the sign bit
constexpr Special kSpecials[] = {
    {"+quiet NaN with a payload", 0x7FC00001, 0x7E01}, {"-quiet NaN with a payload", 0xFFC00001, 0xFE01},
    {"+signalling NaN", 0x7F800001, 0x7C01},           {"-signalling NaN", 0xFF800001, 0xFC01},
    {"+Inf", 0x7F800000, 0x7C00},                      {"-Inf", 0xFF800000, 0xFC00},
};
constexpr int kSpecialColumn = 4321;

std::uint16_t half_pattern(const Special& s, st::Dtype dtype) {
  if (dtype == st::Dtype::F16) return s.half;
  return static_cast<std::uint16_t>(s.f32 >> 16 | (s.f32 & 1u));  // BF16: the F32 pattern's top half, payload kept
}

}  // namespace

Suite make_fuzz_suite(const Constants& constants, std::int64_t rows, std::uint64_t seed, StreamDtype stream_dtype) {
  Suite suite{"fuzz", generate_inputs(constants, rows, seed, stream_dtype), {}};
  st::Tensor& branch = suite.inputs.tensors.at("branch");
  st::Tensor& stream = suite.inputs.tensors.at("stream");
  const std::size_t stream_size = st::dtype_size(stream.dtype);
  // Another stream of numbers than the generator's, so that the realistic values stay those of `seed`.
  Rng rng(seed ^ 0xF022F022F022F022ull);
  for (std::int64_t row = 0; row < rows; ++row) {
    // Half the rows stay realistic; the others get 1 to 8 random bit patterns (one NaN empties a
    // whole row's out, so a few elements per row keep most rows informative).
    if (rng.next() & 1u) {
      suite.row_family.emplace_back("fuzz: realistic");
      continue;
    }
    const auto n = static_cast<int>(1 + rng.next() % 8);
    for (int j = 0; j < n; ++j) {
      const auto c = static_cast<std::size_t>(row * kH) + static_cast<std::size_t>(rng.next() % kH);
      const std::uint64_t bits = rng.next();
      if (rng.next() & 1u) std::memcpy(&branch.bytes[c * 2], &bits, 2);
      else std::memcpy(&stream.bytes[c * stream_size], &bits, stream_size);
    }
    suite.row_family.push_back("fuzz: " + std::to_string(n) + " random bit patterns in a realistic row");
  }
  suite.inputs.metadata["generator"] = "fuzz suite: realistic rows, half of them with 1 to 8 random bit patterns";
  return suite;
}

std::vector<Suite> make_operand_special_suites(const Constants& constants, std::uint64_t seed, StreamDtype stream_dtype) {
  constexpr std::int64_t kRows = 4;
  std::vector<Suite> suites;
  for (const char* operand : {"alpha", "beta", "post_weight", "pre_weight"}) {
    for (const Special& s : kSpecials) {
      st::File f = generate_inputs(constants, kRows, seed, stream_dtype);
      const auto it = f.tensors.find(operand);
      if (it == f.tensors.end()) continue;  // a norm without a weight
      st::Tensor& t = it->second;
      const std::size_t size = st::dtype_size(t.dtype);
      if (size == 4) std::memcpy(&t.bytes[kSpecialColumn * size], &s.f32, 4);
      else {
        const std::uint16_t h = half_pattern(s, t.dtype);
        std::memcpy(&t.bytes[kSpecialColumn * size], &h, 2);
      }
      const std::string name = std::string("operand special: ") + operand + "[" + std::to_string(kSpecialColumn) + "] = " + s.name;
      f.metadata["generator"] = name;
      suites.push_back({name, std::move(f), std::vector<std::string>(kRows, "realistic")});
    }
  }
  return suites;
}

}  // namespace boundary::suite
