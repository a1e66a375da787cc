// The benchmark's results: details per m as they are measured, then the summary table, the copy
// bandwidths and PASS/MISS per target on stdout, and the same numbers as JSON (data first,
// formatted last).
#pragma once

#include "bench_measure.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace boundary::bench {

struct Target {
  std::string name;
  std::int64_t m;
  double measured, limit;
  bool pass;
};

std::vector<Target> evaluate(const std::vector<RowResult>& rows, const CopyResult& copy);
void print_row_details(const RowResult& r, const DeviceInfo& dev);
void print_table(const std::vector<RowResult>& rows, const CopyResult& copy, const std::vector<Target>& targets);
// The cluster layout's waves on this device (clusters resident at once, placed spread and
// balanced), which the dispatch places rows by: the DraftBoundary's one-rank build and the
// all-reduce boundary's R-rank build (JSON device.cluster_waves).
struct ClusterWaveCounts {
  gpu::ClusterWaves draft, all_reduce;
};
// handout: the thresholds the fused objects ran with (JSON method.handout).
nlohmann::json to_json(const Options& o, const DeviceInfo& dev, const ClusterWaveCounts& waves,
                       const gpu::HandoutThresholds& handout, const CopyResult& copy, const std::vector<RowResult>& rows,
                       const std::vector<Target>& targets);
// Throws InputError naming --json when the file cannot be written.
void write_json(const std::filesystem::path& path, const nlohmann::json& j);

}  // namespace boundary::bench
