// The vacuity check: a suite is worth running only if the planted bugs change its outputs.
#include <boundary/verify/boundary_tensors.hpp>
#include <boundary/verify/edge_suite.hpp>
#include <boundary/mutant.hpp>
#include <boundary/mutant_emulators.hpp>
#include <boundary/results.hpp>

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>

namespace boundary::suite {

namespace {

ref::Results emulate(Mutant m, const Constants& constants, const BoundTensors& bound, unsigned threads) {
  ref::Results r(bound.m);
  mutants::run_emulator(m, constants, bound.operands, bound.inputs, r.outputs(), threads);
  return r;
}

template <class T>
bool row_differs(const std::vector<T>& a, const std::vector<T>& b, std::int64_t row) {
  const std::size_t at = static_cast<std::size_t>(row) * kH;
  return std::memcmp(&a[at], &b[at], kH * sizeof(T)) != 0;
}

// For every emulator twin, which rows of the inputs it changes.
std::vector<std::vector<bool>> caught_rows(const Constants& constants, const BoundTensors& bound, unsigned threads) {
  const ref::Results production = emulate(Mutant::none, constants, bound, threads);
  std::vector<std::vector<bool>> caught;
  for (const Mutant m : mutants::kEmulatorTwins) {
    const ref::Results mutant = emulate(m, constants, bound, threads);
    std::vector<bool>& rows = caught.emplace_back(static_cast<std::size_t>(bound.m));
    for (std::int64_t row = 0; row < bound.m; ++row)
      rows[static_cast<std::size_t>(row)] =
          row_differs(production.out, mutant.out, row) || row_differs(production.new_stream, mutant.new_stream, row);
  }
  return caught;
}

}  // namespace

std::optional<std::string> not_applicable(Mutant m, const Constants& constants, int ranks) {
  if (m == Mutant::rank_order) {
    if (ranks >= 3) return std::nullopt;
    return "R = " + std::to_string(ranks) + " rank partial" + (ranks == 1 ? "" : "s") +
           ": the all-reduce sums fewer than 3, which add_rn, being commutative, adds alike in any order";
  }
  if (m != Mutant::gain_unrounded) return std::nullopt;
  for (const NormConstants* n : {&constants.post, &constants.pre})
    if (n->has_weight() && n->weight_dtype != WeightDtype::fp32 && static_cast<float>(*n->gain_center) != 0.0f)
      return std::nullopt;
  return "no norm rounds its gain: each has no weight, an FP32 weight or gain centre 0";
}

int ranks_of(const ref::Inputs& inputs) { return inputs.partials.empty() ? 1 : static_cast<int>(inputs.partials.size()); }

Vacuity check_vacuity(const Constants& constants, const safetensors::File& inputs, unsigned threads) {
  const BoundTensors bound = bind_inputs(inputs, constants, "vacuity check");
  const std::vector<std::vector<bool>> caught = caught_rows(constants, bound, threads);
  Vacuity v;
  for (std::size_t i = 0; i < caught.size(); ++i) {
    const auto rows = static_cast<std::int64_t>(std::count(caught[i].begin(), caught[i].end(), true));
    const std::string name(mutant_name(mutants::kEmulatorTwins[i]));
    v.rows_caught[name] = rows;
    if (const auto reason = not_applicable(mutants::kEmulatorTwins[i], constants, ranks_of(bound.inputs))) {
      if (rows > 0)
        throw std::logic_error("vacuity check: " + name + " changes " + std::to_string(rows) +
                               " rows although it was declared not applicable (" + *reason + ")");
      v.not_applicable[name] = *reason;
    } else if (rows == 0) {
      v.uncaught.push_back(name);
    }
  }
  return v;
}

std::vector<std::int64_t> witness_rows(const Constants& constants, const safetensors::File& inputs, int per_mutant,
                                       unsigned threads) {
  const BoundTensors bound = bind_inputs(inputs, constants, "witness rows");
  std::set<std::int64_t> rows;
  for (const std::vector<bool>& caught : caught_rows(constants, bound, threads)) {
    int taken = 0;
    for (std::int64_t row = 0; row < bound.m && taken < per_mutant; ++row)
      if (caught[static_cast<std::size_t>(row)]) rows.insert(row), ++taken;
  }
  return {rows.begin(), rows.end()};
}

safetensors::File select_rows(const safetensors::File& inputs, std::span<const std::int64_t> rows) {
  safetensors::File f = inputs;
  for (auto& [name, picked] : f.tensors) {
    if (picked.shape.size() != 2) continue;  // the operands: [8192]
    const safetensors::Tensor& t = inputs.tensors.at(name);
    const std::size_t row_bytes = t.bytes.size() / static_cast<std::size_t>(t.shape[0]);
    picked.shape[0] = static_cast<std::int64_t>(rows.size());
    picked.bytes.resize(rows.size() * row_bytes);
    for (std::size_t i = 0; i < rows.size(); ++i)
      std::memcpy(&picked.bytes[i * row_bytes], &t.bytes.at(static_cast<std::size_t>(rows[i]) * row_bytes), row_bytes);
  }
  return f;
}

safetensors::File as_rank_partials(const safetensors::File& inputs) {
  constexpr std::uint16_t kBig = 0x7180;  // 2^100: half its ulp is 2^76
  safetensors::File f = inputs;
  const safetensors::Tensor branch = f.tensors.at("branch");
  f.tensors.erase("branch");
  const std::int64_t m = branch.shape.at(0);
  safetensors::Tensor partials = safetensors::make_tensor(safetensors::Dtype::BF16, {kRankPartials, m, kH});
  const std::size_t n = branch.bytes.size() / 2;
  auto* p = reinterpret_cast<std::uint16_t*>(partials.bytes.data());
  std::fill_n(p, n, kBig);
  std::fill_n(p + n, n, static_cast<std::uint16_t>(kBig | 0x8000u));
  std::memcpy(p + 2 * n, branch.bytes.data(), branch.bytes.size());
  f.tensors["partials"] = std::move(partials);
  return f;
}

}  // namespace boundary::suite
