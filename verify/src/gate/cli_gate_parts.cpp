#include "cli_gate_parts.hpp"

#include <boundary/verify/fixture_metadata.hpp>
#include <boundary/mutant_emulators.hpp>
#include <boundary/primitives.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace boundary::cli::gate_parts {

namespace {

const char* dtype_word(StreamDtype d) { return d == StreamDtype::f32 ? "f32" : "bf16"; }

// Level-1 sizes, for the progress estimate until the suite is made.
constexpr std::int64_t kEdgeRowsEstimate = 512;
constexpr std::int64_t kSpecialRowsEstimate = 64;

}  // namespace

std::vector<std::filesystem::path> fixture_files(const std::filesystem::path& dir, const std::string& option) {
  if (dir.empty()) return {};
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw InputError(option + " '" + dir.string() + "': not a directory, expected one of fixtures");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".safetensors") files.push_back(entry.path());
  if (ec) throw InputError(option + " '" + dir.string() + "': cannot list: " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<SuiteSpec> gate_suites(const Constants& base, int level, std::int64_t fuzz_rows, std::uint64_t seed) {
  std::vector<SuiteSpec> specs;
  for (const StreamDtype d : {StreamDtype::f32, StreamDtype::bf16}) {
    const std::string dt = dtype_word(d);
    specs.push_back({"edge/" + dt, "base", base, d, seed, true, kEdgeRowsEstimate * level,
                     [=] { return std::vector{suite::make_edge_suite(base, level, seed, d)}; }});
    if (fuzz_rows > 0)
      specs.push_back({"fuzz/" + dt, "base", base, d, seed + 1, true, fuzz_rows,
                       [=] { return std::vector{suite::make_fuzz_suite(base, fuzz_rows, seed + 1, d)}; }});
    specs.push_back({"operand-special/" + dt, "base", base, d, seed + 2, false, kSpecialRowsEstimate,
                     [=] { return suite::make_operand_special_suites(base, seed + 2, d); }});
  }
  // Edge constants: the edge suite under each (FP32 stream: the stream dtype is covered above).
  for (const auto& [name, c] : suite::edge_constants(base))
    specs.push_back({"edge/f32@" + name, name, c, StreamDtype::f32, seed + 3, false, kEdgeRowsEstimate * level,
                     [=, c = c] { return std::vector{suite::make_edge_suite(c, level, seed + 3, StreamDtype::f32)}; }});
  return specs;
}

st::File read_operands(const std::filesystem::path& path) {
  st::File ops = st::read_file(path);
  for (const auto& [name, tensor] : ops.tensors)
    if (name != "alpha" && name != "beta" && name != "post_weight" && name != "pre_weight")
      throw InputError(path.string() + ": unexpected tensor '" + name +
                       "' (operands: alpha, beta, post_weight, pre_weight)");
  return ops;
}

std::unique_ptr<BoundSuite> bind_suite(const SuiteSpec& spec, suite::Suite made, const st::File* operands,
                                       const std::string& operands_name) {
  std::string source = "the gate's suite " + spec.name;
  if (operands && spec.takes_operands) {
    for (const char* name : {"alpha", "beta", "post_weight", "pre_weight"}) {
      made.inputs.tensors.erase(name);
      if (operands->tensors.count(name)) made.inputs.tensors[name] = operands->tensors.at(name);
    }
    source = operands_name;  // what is wrong now is the operands file's
  }
  auto s = std::make_unique<BoundSuite>(spec.constants, std::move(made), source);
  s->info = {spec.name, spec.constants_name, spec.stream == StreamDtype::f32 ? "F32" : "BF16", s->bound.m, spec.seed};
  return s;
}

StageValues emulate(const Constants& constants, const BoundTensors& bound, unsigned threads, bool intermediates,
                    Mutant mutant) {
  const std::int64_t m = bound.m;
  StageValues v;
  auto add = [&](const std::string& name, st::Dtype dtype, std::vector<std::int64_t> shape) -> st::Tensor& {
    return v[name] = st::make_tensor(dtype, std::move(shape));
  };
  ref::Outputs out;
  out.out = add("out", st::Dtype::BF16, {m, kH}).data<std::uint16_t>();
  out.new_stream = add("new_stream", st::Dtype::F32, {m, kH}).data<float>();
  if (intermediates) {
    out.post_row_sum = add("post_row_sum", st::Dtype::F32, {m}).data<float>();
    out.r1 = add("r1", st::Dtype::F32, {m}).data<float>();
    out.y_b = add("y_b", st::Dtype::BF16, {m, kH}).data<std::uint16_t>();
    out.z = add("z", st::Dtype::BF16, {m, kH}).data<std::uint16_t>();
    out.pre_row_sum = add("pre_row_sum", st::Dtype::F32, {m}).data<float>();
    out.r2 = add("r2", st::Dtype::F32, {m}).data<float>();
  }
  if (mutant == Mutant::none)
    ref::Boundary(constants, bound.operands).run(bound.inputs, out, threads);
  else
    mutants::run_emulator(mutant, constants, bound.operands, bound.inputs, out, threads);
  if (intermediates) v["res"] = v.at("new_stream");
  return v;
}

nlohmann::json inputs_at(const Constants& constants, const BoundTensors& bound, std::int64_t row, std::int64_t column) {
  if (!bound.inputs.branch) return nullptr;  // partials: not a gate input
  const std::int64_t i = row * kH + column;
  const bool f32 = bound.inputs.stream_dtype == StreamDtype::f32;
  std::uint32_t stream = 0, alpha = 0, beta = 0;
  if (f32)
    std::memcpy(&stream, static_cast<const float*>(bound.inputs.stream) + i, 4);
  else
    stream = static_cast<const std::uint16_t*>(bound.inputs.stream)[i];
  std::memcpy(&alpha, bound.operands.alpha + column, 4);
  std::memcpy(&beta, bound.operands.beta + column, 4);
  auto weight = [&](const NormConstants& norm, const void* w) -> nlohmann::json {
    if (!norm.has_weight() || !w) return nullptr;
    if (norm.weight_dtype == WeightDtype::fp32) {
      std::uint32_t bits = 0;
      std::memcpy(&bits, static_cast<const float*>(w) + column, 4);
      return report::hex_bits(bits, "F32");
    }
    return report::hex_bits(static_cast<const std::uint16_t*>(w)[column], "BF16");
  };
  return {{"branch", report::hex_bits(bound.inputs.branch[i], "BF16")},
          {"stream", report::hex_bits(stream, f32 ? "F32" : "BF16")},
          {"stream_dtype", f32 ? "F32" : "BF16"},
          {"alpha", report::hex_bits(alpha, "F32")},
          {"beta", report::hex_bits(beta, "F32")},
          {"post_weight", weight(constants.post, bound.operands.post_weight)},
          {"pre_weight", weight(constants.pre, bound.operands.pre_weight)}};
}

std::optional<report::Divergence> first_divergence(const StageValues& expected, const StageValues& actual,
                                                   std::int64_t row) {
  for (const std::string& stage : kStages) {
    const auto e = expected.find(stage), a = actual.find(stage);
    if (e == expected.end() || a == actual.end()) continue;
    const st::Tensor& et = e->second;
    const bool per_element = et.shape.size() == 2;
    const std::int64_t width = per_element ? et.shape[1] : 1;
    const bool f32 = et.dtype == st::Dtype::F32;
    const std::size_t size = f32 ? 4 : 2;
    for (std::int64_t c = 0; c < width; ++c) {
      const std::size_t at = static_cast<std::size_t>(row * width + c) * size;
      std::uint32_t eb = 0, ab = 0;
      std::memcpy(&eb, et.bytes.data() + at, size);
      std::memcpy(&ab, a->second.bytes.data() + at, size);
      if (eb != ab)
        return report::Divergence{stage, per_element ? std::optional<std::int64_t>(c) : std::nullopt, eb, ab,
                                  f32 ? "F32" : "BF16"};
    }
  }
  return std::nullopt;
}

std::vector<char> differing_rows(const st::Tensor& expected, const st::Tensor& actual) {
  const auto rows = static_cast<std::size_t>(expected.shape.at(0));
  std::vector<char> differs(rows, 0);
  const std::size_t row_bytes = expected.bytes.size() / std::max<std::size_t>(rows, 1);
  for (std::size_t r = 0; r < rows; ++r)
    differs[r] = std::memcmp(expected.bytes.data() + r * row_bytes, actual.bytes.data() + r * row_bytes, row_bytes) != 0;
  return differs;
}

std::size_t compare_run(const BoundSuite& s, const std::string& variant, const std::string& pair,
                        const StageValues& expected, const StageValues& actual, bool store, report::Report& rep,
                        const std::string& file) {
  const std::size_t first = rep.mismatches.kept().size();
  for (const std::string tensor : {"out", "new_stream"}) {
    if (tensor == "new_stream" && !store) continue;
    const auto a = actual.find(tensor);
    if (a == actual.end()) throw std::logic_error(pair + ": no " + tensor + " returned");
    const report::CompareContext where{s.info.name, pair, variant, file, tensor};
    const report::TensorCount c =
        report::compare_tensors(expected.at(tensor), a->second, variant, where, rep.mismatches);
    rep.gate->runs.push_back({s.info.name, variant, pair, tensor, s.bound.m, c.compared, c.mismatches});
    rep.elements_compared += c.compared;
  }
  for (std::size_t i = first; i < rep.mismatches.kept().size(); ++i) {
    report::Mismatch& m = rep.mismatches.kept_mutable()[i];
    m.seed = s.info.seed;
    m.inputs = inputs_at(s.constants, s.bound, m.row, m.column);
  }
  return first;
}

std::string variant_metadata(const GateVariant& v, StreamDtype stream) {
  return boundary::variant_metadata(stream, v.store, v.late_gates, v.pdl, layout_word(v.layout)) + ",gate_variant=" + v.name;
}

void Progress::add(std::int64_t rows) {
  done_ += rows;
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (!enabled_ || elapsed < 2.0 || now - last_ < std::chrono::milliseconds(500)) return;
  last_ = now;
  const double rate = static_cast<double>(done_) / elapsed;
  const double left = rate > 0 ? static_cast<double>(std::max<std::int64_t>(total_ - done_, 0)) / rate : 0;
  std::fprintf(stderr, "\rgate: %lld of ~%lld rows, %.0f rows/s, ~%.0f s left   ", static_cast<long long>(done_),
               static_cast<long long>(std::max(total_, done_)), rate, left);
  printed_ = true;
}

void Progress::finish() {
  if (printed_) std::fprintf(stderr, "\n");
}

}  // namespace boundary::cli::gate_parts
