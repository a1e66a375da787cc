// The GPU diagnostics (ctest label gpu): the debug build of the fused DraftBoundary kernel gives
// the production kernel's outputs bit for bit and the emulator's intermediates; every planted-bug
// build gives other outputs than the emulator on realistic and edge rows, for both stock
// boundaries (the late-gates bug with late gates only, the missing PDL wait behind a producer
// only), so that the self-test's mutants are all within reach of a bitwise comparison.
#include "gpu_test_launches.hpp"

#include <boundary/gpu/device_buffer.hpp>
#include <boundary/verify/edge_suite.hpp>
#include <boundary/gpu/diagnostics.hpp>
#include <boundary/mutant.hpp>
#include <boundary/results.hpp>

using namespace gpu_test;

namespace {

constexpr std::int64_t kRealisticRows = 64;
constexpr unsigned kProducerDelayNs = 20000;
constexpr std::uint64_t kSuiteSeed = 1;

struct DataSet {
  std::string name;
  HostRows rows;
  HostOperands operands;
};

// Realistic rows and one row per edge pattern, with realistic operands; the edge suite (level 1,
// F32 stream) with its own gates and weights: its FPRev and tie rows are the ones that show a
// one-ulp change of a row sum, such as a reordered warp butterfly.
std::vector<DataSet> data_sets(const Constants& k) {
  HostRows edges = slice(edge_rows(), 0, kEdgeKinds);
  edges.label = edge_label;
  const st::File suite = suite::make_edge_suite(k, 1, kSuiteSeed, StreamDtype::f32).inputs;
  return {{"realistic rows", slice(realistic_rows(), 0, kRealisticRows), realistic_operands(k)},
          {"edge rows", std::move(edges), realistic_operands(k)},
          {"edge suite", rows_of(suite), operands_of(suite, k)}};
}

std::vector<NamedConstants> stock_constants() {
  return {{"post-attention (stock)", post_attention(), true}, {"post-ffn (stock)", post_ffn(), true}};
}

// One run's tensors on the host; new_stream holds res (the emulator's new_stream, the debug
// build's res intermediate).
struct Tensors : ref::Results {
  explicit Tensors(std::int64_t rows) : ref::Results(rows, Wanted::everything), m(rows) {}
  std::int64_t m;
};

Tensors emulate_all(const Subject& s, const HostRows& h, StreamDtype sd) {
  Tensors e(h.n);
  ref::Inputs in;
  in.m = h.n;
  in.branch = h.branch.data();
  in.stream_dtype = sd;
  in.stream = sd == StreamDtype::f32 ? static_cast<const void*>(h.stream_f32.data()) : h.stream_bf16.data();
  s.emulator.run(in, e.outputs(), host_threads());
  return e;
}

// Device memory for one run of m rows: outputs and intermediates, poisoned with 0xFF bytes
// before every run (no correct result has those bits).
struct DeviceTensors {
  explicit DeviceTensors(std::int64_t rows)
      : m(rows), out(bytes16(rows)), new_stream(bytes32(rows)), y_b(bytes16(rows)), z(bytes16(rows)),
        res(bytes32(rows)), s1(per_row()), r1(per_row()), s2(per_row()), r2(per_row()) {}

  gpu::Outputs outputs(bool store) const {
    return {out.view(Dtype::bf16, {m, kH}), TensorView{store ? new_stream.get() : nullptr, Dtype::f32, {m, kH}}};
  }
  gpu::DeviceIntermediates intermediates() const {
    return {static_cast<float*>(s1.get()), static_cast<float*>(r1.get()), static_cast<std::uint16_t*>(y_b.get()),
            static_cast<float*>(res.get()),  static_cast<std::uint16_t*>(z.get()), static_cast<float*>(s2.get()),
            static_cast<float*>(r2.get())};
  }
  void poison() {
    for (gpu::DeviceBuffer* b : {&out, &new_stream, &y_b, &z, &res, &s1, &r1, &s2, &r2}) b->fill(0xFF);
  }
  // The outputs (new_stream from `new_stream` or from `res`) and the intermediates.
  Tensors fetch(const gpu::DeviceBuffer& stream_source) const {
    Tensors t(m);
    out.download(t.out.data(), bytes16(m));
    stream_source.download(t.new_stream.data(), bytes32(m));
    y_b.download(t.y_b.data(), bytes16(m));
    z.download(t.z.data(), bytes16(m));
    for (auto [buffer, host] : {std::pair{&s1, &t.post_row_sum}, {&r1, &t.r1}, {&s2, &t.pre_row_sum}, {&r2, &t.r2}})
      buffer->download(host->data(), host->size() * sizeof(float));
    return t;
  }

