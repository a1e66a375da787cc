// boundary_gpu_bench: how close the fused DraftBoundary kernel comes to its two floors, one empty
// launch per boundary (decode: m up to the SM count, the data L2-resident) and the SM copy
// bandwidth (prefill: large m, the data streamed from HBM), with the eager chain it replaces and
// each of its layouts beside it; torch.compile of the same boundary is timed by torch_peer.py
// and joined to these numbers by combine_bench.py. Everything is timed as CUDA graph replays, the
// way a serving engine runs a decode step, so the gaps between launches are the GPU's own and not
// the host's.
//
//   boundary_gpu_bench [--rows 1,8,32,132,1024,8192] [--ranks 8] [--gates auto|early|late]
//                      [--handout F32,BF16,QUAD] [--constants FILE] [--json FILE]
//
// --handout sets the fused objects' hand-out thresholds (gpu::HandoutThresholds: rows a resident
// CTA of the cta layout, F32 and BF16 stream, and a resident cluster of the all-reduce boundary's
// quad; 0: never) instead of the device's measured ones, so that two thresholds are timed with one
// build: two runs, then compare_bench.py --a A.json --b B.json.
//
// With --ranks R (0: skipped) the same run times the fused all-reduce boundary (the dispatched
// layout, and each layout forced) on R rank partials against the all-reduce kernel followed by the DraftBoundary,
// after checking that both give the same bits.
//
// Per m it first checks that the fused kernel's out and new_stream equal the eager chain's bit
// for bit (both stream dtypes, and each layout) and each copy baseline's destination its source
// (the 2 GiB copies once, before any timing), then prints the details of its timings; the
// summary table, the copy bandwidths and PASS/MISS per target come last on stdout, and --json
// writes the same.
//
// Exit codes: 0 measured (a missed target is a result, not a failure), 1 the fused kernel's bits
// differ from the eager chain's (or a copy baseline's destination from its source), 2 bad
// arguments or constants, 3 a CUDA call failed, 77 no device.
//
// The parts: bench_kernels.cu (its own kernels: floors and the SM copies; the only nvcc file),
// bench_timing (graph replays), bench_inputs (buffer sets), bench_bits (the bit checks before any
// timing), bench_measure (what is timed per m), bench_report (table and JSON).

#include "bench_bits.hpp"
#include "bench_kernels.hpp"
#include "bench_measure.hpp"
#include "bench_report.hpp"

#include <boundary/verify/cli.hpp>
#include <boundary/verify/constants_json.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

using namespace boundary::bench;
namespace bg = boundary::gpu;

void setup_options(CLI::App& app, Options& o) {
  app.add_option("--rows", o.rows, "Row counts m to measure, comma separated")->delimiter(',')->capture_default_str();
  app.add_option("--constants", o.constants, "Boundary constants JSON")->capture_default_str();
  app.add_option("--json", o.json, "Also write the results as JSON to this file");
  app.add_option("--launches", o.launches, "Boundaries per captured graph")->check(CLI::Range(1, 10000))->capture_default_str();
  app.add_option("--replays", o.replays, "Timed graph replays")->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--warmup", o.warmup, "Untimed graph replays before timing")->check(CLI::Range(0, 100000))->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of the realistic inputs")->capture_default_str();
  app.add_option("--copy-gib", o.copy_gib, "Size of the device-to-device copy reference, GiB")
      ->check(CLI::Range(0.001, 64.0))->capture_default_str();
  app.add_option("--ranks", o.ranks, "Rank partials of the all-reduce boundary (0: not measured)")
      ->check(CLI::Range(0, boundary::kMaxRanks))->capture_default_str();
  app.add_option("--gates", o.gates,
                 "The fused kernels' gates: auto (the dispatcher's), early or late at every m")
      ->check(CLI::IsMember({"auto", "early", "late"}))->capture_default_str();
  app.add_option("--handout", o.handout,
                 "Hand-out thresholds F32,BF16,QUAD: rows a resident CTA (cta layout, F32 and BF16 stream) and a "
                 "resident cluster (the all-reduce quad) above which rows are handed out; 0: never (default: the device's)")
      ->delimiter(',')->expected(3);
}

void validate(const Options& o) {
  if (o.rows.empty()) throw boundary::InputError("--rows: give at least one row count");
  for (std::int64_t m : o.rows)
    if (m < 1 || m > 1'000'000)
      throw boundary::InputError("--rows: " + std::to_string(m) + " is not a row count in [1, 1000000]");
  for (std::int64_t t : o.handout)
    if (t < 0 || t > 1'000'000)
      throw boundary::InputError("--handout: " + std::to_string(t) + " is not a row count in [0, 1000000]");
}

