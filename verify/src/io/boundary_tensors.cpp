#include <boundary/verify/boundary_tensors.hpp>

#include <algorithm>
#include <cstring>

namespace boundary {

namespace st = safetensors;

st::Dtype weight_tensor_dtype(WeightDtype d) {
  switch (d) {
    case WeightDtype::bf16: return st::Dtype::BF16;
    case WeightDtype::fp16: return st::Dtype::F16;
    case WeightDtype::fp32: return st::Dtype::F32;
  }
  throw std::logic_error("unknown weight dtype");
}

namespace {

const void* bind_weight(const st::File& file, const NormConstants& norm, const std::string& name,
                        const std::string& source) {
  const bool present = file.tensors.count(name) != 0;
  if (!norm.has_weight()) {
    if (present)
      throw InputError(source + ": tensor '" + name +
                       "' is given, but the constants give this norm no weight (gain centre null)");
    return nullptr;
  }
  return st::require(file, source, name, {weight_tensor_dtype(norm.weight_dtype)}, {kH}).bytes.data();
}

}  // namespace

BoundTensors bind_inputs(const st::File& file, const Constants& constants, const std::string& source) {
  static const std::vector<std::string> kInputNames = {"branch", "partials", "stream", "alpha",
                                                       "beta", "post_weight", "pre_weight"};
  for (const auto& [name, tensor] : file.tensors) {
    const bool known = std::count(kInputNames.begin(), kInputNames.end(), name) ||
                       std::count(kOutputNames.begin(), kOutputNames.end(), name);
    if (!known)
      throw InputError(source + ": unexpected tensor '" + name +
                       "' (inputs: branch or partials, stream, alpha, beta, post_weight, pre_weight)");
  }
  const bool has_branch = file.tensors.count("branch") != 0;
  const bool has_partials = file.tensors.count("partials") != 0;
  if (has_branch == has_partials)
    throw InputError(source + (has_branch ? ": both 'branch' and 'partials' are given; give one"
                                          : ": neither 'branch' BF16 [m, 8192] nor 'partials' BF16 [R, m, 8192] is given"));

  BoundTensors b;
  if (has_branch) {
    const st::Tensor& t = file.tensors.at("branch");
    if (t.shape.size() != 2 || t.shape[0] < 1 || t.shape[1] != kH)
      throw InputError(source + ": tensor 'branch' has shape " + st::shape_string(t.shape) +
                       ", expected [m, 8192] with m >= 1");
    b.m = t.shape[0];
    b.inputs.branch = st::require(file, source, "branch", {st::Dtype::BF16}, {b.m, kH}).data<std::uint16_t>();
  } else {
    const st::Tensor& t = file.tensors.at("partials");
    if (t.shape.size() != 3 || t.shape[0] < 1 || t.shape[0] > kMaxRanks || t.shape[1] < 1 || t.shape[2] != kH)
      throw InputError(source + ": tensor 'partials' has shape " + st::shape_string(t.shape) +
                       ", expected [R, m, 8192] with 1 <= R <= 8 and m >= 1");
    b.m = t.shape[1];
    const auto* p = st::require(file, source, "partials", {st::Dtype::BF16}, t.shape).data<std::uint16_t>();
    for (std::int64_t r = 0; r < t.shape[0]; ++r) b.partial_rows.push_back(p + r * b.m * kH);
    b.inputs.partials = b.partial_rows;
  }
  b.inputs.m = b.m;
  const st::Tensor& stream = st::require(file, source, "stream", {st::Dtype::F32, st::Dtype::BF16}, {b.m, kH});
  b.inputs.stream_dtype = stream.dtype == st::Dtype::F32 ? StreamDtype::f32 : StreamDtype::bf16;
  b.inputs.stream = stream.bytes.data();
  b.operands.alpha = st::require(file, source, "alpha", {st::Dtype::F32}, {kH}).data<float>();
  b.operands.beta = st::require(file, source, "beta", {st::Dtype::F32}, {kH}).data<float>();
  b.operands.post_weight = bind_weight(file, constants.post, "post_weight", source);
  b.operands.pre_weight = bind_weight(file, constants.pre, "pre_weight", source);
  return b;
}

st::File inputs_file(const Constants& constants, const BoundTensors& b) {
  st::File file;
  const auto copy = [&](const std::string& name, st::Dtype dtype, std::vector<std::int64_t> shape, const void* data) {
    st::Tensor t = st::make_tensor(dtype, std::move(shape));
    std::memcpy(t.bytes.data(), data, t.bytes.size());
    file.tensors[name] = std::move(t);
  };
  const std::size_t rank_bytes = static_cast<std::size_t>(b.m) * kH * 2;
  if (b.inputs.branch) {
    copy("branch", st::Dtype::BF16, {b.m, kH}, b.inputs.branch);
  } else {
    const auto ranks = static_cast<std::int64_t>(b.partial_rows.size());
    st::Tensor partials = st::make_tensor(st::Dtype::BF16, {ranks, b.m, kH});
    for (std::size_t r = 0; r < b.partial_rows.size(); ++r)
      std::memcpy(partials.bytes.data() + r * rank_bytes, b.partial_rows[r], rank_bytes);
    file.tensors["partials"] = std::move(partials);
  }
  copy("stream", b.inputs.stream_dtype == StreamDtype::f32 ? st::Dtype::F32 : st::Dtype::BF16, {b.m, kH},
       b.inputs.stream);
  copy("alpha", st::Dtype::F32, {kH}, b.operands.alpha);
  copy("beta", st::Dtype::F32, {kH}, b.operands.beta);
  if (constants.post.has_weight())
    copy("post_weight", weight_tensor_dtype(constants.post.weight_dtype), {kH}, b.operands.post_weight);
  if (constants.pre.has_weight())
    copy("pre_weight", weight_tensor_dtype(constants.pre.weight_dtype), {kH}, b.operands.pre_weight);
  return file;
}

}  // namespace boundary
