#include "bench_report.hpp"

#include <boundary/types.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

namespace boundary::bench {

namespace {

namespace bg = gpu;

// The targets this benchmark can judge alone (torch.compile's are judged by
// verify/bench/combine_bench.py, which has both sides).
constexpr double kLatencyTargetUs = 2.0;         // fused <= 2.0 us per boundary ...
constexpr std::int64_t kLatencyTargetRows = 32;  // ... for m up to 32
constexpr double kCopyTarget = 0.92;             // fused >= 92% of the SM copy bandwidth ...
constexpr std::int64_t kCopyTargetFromRows = 1024;  // ... for prefill batches (m = 1024 and 8192)
constexpr double kAllReduceChainTarget = 0.85;   // fused all-reduce boundary <= 0.85 x its chain at every m
constexpr double kAllReduceCopyTarget = 0.90;    // ... and >= 90% of the SM copy bandwidth at m = 8192
constexpr std::int64_t kAllReduceCopyRows = 8192;

nlohmann::json timing_json(const Timing& t) { return {{"median_us", t.median_us}, {"min_us", t.min_us}}; }

Division other(Division d) { return d == Division::dynamic ? Division::grid_stride : Division::dynamic; }

// The JSON key of a copy's timing: the grid-stride copy keeps the key it had before the dynamic one.
std::string copy_key(const char* key, Division d) { return d == Division::dynamic ? key + std::string("_dynamic") : key; }

// The dispatched layout of a row, with the cluster layout's placement.
std::string dispatched_name(const RowResult& r) {
  std::string name = bg::layout_name(r.layout);
  if (r.layout == bg::Layout::cluster) name += std::string(", ") + bg::placement_name(r.placement);
  return name;
}

}  // namespace

void print_row_details(const RowResult& r, const DeviceInfo& dev) {
  std::printf("m = %lld: %d launches per graph, %d buffer set%s of %.1f MB (%s)\n", static_cast<long long>(r.m),
              r.launches, r.sets, r.sets == 1 ? "" : "s", r.bytes_f32 / 1e6,
              r.sets == 1 ? "L2-resident: every launch reuses one set, as in decode"
                          : "rotated inside the graph: the working set exceeds the L2, data from HBM");
  auto line = [](const char* name, const Timing& t, double bytes) {
    std::printf("  %-22s median %9.2f us  min %9.2f us", name, t.median_us, t.min_us);
    if (bytes > 0) std::printf("  %8.1f GB/s", bytes / (t.median_us * 1e3));
    std::printf("\n");
  };
  line("empty kernel", r.empty_plain, 0);
  line("empty kernel + PDL", r.empty_pdl, 0);
  line("fused, F32 stream", r.fused_f32, r.bytes_f32);
  line("fused, BF16 stream", r.fused_bf16, r.bytes_bf16);
  line("eager chain, F32", r.eager, r.bytes_f32);
  line("cta layout, F32", r.cta_f32, r.bytes_f32);
  line("cluster layout, F32", r.cluster_f32, r.bytes_f32);
  line("cluster balanced, F32", r.cluster_balanced_f32, r.bytes_f32);
  line("pair layout, F32", r.pair_f32, r.bytes_f32);
  line("quad layout, F32", r.quad_f32, r.bytes_f32);
  line("floor: its traffic", r.traffic, r.bytes_f32);
  line("floor: SM copy of it", r.copy_f32.grid_stride, r.bytes_f32);
  line("floor: SM copy, chunks", r.copy_f32.dynamic, r.bytes_f32);
  line("BF16: SM copy of it", r.copy_bf16.grid_stride, r.bytes_bf16);
  line("BF16: SM copy, chunks", r.copy_bf16.dynamic, r.bytes_bf16);
  std::printf("  dispatched layout: %s\n", dispatched_name(r).c_str());
  std::printf("  eager chain moves %.2fx the minimum traffic (%.1f GB/s actual); L2 %.0f MB\n",
              r.bytes_eager / r.bytes_f32, gbps(r.bytes_eager, r.eager), static_cast<double>(dev.l2_bytes) / 1e6);
  if (const auto& a = r.all_reduce) {
    std::printf("  all-reduce boundary, R = %d: %d launches per graph, %d buffer set%s of %.1f MB, %s layout\n", a->ranks,
                a->launches, a->sets, a->sets == 1 ? "" : "s", a->bytes / 1e6, bg::layout_name(a->layout));
    line("fused all-reduce, F32", a->fused, a->bytes);
    line("all-reduce + Draft", a->chain, a->bytes);
    line("cluster layout, AR", a->cluster, a->bytes);
    line("pair layout, AR", a->pair, a->bytes);
    line("quad layout, AR", a->quad, a->bytes);
    line("floor: cluster launch", a->empty_cluster, 0);
    line("floor: + 3 cluster bars", a->cluster_barriers, 0);
    line("floor: its traffic", a->traffic, a->bytes);
  }
  std::fflush(stdout);
}

std::vector<Target> evaluate(const std::vector<RowResult>& rows, const CopyResult& copy) {
  std::vector<Target> targets;
  for (const RowResult& r : rows) {
    if (r.m <= kLatencyTargetRows)
      targets.push_back({"fused us per boundary", r.m, r.fused_f32.median_us, kLatencyTargetUs,
                         r.fused_f32.median_us <= kLatencyTargetUs});
    if (r.m >= kCopyTargetFromRows) {
      const double share = gbps(r.bytes_f32, r.fused_f32) / copy.gbps_median();
      targets.push_back({"fused GB/s / SM copy GB/s", r.m, share, kCopyTarget, share >= kCopyTarget});
    }
    if (!r.all_reduce) continue;
    const AllReduceResult& a = *r.all_reduce;
    const double ratio = a.fused.median_us / a.chain.median_us;
    targets.push_back({"all-reduce fused / chain", r.m, ratio, kAllReduceChainTarget, ratio <= kAllReduceChainTarget});
    if (r.m == kAllReduceCopyRows) {
      const double share = gbps(a.bytes, a.fused) / copy.gbps_median();
      targets.push_back({"all-reduce fused GB/s / SM copy GB/s", r.m, share, kAllReduceCopyTarget, share >= kAllReduceCopyTarget});
    }
  }
  return targets;
}

void print_table(const std::vector<RowResult>& rows, const CopyResult& copy, const std::vector<Target>& targets) {
  std::printf("\n%6s | %8s | %16s | %12s | %13s | %8s | %11s | %9s | %9s | %11s | %11s | %10s | %13s | %11s\n", "m",
              "empty us", "layout", "fused f32 us", "fused bf16 us", "cta us", "cluster us", "eager us", "copy us",
              "dyn copy us", "fused/empty", "fused GB/s", "% of SM copy", "eager/fused");
  std::printf("%s\n", std::string(182, '-').c_str());
  for (const RowResult& r : rows) {
    const double fused_gbps = gbps(r.bytes_f32, r.fused_f32);
    std::printf("%6lld | %8.2f | %16s | %12.2f | %13.2f | %8.2f | %11.2f | %9.2f | %9.2f | %11.2f | %10.3fx | %10.1f | %12.1f%% | %10.2fx\n",
                static_cast<long long>(r.m), r.empty().median_us, dispatched_name(r).c_str(), r.fused_f32.median_us,
                r.fused_bf16.median_us, r.cta_f32.median_us, r.cluster_f32.median_us, r.eager.median_us,
                r.copy_f32.grid_stride.median_us, r.copy_f32.dynamic.median_us, r.fused_f32.median_us / r.empty().median_us, fused_gbps, 100.0 * fused_gbps / copy.gbps_median(),
                r.eager.median_us / r.fused_f32.median_us);
  }
  // The ceiling: the faster division, named, with the other beside it.
  const Division best = copy.ceiling_division();
  const CopyTiming& slower = best == Division::dynamic ? copy.sm : copy.sm_dynamic;
  std::printf("SM copy bandwidth: %.1f GB/s median, %.1f GB/s best (%s; %s %.1f GB/s median; 16-byte loads and stores,"
              " %.2f GiB, read + written)\n",
              copy.ceiling().gbps_median, copy.ceiling().gbps_best, division_name(best), division_name(other(best)),
              slower.gbps_median, static_cast<double>(copy.bytes) / (1ull << 30));
  std::printf("cudaMemcpyAsync D2D bandwidth: %.1f GB/s median, %.1f GB/s best (the same buffers; not the ceiling)\n",
              copy.memcpy.gbps_median, copy.memcpy.gbps_best);
  std::printf("medians of graph replays, us per boundary; empty = the faster of an empty kernel with and without PDL,"
              " same grid;\ncopy, dyn copy = the SM copy of the boundary's own tensors (branch -> out, F32 stream -> new_stream), full grid,"
              " PDL, the same buffer sets, grid-stride and chunks handed out at run time;\n%% of SM copy: of the faster"
              " SM copy bandwidth above; GB/s on the minimum traffic (F32 stream stored: 12 B per element + gates and weights once);"
              " m < %lld L2-resident, larger m rotated from HBM\n",
              static_cast<long long>(kRotateFromRows));
  std::printf("targets: fused <= %.1f us per boundary for m <= %lld; fused >= %.0f%% of the SM copy bandwidth for m >= %lld\n",
              kLatencyTargetUs, static_cast<long long>(kLatencyTargetRows), 100 * kCopyTarget,
              static_cast<long long>(kCopyTargetFromRows));
  if (std::any_of(rows.begin(), rows.end(), [](const RowResult& r) { return r.all_reduce.has_value(); })) {
    std::printf("\nall-reduce boundary, R = %d (F32 stream stored; GB/s on R partials + stream + outputs)\n",
                rows.front().all_reduce ? rows.front().all_reduce->ranks : 0);
    std::printf("%6s | %8s | %12s | %15s | %11s | %10s | %13s | %11s\n", "m", "empty us", "fused AR us",
                "AR + Draft us", "fused/empty", "fused GB/s", "% of SM copy", "chain/fused");
    std::printf("%s\n", std::string(106, '-').c_str());
    for (const RowResult& r : rows) {
      if (!r.all_reduce) continue;
      const AllReduceResult& a = *r.all_reduce;
      std::printf("%6lld | %8.2f | %12.2f | %15.2f | %10.3fx | %10.1f | %12.1f%% | %10.2fx\n", static_cast<long long>(r.m),
                  r.empty().median_us, a.fused.median_us, a.chain.median_us, a.fused.median_us / r.empty().median_us,
                  gbps(a.bytes, a.fused), 100.0 * gbps(a.bytes, a.fused) / copy.gbps_median(),
                  a.chain.median_us / a.fused.median_us);
    }
  }
  for (const Target& t : targets)
    std::printf("  %-4s m = %-5lld %s = %.3f (%s %.2f)\n", t.pass ? "PASS" : "MISS", static_cast<long long>(t.m),
                t.name.c_str(), t.measured, t.name.find("GB/s") == std::string::npos ? "limit" : "at least", t.limit);
  if (targets.empty()) std::printf("  (no measured m falls under a target)\n");
}


nlohmann::json to_json(const Options& o, const DeviceInfo& dev, const ClusterWaveCounts& waves,
                       const gpu::HandoutThresholds& handout, const CopyResult& copy, const std::vector<RowResult>& rows,
                       const std::vector<Target>& targets) {
  nlohmann::json j;
  const auto waves_json = [](const gpu::ClusterWaves& w) {
    return nlohmann::json{{"spread", w.spread}, {"balanced", w.balanced}};
  };
  j["device"] = {{"name", dev.name},
                 {"sm_count", dev.sm_count},
                 {"l2_bytes", dev.l2_bytes},
                 {"cluster_waves", {{"draft_boundary", waves_json(waves.draft)}, {"all_reduce", waves_json(waves.all_reduce)}}}};
  j["constants"] = o.constants.string();
  j["method"] = {{"launches_per_graph", o.launches}, {"replays", o.replays}, {"warmup_replays", o.warmup},
                 {"seed", o.seed}, {"rotate_from_rows", kRotateFromRows}, {"gates", o.gates},
                 {"handout", {{"cta_f32", handout.cta_f32}, {"cta_bf16", handout.cta_bf16}, {"quad", handout.quad},
                              {"source", o.handout.empty() ? "device" : "option"}}}};
  const auto copy_json = [&](const CopyTiming& c) {
    return nlohmann::json{{"bytes_each_way", copy.bytes}, {"time", timing_json(c.time)}, {"gbps_median", c.gbps_median},
                          {"gbps_best", c.gbps_best}};
  };
  j["sm_copy"] = copy_json(copy.sm);  // grid-stride
  j["sm_copy_dynamic"] = copy_json(copy.sm_dynamic);
  j["sm_copy_ceiling"] = copy_key("sm_copy", copy.ceiling_division());  // every percent_of_sm_copy's
  j["memcpy_copy"] = copy_json(copy.memcpy);
  for (const RowResult& r : rows) {
    const double fused_gbps = gbps(r.bytes_f32, r.fused_f32);
    if (const auto& a = r.all_reduce)
      j["all_reduce_rows"].push_back({{"m", r.m},
                                      {"ranks", a->ranks},
                                      {"layout", bg::layout_name(a->layout)},
                                      {"buffer_sets", a->sets},
                                      {"launches_per_graph", a->launches},
                                      {"empty_us", r.empty().median_us},
                                      {"fused", timing_json(a->fused)},
                                      {"all_reduce_then_draft", timing_json(a->chain)},
                                      {"floor_empty_cluster", timing_json(a->empty_cluster)},
                                      {"floor_cluster_barriers", timing_json(a->cluster_barriers)},
                                      {"floor_traffic", timing_json(a->traffic)},
                                      {"cluster", timing_json(a->cluster)},
                                      {"pair", timing_json(a->pair)},
                                      {"quad", timing_json(a->quad)},
                                      {"min_bytes", a->bytes},
                                      {"fused_over_empty", a->fused.median_us / r.empty().median_us},
                                      {"fused_gbps", gbps(a->bytes, a->fused)},
                                      {"percent_of_sm_copy", 100.0 * gbps(a->bytes, a->fused) / copy.gbps_median()},
                                      {"chain_over_fused", a->chain.median_us / a->fused.median_us}});
    j["rows"].push_back({{"m", r.m},
                         {"buffer_sets", r.sets},
                         {"launches_per_graph", r.launches},
                         {"l2_resident", r.sets == 1},
                         {"empty_us", r.empty().median_us},
                         {"empty", timing_json(r.empty_plain)},
                         {"empty_pdl", timing_json(r.empty_pdl)},
                         {"fused_f32", timing_json(r.fused_f32)},
                         {"fused_bf16", timing_json(r.fused_bf16)},
                         {"eager_f32", timing_json(r.eager)},
                         {"layout", bg::layout_name(r.layout)},
                         {"placement", bg::placement_name(r.placement)},
                         {"cta_f32", timing_json(r.cta_f32)},
                         {"cluster_f32", timing_json(r.cluster_f32)},
                         {"cluster_balanced_f32", timing_json(r.cluster_balanced_f32)},
                         {"pair_f32", timing_json(r.pair_f32)},
                         {"quad_f32", timing_json(r.quad_f32)},
                         {"floor_traffic", timing_json(r.traffic)},
                         {"floor_sm_copy", timing_json(r.copy_f32.grid_stride)},
                         {"floor_sm_copy_dynamic", timing_json(r.copy_f32.dynamic)},
                         {"floor_sm_copy_faster", copy_key("floor_sm_copy", r.copy_f32.division())},
                         {"floor_sm_copy_bf16", timing_json(r.copy_bf16.grid_stride)},
                         {"floor_sm_copy_bf16_dynamic", timing_json(r.copy_bf16.dynamic)},
                         {"floor_sm_copy_bf16_faster", copy_key("floor_sm_copy_bf16", r.copy_bf16.division())},
                         {"min_bytes_f32", r.bytes_f32},
                         {"min_bytes_bf16", r.bytes_bf16},
                         {"eager_bytes", r.bytes_eager},
                         {"fused_over_empty", r.fused_f32.median_us / r.empty().median_us},
                         {"fused_gbps", fused_gbps},
                         {"fused_bf16_gbps", gbps(r.bytes_bf16, r.fused_bf16)},
                         {"eager_gbps_min_traffic", gbps(r.bytes_f32, r.eager)},
                         {"eager_traffic_ratio", r.bytes_eager / r.bytes_f32},
                         {"percent_of_sm_copy", 100.0 * fused_gbps / copy.gbps_median()},
                         {"eager_over_fused", r.eager.median_us / r.fused_f32.median_us}});
  }
  for (const Target& t : targets)
    j["targets"].push_back({{"name", t.name}, {"m", t.m}, {"measured", t.measured}, {"limit", t.limit}, {"pass", t.pass}});
  return j;
}

void write_json(const std::filesystem::path& path, const nlohmann::json& j) {
  std::ofstream f(path);
  f << j.dump(2) << "\n";
  f.close();
  if (!f) throw InputError("--json: cannot write " + path.string());
}

}  // namespace boundary::bench
