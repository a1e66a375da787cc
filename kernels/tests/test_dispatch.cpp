// The dispatch's rules (draft_boundary.hpp) without a GPU (ctest label cpu), on the figures an
// H100 reports (132 SMs; the cluster layout's waves: 124 clusters placed spread, 132 balanced) and
// on a device whose balanced wave stops short of its SM count. The expected layouts and placements
// are the rules as docs/kernels.md states them, row by row at each boundary, not the code's output.
#include <boundary/gpu/draft_boundary.hpp>

#include <doctest/doctest.h>

#include <cstdint>

using namespace boundary::gpu;

namespace {

constexpr std::int64_t kH100Sms = 132;
constexpr ClusterWaves kH100Waves{124, 132};

}  // namespace

TEST_CASE("draft_boundary_layout: cluster up to the larger wave and from above the SM count to 3/2 of it, cta otherwise") {
  for (std::int64_t m : {1, 2, 32, 124, 125, 132, 133, 150, 198})
    CHECK_MESSAGE(draft_boundary_layout(m, kH100Sms, kH100Waves) == Layout::cluster, "m = " << m);
  for (std::int64_t m : {199, 264, 1000, 8192})
    CHECK_MESSAGE(draft_boundary_layout(m, kH100Sms, kH100Waves) == Layout::cta, "m = " << m);
  // Balanced wave 120 on 132 SMs: cta from one row past the wave up to the SM count.
  const ClusterWaves short_waves{112, 120};
  CHECK(draft_boundary_layout(120, kH100Sms, short_waves) == Layout::cluster);
  for (std::int64_t m : {121, 131, 132})
    CHECK_MESSAGE(draft_boundary_layout(m, kH100Sms, short_waves) == Layout::cta, "m = " << m);
  CHECK(draft_boundary_layout(133, kH100Sms, short_waves) == Layout::cluster);
}

TEST_CASE("all_reduce_layout: cluster up to twice the SM count, quad above") {
  CHECK(all_reduce_layout(1, kH100Sms) == Layout::cluster);
  CHECK(all_reduce_layout(264, kH100Sms) == Layout::cluster);
  CHECK(all_reduce_layout(265, kH100Sms) == Layout::quad);
  CHECK(all_reduce_layout(8192, kH100Sms) == Layout::quad);
}

TEST_CASE("cluster_placement: balanced from the full spread wave to the balanced wave, only for the cluster layout") {
  for (std::int64_t m : {1, 64, 123, 133, 198})
    CHECK_MESSAGE(cluster_placement(m, Layout::cluster, kH100Waves) == ClusterPlacement::spread, "m = " << m);
  for (std::int64_t m : {124, 125, 128, 132})
    CHECK_MESSAGE(cluster_placement(m, Layout::cluster, kH100Waves) == ClusterPlacement::balanced, "m = " << m);
  for (Layout l : {Layout::cta, Layout::pair, Layout::quad})
    CHECK(cluster_placement(128, l, kH100Waves) == ClusterPlacement::spread);
  // Equal waves (nothing between them): never balanced.
  CHECK(cluster_placement(124, Layout::cluster, ClusterWaves{124, 124}) == ClusterPlacement::spread);
  CHECK(cluster_placement(125, Layout::cluster, ClusterWaves{124, 124}) == ClusterPlacement::spread);
}

TEST_CASE("regression: m = 132 on an H100, one wave placed balanced and two spread, is the cluster layout placed balanced") {
  // The dispatch left m = 132 on cta (5.04 us) until the balanced placement held it in one wave
  // (4.64 us; docs/benchmarks.md, "Clusters placed balanced").
  CHECK(draft_boundary_layout(132, kH100Sms, kH100Waves) == Layout::cluster);
  CHECK(cluster_placement(132, Layout::cluster, kH100Waves) == ClusterPlacement::balanced);
}

TEST_CASE("regression: m = 124, the full spread wave, placed spread left the next boundary no room") {
  // Spread there took 4.27 us on an H200 where balanced took 3.85 (BF16 stream 4.14 / 3.54; the
  // all-reduce boundary 6.81 / 6.05; docs/benchmarks.md, "The H200 run of main").
  CHECK(cluster_placement(124, Layout::cluster, kH100Waves) == ClusterPlacement::balanced);
  CHECK(cluster_placement(123, Layout::cluster, kH100Waves) == ClusterPlacement::spread);
}
