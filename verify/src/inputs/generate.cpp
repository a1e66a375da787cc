#include <boundary/verify/boundary_tensors.hpp>
#include <boundary/verify/generate.hpp>
#include <boundary/primitives.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <span>
#include <string>

namespace boundary {

namespace st = safetensors;

std::uint64_t Rng::next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }

double Rng::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]: log is finite
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

namespace {

constexpr int kOutlierChannels = 4;

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

void fill_weight(st::Tensor& t, WeightDtype dtype, Rng& rng) {
  for (int c = 0; c < kH; ++c) {
    const auto w = static_cast<float>(0.02 * rng.normal());
    switch (dtype) {
      case WeightDtype::bf16: t.data<std::uint16_t>()[c] = ref::f32_to_bf16_rn(w); break;
      case WeightDtype::fp16: t.data<std::uint16_t>()[c] = ref::f32_to_f16_rn(w); break;
      case WeightDtype::fp32: t.data<float>()[c] = w; break;
    }
  }
}

}  // namespace

st::File generate_inputs(const Constants& constants, std::int64_t rows, std::uint64_t seed,
                         StreamDtype stream_dtype) {
  Rng rng(seed);
  st::File f;
  st::Tensor alpha = st::make_tensor(st::Dtype::F32, {kH});
  st::Tensor beta = st::make_tensor(st::Dtype::F32, {kH});
  for (int c = 0; c < kH; ++c) {
    const double q = ref::bf16_to_f32(ref::f32_to_bf16_rn(static_cast<float>(rng.normal())));
    const double u = q / 0.3;
    const double b = sigmoid(u);
    beta.data<float>()[c] = static_cast<float>(b);
    alpha.data<float>()[c] = static_cast<float>(std::sqrt(std::max(sigmoid(-u) * (1.0 + b), 1e-3)));
  }
  f.tensors["alpha"] = std::move(alpha);
  f.tensors["beta"] = std::move(beta);
  for (const auto& [norm, name] : {std::pair{&constants.post, "post_weight"}, std::pair{&constants.pre, "pre_weight"}}) {
    if (!norm->has_weight()) continue;
    st::Tensor w = st::make_tensor(weight_tensor_dtype(norm->weight_dtype), {kH});
    fill_weight(w, norm->weight_dtype, rng);
    f.tensors[name] = std::move(w);
  }

  int outliers[kOutlierChannels];
  for (int& o : outliers) o = static_cast<int>(rng.next() % kH);
  st::Tensor branch = st::make_tensor(st::Dtype::BF16, {rows, kH});
  st::Tensor stream = st::make_tensor(stream_dtype == StreamDtype::f32 ? st::Dtype::F32 : st::Dtype::BF16, {rows, kH});
  auto* bp = branch.data<std::uint16_t>();
  float* stream_f32 = stream_dtype == StreamDtype::f32 ? stream.data<float>() : nullptr;
  std::uint16_t* stream_bf16 = stream_dtype == StreamDtype::bf16 ? stream.data<std::uint16_t>() : nullptr;
  for (std::int64_t r = 0; r < rows; ++r) {
    const double branch_scale = std::exp2(-3.0 + 5.0 * rng.uniform());
    const double stream_scale = std::exp2(-1.0 + 4.0 * rng.uniform());
    std::vector<double> row_b(kH), row_s(kH);
    for (int c = 0; c < kH; ++c) {
      row_b[c] = branch_scale * rng.normal();
      row_s[c] = stream_scale * rng.normal();
    }
    for (int o : outliers) {
      row_b[o] *= 30.0;
      row_s[o] *= 50.0;
    }
    for (int c = 0; c < kH; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * kH + c;
      bp[i] = ref::f32_to_bf16_rn(static_cast<float>(row_b[c]));
      if (stream_f32) stream_f32[i] = static_cast<float>(row_s[c]);
      else stream_bf16[i] = ref::f32_to_bf16_rn(static_cast<float>(row_s[c]));
    }
  }
  f.tensors["branch"] = std::move(branch);
  f.tensors["stream"] = std::move(stream);
  f.metadata["generator"] = "contract section 9 realistic inputs";
  f.metadata["seed"] = std::to_string(seed);
  return f;
}

st::Tensor generate_partials(std::int64_t rows, int ranks, std::uint64_t seed) {
  if (rows < 1 || ranks < 1 || ranks > kMaxRanks)
    throw InputError("partials: " + std::to_string(ranks) + " ranks of " + std::to_string(rows) +
                     " rows asked for; give 1 to 8 ranks and at least one row");
  st::Tensor t = st::make_tensor(st::Dtype::BF16, {ranks, rows, kH});
  Rng rng(seed);
  for (std::uint16_t& v : std::span(t.data<std::uint16_t>(), static_cast<std::size_t>(ranks * rows) * kH)) {
    const int e = static_cast<int>(rng.next() % 41) - 20;
    v = ref::f32_to_bf16_rn(static_cast<float>(std::ldexp(rng.normal(), e)));
  }
  return t;
}

}  // namespace boundary
