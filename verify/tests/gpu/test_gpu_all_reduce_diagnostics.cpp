// The all-reduce boundary's instrumented builds (ctest label gpu), through the gate's own GPU hook
// (cli::make_gate_gpu_hook, the code the gate and the self-test run): its debug build gives the
// production kernel's outputs and the emulator's intermediates, with one rank (the branch) and
// with R = 3 partials, so that the gate's mismatches of the all-reduce boundary get a first
// divergent stage; every planted-bug build of it differs from the emulator on R = 3 partials in
// each layout (its own bugs, rank_order and fragment_order, among them), and rank_order changes
// nothing with one rank.
#include "gpu_test_subjects.hpp"

#include <boundary/verify/boundary_tensors.hpp>
#include <boundary/verify/edge_suite.hpp>
#include <boundary/verify/gate.hpp>
#include <boundary/mutant.hpp>
#include <boundary/results.hpp>

#include <doctest/doctest.h>

#include <cstring>

using namespace boundary;
using namespace gpu_test;

namespace {

using cli::GateVariant;
using cli::StageValues;

constexpr std::uint64_t kSuiteSeed = 1;
constexpr GateVariant::Layout kAllReduceLayouts[] = {GateVariant::Layout::pair, GateVariant::Layout::quad,
                                                     GateVariant::Layout::cluster,
                                                     GateVariant::Layout::cluster_balanced};

// The edge suite (level 1, F32 stream) of constants c: as its branch (R = 1) or as R = 3 partials.
struct Case {
  std::string name;
  Constants constants;
  st::File inputs;
};

std::vector<Case> cases() {
  std::vector<Case> all;
  for (const auto& [name, c] : {std::pair{"post-attention", post_attention()}, {"post-ffn", post_ffn()}}) {
    st::File branch = suite::make_edge_suite(c, 1, kSuiteSeed, StreamDtype::f32).inputs;
    all.push_back({std::string(name) + ", R = 3", c, suite::as_rank_partials(branch)});
    all.push_back({std::string(name) + ", R = 1", c, std::move(branch)});
  }
  return all;
}

GateVariant all_reduce(GateVariant::Layout layout, bool store, bool late = false) {
  return {"all-reduce", GateVariant::Kind::all_reduce, std::nullopt, store, late, true, layout};
}

// The emulator's outputs and intermediates, named as the gate's StageValues.
StageValues emulated(const Constants& c, const BoundTensors& b) {
  ref::Results r(b.m, ref::Results::Wanted::everything);
  ref::Boundary(c, b.operands).run(b.inputs, r.outputs(), host_threads());
  StageValues v;
  const auto put = [&](const char* name, st::Dtype dtype, const void* data, std::vector<std::int64_t> shape) {
    st::Tensor t = st::make_tensor(dtype, std::move(shape));
    std::memcpy(t.bytes.data(), data, t.bytes.size());
    v[name] = std::move(t);
  };
  put("out", st::Dtype::BF16, r.out.data(), {b.m, kH});
  put("new_stream", st::Dtype::F32, r.new_stream.data(), {b.m, kH});
  put("res", st::Dtype::F32, r.new_stream.data(), {b.m, kH});
  put("y_b", st::Dtype::BF16, r.y_b.data(), {b.m, kH});
  put("z", st::Dtype::BF16, r.z.data(), {b.m, kH});
  put("post_row_sum", st::Dtype::F32, r.post_row_sum.data(), {b.m});
  put("r1", st::Dtype::F32, r.r1.data(), {b.m});
  put("pre_row_sum", st::Dtype::F32, r.pre_row_sum.data(), {b.m});
  put("r2", st::Dtype::F32, r.r2.data(), {b.m});
  return v;
}

// The rows of tensor `name` that differ in any bit ("new_stream" only where both have it).
std::int64_t rows_differing(const StageValues& want, const StageValues& got, const std::string& name) {
  if (!want.count(name) || !got.count(name)) return 0;
  const st::Tensor& a = want.at(name);
  const st::Tensor& b = got.at(name);
  REQUIRE(a.bytes.size() == b.bytes.size());
  const std::size_t row = a.bytes.size() / static_cast<std::size_t>(a.shape[0]);
  std::int64_t n = 0;
  for (std::size_t at = 0; at < a.bytes.size(); at += row) n += std::memcmp(&a.bytes[at], &b.bytes[at], row) != 0;
  return n;
}

}  // namespace

TEST_CASE("all-reduce debug build: production outputs, the emulator's intermediates, R = 1 and 3, every layout") {
  const cli::GateGpuHook hook = cli::make_gate_gpu_hook();
  for (const Case& k : cases()) {
    const BoundTensors bound = bind_inputs(k.inputs, k.constants, k.name);
    const StageValues want = emulated(k.constants, bound);
    for (const GateVariant::Layout layout : kAllReduceLayouts)
      for (const bool store : {true, false}) {
        const GateVariant v = all_reduce(layout, store);
        const std::string context = k.name + " | " + cli::layout_word(layout) + (store ? " | stored" : " | not stored");
        CAPTURE(context);
        const StageValues production = hook.run(k.constants, bound, v);
        const std::optional<StageValues> debug = hook.run_with_intermediates(k.constants, bound, v);
        REQUIRE(debug.has_value());  // the gate's all-reduce mismatches get a first divergent stage
        CHECK(rows_differing(want, production, "out") == 0);
        CHECK(rows_differing(want, production, "new_stream") == 0);
        for (const std::string& stage : cli::kStages) {
          CAPTURE(stage);
          CHECK(rows_differing(want, *debug, stage) == 0);
        }
        CHECK(rows_differing(want, *debug, "res") == 0);
        CHECK(rows_differing(production, *debug, "new_stream") == 0);
      }
  }
}

TEST_CASE("every planted bug of the all-reduce boundary differs from the emulator on R = 3 partials, every layout") {
  const cli::GateGpuHook hook = cli::make_gate_gpu_hook();
  for (const Case& k : cases()) {
    const BoundTensors bound = bind_inputs(k.inputs, k.constants, k.name);
    const int ranks = suite::ranks_of(bound.inputs);
    const StageValues want = emulated(k.constants, bound);
    for (const GateVariant::Layout layout : kAllReduceLayouts)
      for (const Mutant m : kAllMutants) {
        if (m == Mutant::pdl_wait_missing) continue;  // needs a producer in front (test_gpu_diagnostics)
        const std::string context = k.name + " | " + cli::layout_word(layout) + " | " + std::string(mutant_name(m));
        CAPTURE(context);
        const StageValues got =
            hook.run_mutant(m, k.constants, bound, all_reduce(layout, true, m == Mutant::late_gates_wrong_columns));
        const std::int64_t rows = std::max(rows_differing(want, got, "out"), rows_differing(want, got, "new_stream"));
        MESSAGE(context << ": " << rows << " of " << bound.m << " rows differ");
        // Caught wherever it applies; where not (rank_order with one rank), it must change nothing.
        if (suite::not_applicable(m, k.constants, ranks)) CHECK(rows == 0);
        else CHECK(rows > 0);
      }
  }
}
