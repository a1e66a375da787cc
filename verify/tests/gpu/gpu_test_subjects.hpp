// The boundaries under test: the constants sets (stock, derived, edge), their operands on the host
// and the device, and Subject, the emulator, fused kernel and eager chain built from them.
#pragma once

#include "gpu_test_cuda.hpp"

#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/generate.hpp>
#include <boundary/gpu/weight_dtype.hpp>
#include <boundary/reference.hpp>
#include <boundary/verify/safetensors.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gpu_test {

namespace st = boundary::safetensors;

inline Constants stock(const char* file) {
  return read_constants(std::filesystem::path(BOUNDARY_SOURCE_DIR) / "fixtures" / "constants" / file);
}
inline Constants post_attention() { return stock("muse-spark-post-attention.json"); }
inline Constants post_ffn() { return stock("muse-spark-post-ffn.json"); }

struct NamedConstants {
  std::string name;
  Constants constants;
  bool stock = false;
};

inline NormConstants weighted(double eps, WeightDtype dtype, bool input_scale, bool fma, double gain = 1.0) {
  return {.eps = eps, .gain_center = gain, .weight_dtype = dtype, .input_scale = input_scale, .fma_squares = fma};
}
inline NormConstants unweighted(double eps, bool fma) { return {.eps = eps, .fma_squares = fma}; }

// The stock boundaries, then every weight dtype x post/pre input scale x fma squares (each norm
// sees fma on and off with and without an input scale; gain centres 1 and 0), then norms
// without weights.
inline std::vector<NamedConstants> realistic_constant_sets() {
  std::vector<NamedConstants> sets = {{"post-attention (stock)", post_attention(), true},
                                      {"post-ffn (stock)", post_ffn(), true}};
  for (WeightDtype dtype : {WeightDtype::bf16, WeightDtype::fp16, WeightDtype::fp32})
    for (bool post_scale : {false, true})
      for (bool pre_scale : {false, true})
        for (bool fma : {false, true}) {
          const Constants k{weighted(1e-8, dtype, post_scale, fma), weighted(1e-5, dtype, pre_scale, fma != pre_scale, fma ? 0.0 : 1.0)};
          sets.push_back({"derived", k});
        }
  sets.push_back({"no weights", {unweighted(1e-8, false), unweighted(1e-5, true)}});
  sets.push_back({"post FP16 input scale, pre without weight", {weighted(1e-8, WeightDtype::fp16, true, false), unweighted(1e-5, false)}});
  return sets;
}

// eps 0 makes all-zero and subnormal rows divide by zero (rsqrt of 0 or a subnormal is Inf).
inline std::vector<NamedConstants> edge_constant_sets() {
  return {{"post-attention (stock)", post_attention(), true},
          {"post-ffn (stock)", post_ffn(), true},
          {"eps 0: post FP16 input scale with fma, pre FP32 gain 0",
           {weighted(0.0, WeightDtype::fp16, true, true), weighted(0.0, WeightDtype::fp32, false, false, 0.0)}},
          {"eps 0: no post weight, pre BF16 input scale with fma",
           {unweighted(0.0, false), weighted(0.0, WeightDtype::bf16, true, true)}},
          {"eps 0: no weights, post fma", {unweighted(0.0, true), unweighted(0.0, false)}}};
}

// A stock boundary by its name; any other by its exact constants.
inline std::string describe(const NamedConstants& n) {
  return n.stock ? n.name : n.name + " " + constants_to_json(n.constants).dump();
}

// Operands on the host, as generate_inputs makes them: the emulator reads these, the GPU a copy.
struct HostOperands {
  std::vector<float> alpha, beta;
  std::vector<std::uint8_t> post_weight, pre_weight;  // in the norm's dtype; empty: no weight
};

constexpr std::uint64_t kOperandSeed = 7;

// The operands of an input file (alpha, beta, and the weights the constants give).
inline HostOperands operands_of(const st::File& f, const Constants& k) {
  HostOperands o;
  const float* a = f.tensors.at("alpha").data<float>();
  const float* b = f.tensors.at("beta").data<float>();
  o.alpha.assign(a, a + kH);
  o.beta.assign(b, b + kH);
  if (k.post.has_weight()) o.post_weight = f.tensors.at("post_weight").bytes;
  if (k.pre.has_weight()) o.pre_weight = f.tensors.at("pre_weight").bytes;
  return o;
}

inline HostOperands realistic_operands(const Constants& k) { return operands_of(generate_inputs(k, 1, kOperandSeed), k); }

// One boundary under test: the emulator, the fused kernel and the eager chain, built from the
// same constants and operands.
class Subject {
 public:
  Subject(const NamedConstants& named, HostOperands ops)
      : name(describe(named)),
        constants(named.constants),
        host(std::move(ops)),
        alpha(upload(host.alpha.data(), host.alpha.size())),
        beta(upload(host.beta.data(), host.beta.size())),
        post_weight(upload_weight(host.post_weight)),
        pre_weight(upload_weight(host.pre_weight)),
        operands(device_operands()),
        emulator(constants, host_operands()),
        fused(constants, operands),
        eager(constants, operands) {}

  const std::string name;
  const Constants constants;
  const HostOperands host;
  const DeviceBuffer alpha, beta, post_weight, pre_weight;
  const gpu::Operands operands;
  const ref::Boundary emulator;
  gpu::DraftBoundary fused;
  gpu::EagerChain eager;

 private:
  static DeviceBuffer upload_weight(const std::vector<std::uint8_t>& w) {
    return w.empty() ? DeviceBuffer() : upload(w.data(), w.size());
  }
  std::optional<TensorView> weight_view(const NormConstants& n, const DeviceBuffer& w) const {
    if (!n.has_weight()) return std::nullopt;
    return TensorView{w.get(), gpu::weight_dtype(n.weight_dtype), {kH}};
  }
  gpu::Operands device_operands() const {
    return {TensorView{alpha.get(), Dtype::f32, {kH}}, TensorView{beta.get(), Dtype::f32, {kH}},
            weight_view(constants.post, post_weight), weight_view(constants.pre, pre_weight)};
  }
  ref::Operands host_operands() const {
    return {host.alpha.data(), host.beta.data(), host.post_weight.empty() ? nullptr : host.post_weight.data(),
            host.pre_weight.empty() ? nullptr : host.pre_weight.data()};
  }
};

}  // namespace gpu_test
