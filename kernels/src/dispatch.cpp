// The dispatch's rules (draft_boundary.hpp): which layout and which cluster placement a fused
// boundary launches for m rows, from what its device reports. What was measured behind each rule
// is beside it.
#include <boundary/gpu/draft_boundary.hpp>

#include <algorithm>

namespace boundary::gpu {

// From boundary_gpu_bench on the H200 (2026-12-04 18:05 UTC, F32 stream stored, us; each layout
// forced at m = 1 / 32 / 64 / 80 / 96 / 112 / 132 / 160 / 200 / 264 / 1024 / 8192):
//   cluster 1.66 / 2.32 / 3.29 / 3.69 / 3.88 / 3.99 / 5.52 / 6.56 / 7.46 / 9.59 / 34.95 / 255.91
//   cta     3.80 / 3.92 / 4.05 / 4.43 / 4.50 / 4.53 / 4.76 / 7.44 / 7.48 / 7.50 / 30.00 / 215.57
//   pair    3.00 / 3.12 / 3.48 / 4.43 / 4.53 / 4.62 / 4.91 / 8.00 / 8.03 / 8.12 / 30.38 / 216.21
// and between 112 and 132 on an H100 (2026-12-06 about 11:27 UTC, two runs alike; 124 clusters
// resident there), m = 116 / 120 / 122 / 123 / 124 / 125 / 128: cluster 4.25 / 4.30 / 4.42 /
// 4.60 / 4.79 / 5.16 / 5.55, cta 4.88 / 4.90 / 4.92 / 4.92 / 4.93 / 4.95 / 4.98.
// The cluster layout (8 CTAs a row, not persistent) wins while its rows fit one wave of resident
// clusters (placed balanced from the full spread wave, cluster_placement) and in the second wave's first
// half (one row a cluster, against two rows for some persistent CTAs); cta, one row a CTA, from
// one wave to the SM count (none on an H100, whose balanced wave is its 132 SMs) and from 3/2 of
// it on.
Layout draft_boundary_layout(std::int64_t m, std::int64_t sm_count, const ClusterWaves& waves) {
  const std::int64_t wave = std::max(waves.spread, waves.balanced);
  if (m <= wave || (m > sm_count && 2 * m <= 3 * sm_count)) return Layout::cluster;
  return Layout::cta;
}

// From boundary_gpu_bench on the H200 (2026-12-04 18:05 UTC, R = 8, F32 stream stored, us; cluster
// / pair / quad): m = 1 1.96 / 4.31 / 3.76, 132 7.49 / 8.32 / 10.76, 160 10.48 / 12.76 / 11.32,
// 200 12.61 / 18.86 / 14.62, 264 18.70 / 22.03 / 19.06, 1024 65.30 / 75.59 / 58.64, 8192 490.36 /
// 537.54 / 422.19: cluster up to twice the SM count, quad above. The cluster layout's rows are
// placed by the DraftBoundary's rule (cluster_placement) on the R-rank build's own waves: balanced
// from one to the other, 124 .. 132 on an H100, where its 8-CTA build measured the same either way
// from 125 on (2026-12-06 about 16:14 UTC, R = 8, us, balanced / spread: m = 125 6.43 / 6.41, 128
// 6.46 / 6.46, 132 6.56 / 6.55) and 0.89x at 124 on an H200 (below); one rule for both boundaries.
Layout all_reduce_layout(std::int64_t m, std::int64_t sm_count) {
  return m <= 2 * sm_count ? Layout::cluster : Layout::quad;
}

// The cluster layout's rows are placed balanced where that holds them in one wave and spread
// would need a second or fill its wave to the last cluster, leaving the next boundary's clusters
// no room to start beside it (m = 124 .. 132 on an H100, likely on an H200); elsewhere spread,
// measured as fast or faster:
// H100, 2026-12-06 about 13:20 UTC, boundary_gpu_bench --ranks 8, the cluster layout forced,
// three runs a placement alternating, F32 stream stored, spread / balanced, us: m = 24 2.25 /
// 2.34, 32 2.44 / 2.48, 48 2.78 / 2.70, 64 3.47 / 3.04, 96 4.07 / 4.10, 112 4.21 / 4.36, 124 4.79
// / 4.45, 128 5.55 / 4.49, 132 5.71 / 4.66 (cta 5.05), 136 5.85 / 5.71, 160 6.38 / 6.36, 198
// 7.35 / 7.25, 264 9.58 / 8.75; the BF16 stream, dispatched, 1 to 6% slower balanced at 80 ..
// 112 and 160 .. 198. Within a wave, which m gains follows where the clusters land (no rule
// found); whether the rows fit one wave is the rule that holds. At the full spread wave (124
// rows), H200, 2026-12-06 about 20:50 UTC, this rule against balanced from 112 rows, two runs a
// build alternating, us: m = 124 F32 4.27 / 3.85, BF16 4.14 / 3.54, the all-reduce boundary (R =
// 8) 6.81 / 6.05; at 112, 116 and 120 the same for F32 (1.002x to 1.004x), BF16 1.2 to 2% slower
// balanced, the all-reduce boundary 0.4 to 0.8%. The same gain at 124 on an H100 (13:20 and 18:25
// UTC, F32 spread / balanced 4.79 / 4.45, 4.39 / 4.00). Equal waves leave nothing to gain.
ClusterPlacement cluster_placement(std::int64_t m, Layout layout, const ClusterWaves& waves) {
  const bool balanced = layout == Layout::cluster && waves.balanced > waves.spread && m >= waves.spread &&
                        m <= waves.balanced;
  return balanced ? ClusterPlacement::balanced : ClusterPlacement::spread;
}

}  // namespace boundary::gpu