  std::int64_t m;
  gpu::DeviceBuffer out, new_stream, y_b, z, res, s1, r1, s2, r2;

 private:
  std::size_t per_row() const { return static_cast<std::size_t>(m) * sizeof(float); }
};

// A per-row value (S or r) of every row, bit for bit.
void expect_row_values(const std::string& context, const char* name, const std::vector<float>& got,
                       const std::vector<float>& want, const RowLabel& label) {
  REQUIRE(got.size() == want.size());
  for (std::size_t row = 0; row < want.size(); ++row)
    if (bits_of(got[row]) != bits_of(want[row])) {
      report_mismatch(context + ": '" + name + "' differs from the emulator at row " + std::to_string(row) +
                      (label ? " (" + label(static_cast<std::int64_t>(row)) + ")" : std::string()) + ": got " +
                      hex(bits_of(got[row]), 4) + ", the emulator " + hex(bits_of(want[row]), 4));
      return;
    }
}

// Rows whose out (or new_stream, when stored) differs from the emulator's in any bit.
std::int64_t rows_differing(const Tensors& got, const Tensors& want, bool store) {
  std::int64_t n = 0;
  for (std::int64_t row = 0; row < want.m; ++row) {
    const auto at = static_cast<std::ptrdiff_t>(elements(row));
    const auto end = static_cast<std::ptrdiff_t>(elements(row + 1));
    const bool out_differs = !std::equal(want.out.begin() + at, want.out.begin() + end, got.out.begin() + at);
    const bool stream_differs =
        store && !std::equal(want.new_stream.begin() + at, want.new_stream.begin() + end, got.new_stream.begin() + at,
                             [](float a, float b) { return bits_of(a) == bits_of(b); });
    n += out_differs || stream_differs;
  }
  return n;
}

constexpr const auto& kLayouts = gpu::kAllLayouts;

std::vector<std::pair<bool, gpu::Layout>> layouts_stored_or_not() {
  std::vector<std::pair<bool, gpu::Layout>> all;
  for (gpu::Layout layout : kLayouts)
    for (bool store : {true, false}) all.emplace_back(store, layout);
  return all;
}

// The launch a mutant is tried with in a layout: the late-gates bug needs late gates, the others
// early gates (the default for these few rows).
Variant mutant_variant(Mutant m, StreamDtype sd, gpu::Layout layout) {
  return Variant{sd, true, m == Mutant::late_gates_wrong_columns, true, layout};
}

}  // namespace

