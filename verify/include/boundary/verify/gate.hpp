// The gate, `boundary-verify --constants cfg.json`: the edge, fuzz, operand-special and edge-constants
// suites through the emulator (every host core) and, on a GPU, through the eager chain, every fused
// variant and a CUDA graph replay, each output bit compared with the emulator's; the vacuity check
// of the edge suites; the first divergent stage of each listed mismatch; the first mismatch shrunk to
// a fixture. Without a GPU: the CPU parts, then the committed fixtures' replay, exit 77.
// And `boundary-verify self-test`: the same suites against every planted bug (boundary/mutant.hpp).
#pragma once

#include <boundary/verify/boundary_tensors.hpp>
#include <boundary/verify/cli.hpp>
#include <boundary/mutant.hpp>
#include <boundary/verify/report.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace boundary::cli {

// One GPU implementation the gate runs. Names: "eager", "graph", and the fused kernel's
// "<f32|bf16>-<store|nostore>-<early|late>-<pdl|nopdl>" in its cta layout (e.g.
// "f32-store-early-pdl") and the same with "-cluster", "-pair" or "-quad" in those layouts
// (boundary::gpu::Layout), and "-cluster-balanced": the cluster layout placed balanced
// (boundary::gpu::ClusterPlacement; "-cluster" is placed spread).
// all_reduce: the fused all-reduce boundary with the suite's branch as its one rank partial
// (contract section 7: one rank passes P_0 unchanged, so it owes the same bits as the others), or
// on the bound rows' rank partials when they have them (the self-test's); its layout and late
// gates are its own choice (variant_for) unless the variant names a layout other than cta or late
// gates.
// multi_process: R = 2 processes of `boundary-verify rank`, sharing their partials through CUDA IPC
// (boundary/gpu/rank_ipc.hpp), the suite's branch split over them (cli_rank.hpp); every rank's fused
// and eager outputs must agree. Chosen by name only: "all" leaves it out (it starts processes per suite).
// external: the command of --implementation (external.hpp), the gate's only implementation then.
struct GateVariant {
  enum class Kind { eager, fused, graph, all_reduce, multi_process, external };
  // boundary::gpu::Layout, without the GPU headers; cluster_balanced: the cluster layout placed balanced
  enum class Layout { cta, cluster, pair, quad, cluster_balanced };
  std::string name;
  Kind kind = Kind::fused;
  std::optional<StreamDtype> stream;  // fused: the stream dtype it is compiled for; else any
  bool store = true;
  bool late_gates = false;
  bool pdl = true;
  Layout layout = Layout::cta;  // fused
  bool runs_on(StreamDtype suite_stream) const { return !stream || *stream == suite_stream; }
};

// A layout's name: "cta", "cluster", "pair", "quad", "cluster-balanced".
const char* layout_word(GateVariant::Layout);
inline constexpr GateVariant::Layout kGateLayouts[] = {GateVariant::Layout::cta, GateVariant::Layout::cluster,
                                                        GateVariant::Layout::pair, GateVariant::Layout::quad,
                                                        GateVariant::Layout::cluster_balanced};

// Every implementation, in report order: eager, the 80 fused variants (16 per layout), graph, all-reduce.
std::vector<GateVariant> all_gate_variants();
// The implementations only a name selects ("multi-process").
std::vector<GateVariant> named_only_gate_variants();
// "a,b,c" (or "all"); InputError naming the unknown one and listing the known.
std::vector<GateVariant> parse_gate_variants(const std::string& list);

// What one implementation computed for m rows, by name: "out" BF16 [m, 8192] always,
// "new_stream" F32 [m, 8192] when the stream is stored; a diagnostic run adds the intermediates
// "post_row_sum", "r1", "pre_row_sum", "r2" F32 [m], "y_b", "z" BF16 [m, 8192], "res" F32 [m, 8192].
using StageValues = std::map<std::string, safetensors::Tensor>;

