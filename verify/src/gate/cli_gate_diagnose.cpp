// What the gate does with a mismatch: the first divergent stage of each listed one (the variant's
// debug build writes its intermediates; the emulator writes its own), and the first one shrunk to
// a minimal fixture that `boundary-verify replay` reproduces.
#include "cli_gate_parts.hpp"

#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/shrink.hpp>
#include <boundary/verify/version.hpp>

#include <algorithm>

namespace boundary::cli::gate_parts {

namespace {

// Rows rerun per diagnosed run: their intermediates are [rows, 8192] each.
constexpr std::size_t kDiagnosedRows = 32;

}  // namespace

void diagnose(const GateGpuHook& hook, const BoundSuite& s, const GateVariant& v, report::MismatchLog& log,
              std::size_t first_listed, unsigned threads) {
  std::vector<report::Mismatch>& listed = log.kept_mutable();
  std::vector<std::int64_t> rows;
  for (std::size_t i = first_listed; i < listed.size(); ++i)
    if (std::find(rows.begin(), rows.end(), listed[i].row) == rows.end() && rows.size() < kDiagnosedRows)
      rows.push_back(listed[i].row);
  const st::File sub = suite::select_rows(s.suite.inputs, rows);
  const BoundTensors bound = bind_inputs(sub, s.constants, s.info.name + " (diagnosed rows)");
  const std::optional<StageValues> actual = hook.run_with_intermediates(s.constants, bound, v);
  if (!actual) return;  // no debug build of this implementation: the stage stays unknown
  const StageValues expected = emulate(s.constants, bound, threads, true);
  for (std::size_t i = first_listed; i < listed.size(); ++i) {
    const auto at = std::find(rows.begin(), rows.end(), listed[i].row);
    if (at != rows.end()) listed[i].first_divergent_stage = first_divergence(expected, *actual, at - rows.begin());
  }
}

std::optional<Shrunk> shrink_first(const GateGpuHook& hook, const BoundSuite& s, const GateVariant& v,
                                   const report::Mismatch& first, const std::filesystem::path& output,
                                   int max_calls, std::string* note) {
  const std::optional<std::string> stage =
      first.first_divergent_stage ? std::optional(first.first_divergent_stage->stage) : std::nullopt;
  // The implementation's outputs on a one-row candidate and whether it still fails that way.
  const auto still_fails = [&](const shrink::Case& c) {
    const st::File inputs = shrink::to_inputs(c);
    const BoundTensors bound = bind_inputs(inputs, c.constants, "shrink candidate");
    const StageValues expected = emulate(c.constants, bound, 1, stage.has_value());
    const StageValues actual = hook.run(c.constants, bound, v);
    if (expected.at(first.tensor).bytes == actual.at(first.tensor).bytes) return false;
    if (!stage) return true;
    const std::optional<StageValues> diagnosed = hook.run_with_intermediates(c.constants, bound, v);
    if (!diagnosed) return true;
    const auto d = first_divergence(expected, *diagnosed, 0);
    return d && d->stage == *stage;
  };
  const shrink::Case failing = shrink::case_from_inputs(s.constants, s.suite.inputs, first.row);
  if (!still_fails(failing)) {
    *note = "the first mismatch (" + s.info.name + ", " + v.name + ", row " + std::to_string(first.row) +
            ") does not reproduce on its row alone: not shrunk";
    return std::nullopt;
  }
  const shrink::Result r = shrink::shrink(failing, still_fails, max_calls);

  Shrunk out;
  out.fixture = shrink::to_inputs(r.minimal);
  const BoundTensors bound = bind_inputs(out.fixture, r.minimal.constants, "shrunk case");
  StageValues actual = hook.run(r.minimal.constants, bound, v);
  out.fixture.tensors["out"] = std::move(actual.at("out"));
  if (v.store) out.fixture.tensors["new_stream"] = std::move(actual.at("new_stream"));
  const std::optional<report::GpuInfo> gpu = hook.probe();
  auto& meta = out.fixture.metadata;
  meta["constants"] = constants_to_json(r.minimal.constants).dump();
  meta["kernel"] = "gate variant " + v.name + " (the failing implementation's outputs, shrunk)";
  meta["variant"] = variant_metadata(v, r.minimal.stream_dtype);
  meta["producer"] = std::string("boundary-verify ") + kVersion + " gate (shrunk first mismatch)";
  meta["project_version"] = kVersion;
  meta["seed"] = std::to_string(s.info.seed);
  meta["date"] = report::utc_now_iso8601();
  meta["mismatch"] = s.info.name + " row " + std::to_string(first.row) + ", " + first.tensor +
                     (stage ? ", first divergent stage " + *stage : "");
  if (gpu) {
    meta["gpu"] = gpu->name;
    meta["compute_capability"] = gpu->compute_capability;
    meta["driver"] = gpu->driver;
    meta["cuda"] = gpu->cuda;
  }
  out.report = {output.string(), s.info.name, v.name, first.pair, first.tensor, first.row, stage, r.steps,
                r.predicate_calls, r.nontrivial_before, r.nontrivial_after};
  return out;
}

}  // namespace boundary::cli::gate_parts
