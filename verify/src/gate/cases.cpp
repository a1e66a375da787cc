#include <boundary/verify/cases.hpp>

#include "cli_gate_parts.hpp"

#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/generate.hpp>
#include <boundary/verify/version.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace boundary::cases {

namespace st = safetensors;
namespace gate_parts = cli::gate_parts;
using gate_parts::SuiteSpec;

namespace {

// The family of a gate suite spec, by its name: "edge/f32@eps 0" is an edge-constants suite.
std::string family_of(const std::string& spec_name) {
  if (spec_name.find('@') != std::string::npos) return "edge-constants";
  return spec_name.substr(0, spec_name.find('/'));
}

// The edge suite with each row's branch on rank row % R of R partials whose other ranks hold
// generate_partials' values (exponents over +-20): sums whose bits depend on the rank order,
// and the edge patterns still reach the norm (as the GPU all-reduce tests build them).
SuiteSpec partials_spec(const Constants& base, const Options& o, StreamDtype d) {
  const std::string dt = d == StreamDtype::f32 ? "f32" : "bf16";
  const std::uint64_t seed = o.seed + 4;
  const int ranks = o.ranks, level = o.level;
  return {"partials/" + dt, "base", base, d, seed, false, 0, [=] {
            suite::Suite s = suite::make_edge_suite(base, level, seed, d);
            const st::Tensor branch = std::move(s.inputs.tensors.at("branch"));
            s.inputs.tensors.erase("branch");
            const std::int64_t m = branch.shape[0];
            st::Tensor partials = generate_partials(m, ranks, seed);
            const std::size_t row_bytes = static_cast<std::size_t>(kH) * 2;
            for (std::int64_t row = 0; row < m; ++row)
              std::memcpy(partials.bytes.data() + static_cast<std::size_t>((row % ranks) * m + row) * row_bytes,
                          branch.bytes.data() + static_cast<std::size_t>(row) * row_bytes, row_bytes);
            s.inputs.tensors["partials"] = std::move(partials);
            s.inputs.metadata["generator"] = "edge suite rows on rank row % " + std::to_string(ranks) + " of " +
                                             std::to_string(ranks) + " rank partials spread over 2^-20 .. 2^20";
            s.name = "partials";
            return std::vector{std::move(s)};
          }};
}

}  // namespace

const std::vector<std::string>& families() {
  static const std::vector<std::string> all = {"edge", "fuzz", "operand-special", "edge-constants", "partials"};
  return all;
}

std::string case_name(const std::string& spec_name, std::optional<std::size_t> k) {
  std::string name;
  for (const char c : spec_name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_';
    if (keep) name += c;
    else if (!name.empty() && name.back() != '-') name += '-';
  }
  while (!name.empty() && name.back() == '-') name.pop_back();
  if (k) {
    char index[16];
    std::snprintf(index, sizeof index, "-%02zu", *k);
    name += index;
  }
  return name;
}

void for_each_case(const Constants& base, const Options& o, const std::function<void(Case&&)>& each) {
  if (o.level != 1 && o.level != 2) throw InputError("level: 1 or 2, not " + std::to_string(o.level));
  if (o.rows < 0) throw InputError("rows: a count >= 0, not " + std::to_string(o.rows));
  if (o.ranks < 0 || o.ranks > kMaxRanks) throw InputError("ranks: 0 (none) or 1..8, not " + std::to_string(o.ranks));
  const auto& known = families();
  if (o.family != "all" && std::find(known.begin(), known.end(), o.family) == known.end()) {
    std::string names;
    for (const std::string& f : known) names += ", " + f;
    throw InputError("suite: unknown suite family '" + o.family + "' (known: all" + names + ")");
  }
  if (o.family == "partials" && o.ranks == 0) throw InputError("suite 'partials': give ranks 1..8");

  std::vector<SuiteSpec> specs = gate_parts::gate_suites(base, o.level, o.rows, o.seed);
  if (o.ranks > 0)
    for (const StreamDtype d : {StreamDtype::f32, StreamDtype::bf16}) specs.push_back(partials_spec(base, o, d));
  for (const SuiteSpec& spec : specs) {
    if (o.family != "all" && family_of(spec.name) != o.family) continue;
    std::vector<suite::Suite> made = spec.make();
    for (std::size_t k = 0; k < made.size(); ++k) {
      const bool several = made.size() > 1;
      SuiteSpec named = spec;
      if (several) named.name += "/" + made[k].name;
      const std::string name = case_name(spec.name, several ? std::optional(k) : std::nullopt);
      // Binding checks the suite as check will read it back.
      const auto bound = gate_parts::bind_suite(named, std::move(made[k]), nullptr, "");
      Case c{name, bound->info, spec.constants, o.store_stream, 0, std::move(bound->suite.inputs)};
      if (c.inputs.tensors.count("partials")) c.ranks = static_cast<int>(c.inputs.tensors.at("partials").shape[0]);
      describe(c.inputs, c.constants, c.store_stream);
      c.inputs.metadata["suite"] = c.info.name;
      c.inputs.metadata["seed"] = std::to_string(c.info.seed);
      c.inputs.metadata["producer"] = std::string("boundary-verify ") + kVersion + " export";
      each(std::move(c));
    }
  }
}

nlohmann::json manifest_entry(const Case& c) {
  return {{"file", c.name + ".safetensors"},     {"suite", c.info.name},
          {"constants_name", c.info.constants}, {"constants", constants_to_json(c.constants)},
          {"rows", c.info.rows},                {"stream_dtype", c.info.stream_dtype},
          {"store_stream", c.store_stream},     {"ranks", c.ranks},
          {"seed", c.info.seed}};
}

}  // namespace boundary::cases