TEST_CASE("debug build: production outputs bit for bit, the emulator's intermediates, every stream dtype and storage") {
  for (const NamedConstants& k : stock_constants()) {
    for (const DataSet& data : data_sets(k.constants)) {
      Subject s(k, data.operands);
      gpu::DiagnosticBoundary diagnostic(s.constants, s.operands);
      const DeviceRows rows(data.rows);
      const std::int64_t m = data.rows.n;
      DeviceTensors production(m), debug(m);
      const Stream stream;
      for (StreamDtype sd : {StreamDtype::f32, StreamDtype::bf16}) {
        const Tensors want = emulate_all(s, data.rows, sd);
        for (const auto& [store, layout] : layouts_stored_or_not()) {
          Variant v = s.fused.variant_for(m, sd, store);
          v.layout = layout;
          const std::string context = s.name + " | " + data.name + " | " + describe(v);
          production.poison();
          debug.poison();
          s.fused.run(rows.branch_view(0, m), rows.stream_view(sd, 0, m), production.outputs(store), stream, v);
          diagnostic.run_with_intermediates(rows.branch_view(0, m), rows.stream_view(sd, 0, m), debug.outputs(store),
                                            debug.intermediates(), stream, v);
          CUDA_CHECK(cudaStreamSynchronize(stream));
          const Tensors p = production.fetch(production.new_stream);
          const Tensors d = debug.fetch(debug.res);
          expect_bits<std::uint16_t>(context, "out", d.out, p.out, "the production kernel", 0, data.rows.label);
          expect_bits<std::uint16_t>(context, "out", p.out, want.out, "the emulator", 0, data.rows.label);
          if (store) {
            const Tensors d_stored = debug.fetch(debug.new_stream);
            expect_bits<float>(context, "new_stream", d_stored.new_stream, p.new_stream, "the production kernel", 0,
                               data.rows.label);
            expect_bits<float>(context, "new_stream", p.new_stream, want.new_stream, "the emulator", 0, data.rows.label);
          }
          expect_bits<float>(context, "res", d.new_stream, want.new_stream, "the emulator", 0, data.rows.label);
          expect_bits<std::uint16_t>(context, "y_b", d.y_b, want.y_b, "the emulator", 0, data.rows.label);
          expect_bits<std::uint16_t>(context, "z", d.z, want.z, "the emulator", 0, data.rows.label);
          expect_row_values(context, "post_row_sum", d.post_row_sum, want.post_row_sum, data.rows.label);
          expect_row_values(context, "r1", d.r1, want.r1, data.rows.label);
          expect_row_values(context, "pre_row_sum", d.pre_row_sum, want.pre_row_sum, data.rows.label);
          expect_row_values(context, "r2", d.r2, want.r2, data.rows.label);
        }
      }
    }
  }
}

TEST_CASE("every planted-bug build differs from the emulator on realistic and edge rows, both stock boundaries") {
  for (const NamedConstants& k : stock_constants()) {
    const std::vector<DataSet> sets = data_sets(k.constants);
    std::vector<std::unique_ptr<Subject>> subjects;
    std::vector<std::unique_ptr<gpu::DiagnosticBoundary>> diagnostics;
    std::vector<Tensors> wants;
    for (const DataSet& data : sets) {
      subjects.push_back(std::make_unique<Subject>(k, data.operands));
      diagnostics.push_back(std::make_unique<gpu::DiagnosticBoundary>(k.constants, subjects.back()->operands));
      wants.push_back(emulate_all(*subjects.back(), data.rows, StreamDtype::f32));
    }
    const Stream stream;
    // One launch of a build on a data set: the rows it gets wrong.
    const auto differing = [&](Mutant m, std::size_t set, std::optional<Variant> variant) {
      const DeviceRows rows(sets[set].rows);
      const std::int64_t n = sets[set].rows.n;
      DeviceTensors d(n);
      d.poison();
      diagnostics[set]->run_mutant(m, rows.branch_view(0, n), rows.stream_view(StreamDtype::f32, 0, n), d.outputs(true),
                                   stream, variant);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      return rows_differing(d.fetch(d.new_stream), wants[set], true);
    };
    for (gpu::Layout layout : kLayouts) {
      const std::string in_layout = std::string(" (") + gpu::layout_name(layout) + " layout)";
      for (Mutant m : kAllMutants) {
        if (m == Mutant::pdl_wait_missing) continue;  // needs a producer: the next test case
        // rank_order needs R >= 3 partials: the DraftBoundary's branch is one rank
        // (test_gpu_all_reduce_diagnostics runs it on three).
        if (suite::not_applicable(m, k.constants, 1)) continue;
        const std::string name(mutant_name(m));
        std::int64_t caught = 0;
        for (std::size_t set = 0; set < sets.size(); ++set) {
          const std::int64_t n = differing(m, set, mutant_variant(m, StreamDtype::f32, layout));
          MESSAGE(k.name << " | " << name << in_layout << ": " << n << " of " << sets[set].rows.n << " " << sets[set].name
                         << " differ");
          caught += n;
        }
        CHECK_MESSAGE(caught > 0, k.name << ": the planted bug '" << name << "' is not caught by any row" << in_layout);
      }
      // The late-gates bug is confined to the late-gates path: early gates give the right bits.
      for (std::size_t set = 0; set < sets.size(); ++set)
        CHECK_MESSAGE(differing(Mutant::late_gates_wrong_columns, set, Variant{StreamDtype::f32, true, false, true, layout}) == 0,
                      k.name << " | " << sets[set].name << ": late_gates_wrong_columns changed an early-gates launch" << in_layout);
    }
  }
}