int run(const Options& o) {
  validate(o);
  const boundary::Constants constants = boundary::read_constants(o.constants);
  if (!bg::device_available()) {
    std::fprintf(stderr, "boundary_gpu_bench: no CUDA device\n");
    return boundary::cli::kNoDevice;
  }
  const DeviceInfo dev = device_info();
  std::printf("%s: %d SMs, L2 %.1f MB; constants %s; gates %s\n", dev.name.c_str(), dev.sm_count,
              static_cast<double>(dev.l2_bytes) / 1e6, o.constants.string().c_str(), o.gates.c_str());
  const Stream stream = make_stream();
  prepare_bench_kernels();
  bg::DeviceBuffer chunk_counter(kChunkCounterBytes);
  chunk_counter.fill(0);  // synchronous; from here on every dynamic copy leaves it zero
  auto* counter = static_cast<unsigned*>(chunk_counter.get());

  // The ceiling first: it also brings the clocks up before the kernels are timed.
  const CopyResult copy = measure_copy(stream.get(), o, dev, counter);
  std::printf("SM copy: grid-stride %.1f GB/s, chunks handed out at run time %.1f GB/s; cudaMemcpyAsync: %.1f GB/s"
              " (medians, %.2f GiB, read + written)\n",
              copy.sm.gbps_median, copy.sm_dynamic.gbps_median, copy.memcpy.gbps_median,
              static_cast<double>(copy.bytes) / (1ull << 30));
  std::fflush(stdout);

  const std::int64_t max_rows = *std::max_element(o.rows.begin(), o.rows.end());
  const HostInputs inputs = generate(constants, max_rows, o.seed);
  const DeviceOperands operands = upload_operands(constants, inputs.f32);
  bg::DraftBoundary fused(constants, operands.views);
  bg::EagerChain eager(constants, operands.views);
  bg::AllReduceBoundary all_reduce(constants, operands.views);
  if (!o.handout.empty()) {
    const bg::HandoutThresholds t{o.handout[0], o.handout[1], o.handout[2]};
    fused.set_handout_thresholds(t);
    all_reduce.set_handout_thresholds(t);
  }
  const ClusterWaveCounts waves{fused.cluster_waves(), all_reduce.cluster_waves()};
  std::printf("cluster layout's waves (clusters resident at once, spread / balanced): DraftBoundary %lld / %lld, "
              "all-reduce boundary %lld / %lld\n",
              static_cast<long long>(waves.draft.spread), static_cast<long long>(waves.draft.balanced),
              static_cast<long long>(waves.all_reduce.spread), static_cast<long long>(waves.all_reduce.balanced));
  const bg::HandoutThresholds& handout = fused.handout_thresholds();
  std::printf("rows handed out above (rows a resident CTA or cluster; 0: never): cta F32 %lld, cta BF16 %lld, "
              "all-reduce quad %lld (%s)\n",
              static_cast<long long>(handout.cta_f32), static_cast<long long>(handout.cta_bf16),
              static_cast<long long>(handout.quad), o.handout.empty() ? "the device's" : "--handout");
  const Bench bench{o, dev, inputs, fused, eager, all_reduce, stream.get(), operands.bytes, counter};

  std::vector<RowResult> rows;
  for (std::int64_t m : o.rows) {
    rows.push_back(measure_rows(bench, m));
    print_row_details(rows.back(), dev);
  }
  const std::vector<Target> targets = evaluate(rows, copy);
  print_table(rows, copy, targets);
  if (o.json) write_json(*o.json, to_json(o, dev, waves, handout, copy, rows, targets));
  return boundary::cli::kSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace boundary::cli;
  CLI::App app{"boundary_gpu_bench: CUDA-graph timings of the fused DraftBoundary kernel against an empty kernel, "
               "the eager chain and the SM copy bandwidth"};
  Options options;
  options.constants = std::filesystem::path(BOUNDARY_SOURCE_DIR) / "fixtures/constants/muse-spark-post-ffn.json";
  setup_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kSuccess : kUsageOrInput;
  }
  try {
    return run(options);
  } catch (const Mismatch& e) {
    std::fprintf(stderr, "boundary_gpu_bench: refusing to time a wrong kernel: %s\n", e.what());
    return kMismatch;
  } catch (const boundary::InputError& e) {
    std::fprintf(stderr, "boundary_gpu_bench: error: %s\n", e.what());
    return kUsageOrInput;
  } catch (const bg::CudaError& e) {
    std::fprintf(stderr, "boundary_gpu_bench: CUDA error: %s\n", e.what());
    return kCudaFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "boundary_gpu_bench: internal error: %s\n", e.what());
    return kInternal;
  }
}
