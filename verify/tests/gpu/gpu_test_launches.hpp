// Launches under test: output buffers with a guard row, the variant matrix an m gets (Coverage),
// the standard m steps, and the check of one launch against the emulator bit for bit.
#pragma once

#include "gpu_test_rows.hpp"

#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace gpu_test {

// Output buffers for up to `capacity` rows plus the guard row, and pinned staging to read them.
struct Bench {
  explicit Bench(std::int64_t rows)
      : capacity(rows),
        out(bytes16(rows + 1)),
        new_stream(bytes32(rows + 1)),
        staging_out(bytes16(rows + 1)),
        staging_new_stream(bytes32(rows + 1)) {}

  gpu::Outputs outputs(std::int64_t m, bool store) const {
    return {TensorView{out.get(), Dtype::bf16, {m, kH}}, TensorView{store ? new_stream.get() : nullptr, Dtype::f32, {m, kH}}};
  }
  // The m rows a launch writes and the guard row after them.
  void poison_rows(std::int64_t m) const {
    REQUIRE(m <= capacity);
    poison(out.get(), bytes16(m + 1), stream);
    poison(new_stream.get(), bytes32(m + 1), stream);
  }
  // Device rows -> pinned staging; the spans stay valid until the next fetch.
  std::span<const std::uint16_t> fetch_out(const void* device, std::int64_t rows) const {
    REQUIRE(bytes16(rows) <= staging_out.bytes());
    CUDA_CHECK(cudaMemcpyAsync(staging_out.get(), device, bytes16(rows), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    return {static_cast<const std::uint16_t*>(staging_out.get()), elements(rows)};
  }
  std::span<const float> fetch_new_stream(const void* device, std::int64_t rows) const {
    REQUIRE(bytes32(rows) <= staging_new_stream.bytes());
    CUDA_CHECK(cudaMemcpyAsync(staging_new_stream.get(), device, bytes32(rows), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    return {static_cast<const float*>(staging_new_stream.get()), elements(rows)};
  }

  const std::int64_t capacity;
  const Stream stream;
  const DeviceBuffer out, new_stream;
  const PinnedBuffer staging_out, staging_new_stream;
};

enum class Impl { fused, eager };

struct Launch {
  Impl impl = Impl::fused;
  bool store = true;
  std::optional<Variant> variant;  // fused only; nullopt: run() picks variant_for(m, ...)
};

inline std::string describe(const Variant& v) {
  return std::string("[stream ") + (v.stream == StreamDtype::f32 ? "F32" : "BF16") + (v.store_stream ? ", stored" : ", not stored") +
         (v.late_gates ? ", late gates" : ", early gates") + (v.pdl ? ", PDL" : ", no PDL") + ", " +
         gpu::layout_name(v.layout) + " layout" +
         (v.layout == gpu::Layout::cluster ? std::string(", ") + gpu::placement_name(v.placement) : std::string()) + "]";
}

inline std::string describe(const Subject& s, const Launch& l, StreamDtype sd, std::int64_t m) {
  if (l.impl == Impl::eager)
    return std::string("eager chain [stream ") + (sd == StreamDtype::f32 ? "F32" : "BF16") +
           (l.store ? ", stored]" : ", not stored]");
  if (l.variant) return "fused, forced variant " + describe(*l.variant);
  return "fused, default variant " + describe(s.fused.variant_for(m, sd, l.store));
}

inline void run_launch(Subject& s, const Launch& l, const TensorView& branch, const TensorView& stream, const gpu::Outputs& out,
                cudaStream_t cuda_stream) {
  if (l.impl == Impl::eager) s.eager.run(branch, stream, out, cuda_stream);
  else s.fused.run(branch, stream, out, cuda_stream, l.variant);
}

// How much of the variant matrix one m gets.
enum class Coverage {
  full,  // the eager chain stored / not, the default variant stored / not, and all 40 forced variants
         // (every layout, the cluster layout both placed spread and balanced)
  some,  // the eager chain, the default variant stored / not, the late-gates choice and the layout flipped without PDL
  few,   // the eager chain, the default variant, one forced variant (flipped, not stored, no PDL, the other layout)
};

// A layout other than l, chosen so that each is forced where it is not the natural one: quad at
// small m, cta between, pair at large m.
inline gpu::Layout other_layout(gpu::Layout l) {
  switch (l) {
    case gpu::Layout::cluster: return gpu::Layout::quad;
    case gpu::Layout::pair: return gpu::Layout::cta;
    case gpu::Layout::cta: return gpu::Layout::pair;
    case gpu::Layout::quad: return gpu::Layout::cluster;
  }
  return gpu::Layout::cta;
}

inline std::vector<Launch> launches(Coverage c, const gpu::BoundaryBase& b, std::int64_t m, StreamDtype sd) {
  const Variant natural = b.variant_for(m, sd, true);
  const bool late = natural.late_gates;
  const gpu::Layout other = other_layout(natural.layout);
  std::vector<Launch> l = {{Impl::eager, true, std::nullopt}, {Impl::fused, true, std::nullopt}};
  if (c == Coverage::few) {
    l.push_back({Impl::fused, false, Variant{sd, false, !late, false, other}});
    return l;
  }
  l.push_back({Impl::fused, false, std::nullopt});
  if (c == Coverage::some) {
    l.push_back({Impl::fused, true, Variant{sd, true, !late, false, other}});
    return l;
  }
  l.push_back({Impl::eager, false, std::nullopt});
  for (gpu::Layout layout : gpu::kAllLayouts)
    for (bool store : {true, false})
      for (bool late_gates : {false, true})
        for (bool pdl : {false, true}) l.push_back({Impl::fused, store, Variant{sd, store, late_gates, pdl, layout}});
  for (bool store : {true, false})
    for (bool late_gates : {false, true})
      for (bool pdl : {false, true})
        l.push_back({Impl::fused, store,
                     Variant{sd, store, late_gates, pdl, gpu::Layout::cluster, gpu::ClusterPlacement::balanced}});
  return l;
}

struct Step {
  std::int64_t m;
  std::int64_t first;  // the data row the batch starts at
  Coverage coverage;
};

// The m: 1, 2, the last of one wave of the cluster layout's clusters placed spread and
// the next (124 and 125 on an H100: the dispatch's switch to balanced), the same placed balanced
// (132 and 133 on an H100: where the dispatch would leave the cluster layout but for the SM
// count), the three around the SM count (131, 132, 133: the second cluster window above it),
// 1000 and 4096 (more rows than one wave of CTAs); the full matrix on the smallest and just above
// the SM count.
inline std::vector<Step> standard_steps(const gpu::BoundaryBase& b, std::int64_t max_m, std::int64_t first_for_1000) {
  const int sm = b.sm_count(), wave = b.max_active_clusters();  // where the dispatch changes variant
  const int balanced = b.max_active_clusters(gpu::ClusterPlacement::balanced);
  std::set<std::int64_t> ms = {1, 2, wave, wave + 1, balanced, balanced + 1, 131, 132, 133, sm - 1, sm, sm + 1, 1000, kRows};
  std::vector<Step> steps;
  for (std::int64_t m : ms) {
    if (m < 1 || m > max_m) continue;
    const Coverage c = m <= 2 || m == 133 || m == sm + 1 ? Coverage::full : m >= kRows ? Coverage::few : Coverage::some;
    steps.push_back({m, m == 1000 ? first_for_1000 : 0, c});
  }
  return steps;
}

inline std::int64_t rows_needed(const std::vector<Step>& steps) {
  std::int64_t n = 0;
  for (const Step& s : steps) n = std::max(n, s.first + s.m);
  return n;
}

// One launch of m rows from data row `first`: poisoned outputs, then every element of out (and
// new_stream when stored) against the emulator, and the guard row untouched.
inline void check_launch(Subject& s, const DeviceRows& rows, const RowLabel& label, const Expected& want, StreamDtype sd,
                  const Step& step, const Launch& l, const Bench& bench, const std::string& data_name) {
  const std::int64_t m = step.m;
  const std::string context = s.name + " | " + data_name + " | m = " + std::to_string(m) + " from row " +
                              std::to_string(step.first) + " | " + describe(s, l, sd, m);
  bench.poison_rows(m);
  run_launch(s, l, rows.branch_view(step.first, m), rows.stream_view(sd, step.first, m), bench.outputs(m, l.store),
             bench.stream);
  CUDA_CHECK(cudaStreamSynchronize(bench.stream));
  const auto out = bench.fetch_out(bench.out.get(), m + 1);
  expect_bits(context, "out", out.first(elements(m)), want.out_rows(step.first, m), "the emulator", step.first, label);
  expect_untouched(context, "out", out.subspan(elements(m)));
  if (!l.store) return;
  const auto ns = bench.fetch_new_stream(bench.new_stream.get(), m + 1);
  expect_bits(context, "new_stream", ns.first(elements(m)), want.new_stream_rows(step.first, m), "the emulator", step.first,
              label);
  expect_untouched(context, "new_stream", ns.subspan(elements(m)));
}

inline void check_steps(Subject& s, const HostRows& host, const DeviceRows& rows, const std::vector<Step>& steps,
                 const Bench& bench, const std::string& data_name) {
  for (StreamDtype sd : {StreamDtype::f32, StreamDtype::bf16}) {
    const Expected want = emulate(s, host, sd, rows_needed(steps));
    for (const Step& step : steps) {
      // The dispatcher loads the gates early at every m (late gates stay a variant, launched below),
      // and places the rows by cluster_placement on this device's waves (the rule itself, on
      // written-out waves, is test_dispatch's; docs/kernels.md).
      const Variant natural = s.fused.variant_for(step.m, sd, true);
      CHECK_FALSE(natural.late_gates);
      CHECK_MESSAGE(natural.placement == gpu::cluster_placement(step.m, natural.layout, s.fused.cluster_waves()),
                    "m = " << step.m << ": " << describe(natural));
      for (const Launch& l : launches(step.coverage, s.fused, step.m, sd))
        check_launch(s, rows, host.label, want, sd, step, l, bench, data_name);
    }
  }
}

}  // namespace gpu_test