TEST_CASE("the missing PDL wait shows behind a producer; the production kernel there is right") {
  const NamedConstants k{"post-ffn (stock)", post_ffn(), true};
  Subject s(k, realistic_operands(k.constants));
  gpu::DiagnosticBoundary diagnostic(s.constants, s.operands);
  const HostRows host = slice(realistic_rows(), 0, 8);
  const std::int64_t m = host.n;
  const DeviceRows rows(host);
  const Tensors want = emulate_all(s, host, StreamDtype::f32);
  gpu::DeviceBuffer branch(bytes16(m));
  DeviceTensors d(m);
  const Stream stream(cudaStreamNonBlocking);
  for (gpu::Layout layout : kLayouts) {
    Variant v = diagnostic.variant_for(m, StreamDtype::f32, true, /*pdl=*/true);
    v.layout = layout;
    const std::string in_layout = std::string(" (") + gpu::layout_name(layout) + " layout)";
    // The branch the boundary reads holds poison until the producer copies: a boundary that read
    // it before its wait computes NaN rows.
    const auto run = [&](Mutant mutant) {
      branch.fill(0xFF);
      d.poison();
      gpu::run_after_producer(diagnostic, mutant, rows.branch_view(0, m).data, branch.view(Dtype::bf16, {m, kH}),
                              rows.stream_view(StreamDtype::f32, 0, m), d.outputs(true), kProducerDelayNs, stream, v);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      return d.fetch(d.new_stream);
    };
    const Tensors production = run(Mutant::none);
    expect_bits<std::uint16_t>("production behind the producer" + in_layout, "out", production.out, want.out, "the emulator");
    expect_bits<float>("production behind the producer" + in_layout, "new_stream", production.new_stream, want.new_stream,
                       "the emulator");
    // A race the mutant loses nearly always; three tries keep a slow start from hiding it.
    std::int64_t caught = 0;
    for (int attempt = 0; attempt < 3; ++attempt) caught += rows_differing(run(Mutant::pdl_wait_missing), want, true);
    MESSAGE("pdl_wait_missing" << in_layout << ": " << caught << " of " << 3 * m << " rows differ over 3 chains");
    CHECK_MESSAGE(caught > 0, "the planted bug 'pdl_wait_missing' is not caught behind a producer delayed "
                                  << kProducerDelayNs << " ns" << in_layout);
  }
}

TEST_CASE("diagnostics host API: refusals name what is wrong") {
  const NamedConstants k{"post-ffn (stock)", post_ffn(), true};
  Subject s(k, realistic_operands(k.constants));
  gpu::DiagnosticBoundary diagnostic(s.constants, s.operands);
  const HostRows host = slice(realistic_rows(), 0, 2);
  const DeviceRows rows(host);
  DeviceTensors d(2);
  const Stream stream;
  const TensorView branch = rows.branch_view(0, 2), stream_view = rows.stream_view(StreamDtype::f32, 0, 2);
  CHECK_THROWS_WITH_AS(diagnostic.run_mutant(Mutant::none, branch, stream_view, d.outputs(true), stream),
                       doctest::Contains("'none'"), InputError);
  std::vector<float> host_memory(elements(2));
  gpu::DeviceIntermediates in_host = d.intermediates();
  in_host.res = host_memory.data();
  CHECK_THROWS_WITH_AS(diagnostic.run_with_intermediates(branch, stream_view, d.outputs(true), in_host, stream),
                       doctest::Contains("'res' is not device memory"), InputError);
  gpu::DeviceIntermediates misaligned = d.intermediates();
  misaligned.y_b += 1;
  CHECK_THROWS_WITH_AS(diagnostic.run_with_intermediates(branch, stream_view, d.outputs(true), misaligned, stream),
                       doctest::Contains("'y_b' is not 16-byte aligned"), InputError);
  // The same call with every intermediate absent is accepted: each is optional.
  CHECK_NOTHROW(diagnostic.run_with_intermediates(branch, stream_view, d.outputs(true), {}, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}