// The contract's stages in order; the first whose bits differ on a row is its first divergent stage.
inline const std::vector<std::string> kStages = {"post_row_sum", "r1", "y_b", "res", "z", "pre_row_sum", "r2", "out"};

// The GPU half, filled in by the CUDA build (make_gate_gpu_hook); empty functions mean "this
// binary has no GPU support". CUDA failures throw gpu::CudaError (exit 3).
struct GateGpuHook {
  std::function<std::optional<report::GpuInfo>()> probe;
  // out, and new_stream when v.store, of implementation v on the bound rows.
  std::function<StageValues(const Constants&, const BoundTensors&, const GateVariant& v)> run;
  // The debug build of v's kernel that writes its intermediates (res in new_stream); nullopt when
  // v has none (the eager chain, the multi-process run).
  std::function<std::optional<StageValues>(const Constants&, const BoundTensors&, const GateVariant& v)>
      run_with_intermediates;
  // The fused kernel (v's kind: the DraftBoundary or the all-reduce boundary) built with planted
  // bug m (pdl_wait_missing: the DraftBoundary behind a delayed producer).
  std::function<StageValues(Mutant m, const Constants&, const BoundTensors&, const GateVariant& v)> run_mutant;
  bool available() const { return probe && run && run_with_intermediates && run_mutant; }
};

struct GateOptions {
  std::filesystem::path constants;
  std::uint64_t seed = 1;
  int level = 1;
  std::int64_t rows = 4096;  // fuzzed rows per stream dtype: every variant of that dtype runs them
  std::optional<std::filesystem::path> operands;
  std::string variants = "all";
  std::optional<std::filesystem::path> report, junit, shrink_output;
  std::filesystem::path fixtures;  // committed fixtures, replayed when the GPU checks cannot run
  std::size_t max_mismatches = 100;
  int shrink_calls = 1000;         // the most reruns of the failing implementation while shrinking; 0: none
  bool quiet = false;
  bool progress = false;           // force progress lines even when stderr is no terminal
  unsigned threads = 0;            // 0: every host core
  // An implementation the toolkit did not build: a shell command with {inputs} and {output}, run
  // once per case instead of the GPU implementations (external.hpp); the gate never exits 77 then.
  std::optional<std::string> implementation;
  GateGpuHook gpu_hook;
};

// Declares the gate's options on the root app (the gate is the command without a subcommand).
void setup_gate(CLI::App& app, GateOptions& options);

struct GateResult {
  report::Report report;
  std::vector<std::string> notes;  // plain statements for the summary (e.g. why the GPU half did not run)
  std::optional<safetensors::File> shrunk_fixture;  // to write at report.gate->shrink->fixture
};

// Throws InputError (bad constants, operands, options) before writing anything.
GateResult gate(const GateOptions& options);
// gate(), then the report, JUnit and shrink files when asked for; returns the report's JSON.
nlohmann::json run_gate(const GateOptions& options, int* exit_code);
std::string format_gate(const nlohmann::json& report);

struct SelfTestOptions {
  std::filesystem::path constants;
  std::uint64_t seed = 1;
  int level = 1;
  std::int64_t rows = 1024;
  std::filesystem::path fixtures;
  unsigned threads = 0;
  GateGpuHook gpu_hook;
};

CLI::App* setup_self_test(CLI::App& app, SelfTestOptions& options);
// Per mutant the rows that caught it (GPU: the kernel mutants on the gate's suites; CPU: the
// emulator twins on the committed fixtures and the edge suites). Exit 1 if any survives, 77
// when the GPU half could not run, else 0.
nlohmann::json run_self_test(const SelfTestOptions& options, int* exit_code);
std::string format_self_test(const nlohmann::json& result);

// The committed fixture set of this source tree (fixtures/boundary).
std::filesystem::path default_fixtures_dir();

// make_gate_gpu_hook() lives in the CUDA build (cli_gate_gpu.cpp).
GateGpuHook make_gate_gpu_hook();

}  // namespace boundary::cli
