#include <boundary/verify/boundary_tensors.hpp>
#include <boundary/verify/capture.hpp>
#include <boundary/verify/cli.hpp>
#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/edge_rows.hpp>
#include <boundary/verify/edge_suite.hpp>
#include <boundary/verify/generate.hpp>
#include <boundary/verify/gpu_runs.hpp>
#include <boundary/verify/input_limits.hpp>
#include <boundary/reference.hpp>
#include <boundary/verify/replay.hpp>
#include <boundary/verify/version.hpp>

#include <CLI/CLI.hpp>

#include <cstring>
#include <sstream>

namespace boundary::cli {

namespace st = safetensors;

CLI::App* setup_capture(CLI::App& app, CaptureOptions& o) {
  CLI::App* sub = app.add_subcommand("capture", "Run the kernels on the GPU, check them against the emulator, write a fixture");
  sub->add_option("--constants", o.constants, "Constants JSON")->required();
  sub->add_option("--operands", o.operands, "Safetensors with alpha, beta and the weights (a real model's)");
  auto* inputs = sub->add_option("--inputs", o.inputs, "Input safetensors (branch, stream, and operands unless --operands)");
  auto* generate = sub->add_option("--generate", o.generate_rows, "Generate this many realistic rows instead")
                       ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  auto* edge = sub->add_flag("--edge-rows", o.edge_rows, "Generate one row per edge pattern instead (NaN, Inf, -0.0, subnormals, overflow, FPRev)");
  sub->add_option("--ranks", o.ranks, "With --generate: this many rank partials instead of a branch (the all-reduce boundary)")
      ->check(CLI::Range(1, kMaxRanks))
      ->needs(generate);
  auto* suite = sub->add_flag("--edge-suite", o.edge_suite,
                              "Generate the edge suite's rows that catch the planted bugs (the emulator twins) instead");
  sub->add_option("--witness-rows", o.witness_rows, "With --edge-suite: rows kept per planted bug")
      ->check(CLI::Range(1, 100));
  inputs->excludes(generate);
  generate->excludes(inputs);
  edge->excludes(inputs)->excludes(generate);
  suite->excludes(inputs)->excludes(generate)->excludes(edge);
  sub->add_option("--seed", o.seed, "Seed for --generate and --edge-rows")->check(io::unsigned_decimal());
  sub->add_option("--stream-dtype", o.stream_dtype, "Stream dtype for --generate")->check(CLI::IsMember({"f32", "bf16"}));
  sub->add_option("--output", o.output, "The fixture to write")->required();
  sub->add_flag("--no-store-stream", o.no_store_stream, "The variant that does not store new_stream");
  sub->add_option("--gates", o.gates, "When gates load: auto (the dispatcher's: early), early, late")
      ->check(CLI::IsMember({"auto", "early", "late"}));
  sub->add_flag("--no-pdl", o.no_pdl, "Launch without programmatic dependent launch");
  sub->add_option("--threads", o.threads, "Host threads for the emulator (0: every core)")->check(io::unsigned_decimal());
  return sub;
}

namespace {

using gpu_runs::GpuRun;
using gpu_runs::KernelOutputs;

struct Disagreement {
  std::string pair, tensor;
  std::int64_t row, column;
  std::uint32_t expected, actual;
};

// The first differences between two tensors of m rows, up to `limit`; the count of all.
template <class T>
std::int64_t compare(const std::string& pair, const std::string& tensor, const T* expected, const T* actual,
                     std::int64_t elements, std::vector<Disagreement>& out, std::size_t limit) {
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < elements; ++i) {
    std::uint32_t e = 0, a = 0;
    std::memcpy(&e, expected + i, sizeof(T));
    std::memcpy(&a, actual + i, sizeof(T));
    if (e == a) continue;
    if (out.size() < limit) out.push_back({pair, tensor, i / kH, i % kH, e, a});
    ++n;
  }
  return n;
}

}  // namespace

nlohmann::json run_capture(const CaptureOptions& o, int* exit_code) {
  std::vector<std::filesystem::path> inputs{o.constants};
  for (const auto& given : {o.operands, o.inputs})
    if (given) inputs.push_back(*given);
  io::check_outputs({{"--output", o.output}}, inputs);
  const Constants constants = read_constants(o.constants);
  const unsigned threads = host_threads(o.threads);
  st::File file;
  std::string source = "generated";
  const StreamDtype generated_stream = o.stream_dtype == "bf16" ? StreamDtype::bf16 : StreamDtype::f32;
  if (o.generate_rows) {
    file = generate_inputs(constants, *o.generate_rows, o.seed, generated_stream);
    if (o.ranks > 0) {
      file.tensors.erase("branch");
      file.tensors["partials"] = generate_partials(*o.generate_rows, o.ranks, o.seed);
      source = "generated, " + std::to_string(o.ranks) + " rank partials";
    }
  } else if (o.edge_rows) {
    file = generate_edge_inputs(constants, o.seed, generated_stream);
    source = "edge rows";
  } else if (o.edge_suite) {
    const suite::Suite edge = suite::make_edge_suite(constants, 1, o.seed, generated_stream);
    const std::vector<std::int64_t> rows = suite::witness_rows(constants, edge.inputs, o.witness_rows, threads);
    file = suite::select_rows(edge.inputs, rows);
    std::string families;
    for (std::int64_t r : rows) families += (families.empty() ? "" : "; ") + edge.row_family.at(static_cast<std::size_t>(r));
    file.metadata["generator"] = "edge suite level 1, rows that catch the planted bugs: " + families;
    source = "edge suite witness rows";
  } else if (o.inputs) {
    file = st::read_file(*o.inputs);
    source = o.inputs->string();
    for (const std::string& name : kOutputNames) file.tensors.erase(name);
  } else {
    throw InputError("capture: give --inputs FILE, --generate ROWS, --edge-rows or --edge-suite");
  }
  if (o.operands) {
    const st::File ops = st::read_file(*o.operands);
    for (const char* name : {"alpha", "beta", "post_weight", "pre_weight"}) {
      file.tensors.erase(name);
      if (ops.tensors.count(name)) file.tensors[name] = ops.tensors.at(name);
    }
  }
  const BoundTensors bound = bind_inputs(file, constants, source);
  if (!gpu::device_available()) {
    *exit_code = kNoDevice;
    return {{"command", "capture"}, {"written", false}, {"reason", "no CUDA device: nothing captured"}};
  }

  const std::int64_t m = bound.m;
  const auto n = static_cast<std::size_t>(m) * kH;
  const bool store = !o.no_store_stream;
  std::optional<bool> late;
  if (o.gates != "auto") late = o.gates == "late";
  const GpuRun gpu_run = gpu_runs::run_on_gpu(constants, bound, store, late, !o.no_pdl);
  const KernelOutputs& hw = gpu_run.fused;
  const KernelOutputs& chain = gpu_run.eager;
  const gpu::Variant& variant = gpu_run.variant;

  std::vector<std::uint16_t> emu_out(n);
  std::vector<float> emu_ns(store ? n : 0);
  ref::Outputs eo;
  eo.out = emu_out.data();
  eo.new_stream = store ? emu_ns.data() : nullptr;
  ref::Boundary(constants, bound.operands).run(bound.inputs, eo, threads);

  std::vector<Disagreement> where;
  std::int64_t differing = 0;
  for (const auto& [pair, r] : {std::pair<const char*, const KernelOutputs*>{"emulator vs fused", &hw}, {"emulator vs eager", &chain}}) {
    differing += compare(pair, "out", emu_out.data(), r->out.data(), static_cast<std::int64_t>(n), where, 10);
    if (store) differing += compare(pair, "new_stream", emu_ns.data(), r->new_stream.data(), static_cast<std::int64_t>(n), where, 10);
  }

  const report::GpuInfo info = *gpu_runs::gpu_info();
  const std::string variant_name = gpu_runs::variant_metadata(variant);
  nlohmann::json result = {
      {"command", "capture"}, {"rows", m}, {"inputs", o.inputs ? source : source + " (seed " + std::to_string(o.seed) + ")"},
      {"variant", variant_name}, {"gpu", info.name}, {"output", o.output.string()}, {"differing_elements", differing}};
  if (differing) {
    nlohmann::json list = nlohmann::json::array();
    for (const Disagreement& d : where)
      list.push_back({{"pair", d.pair}, {"tensor", d.tensor}, {"row", d.row}, {"column", d.column},
                      {"expected_bits", d.expected}, {"actual_bits", d.actual}});
    result["first_differences"] = list;
    result["written"] = false;
    *exit_code = kMismatch;
    return result;
  }

  st::File fixture;
  fixture.metadata = file.metadata;
  fixture.metadata["constants"] = constants_to_json(constants).dump();
  fixture.metadata["kernel"] = gpu_run.fused_name + (bound.partial_rows.empty()
                                                         ? " (fused); checked equal to the eager chain and the emulator"
                                                         : " (fused); checked equal to the all-reduce kernel + eager chain "
                                                           "and the emulator");
  fixture.metadata["variant"] = variant_name;
  fixture.metadata["gpu"] = info.name;
  fixture.metadata["compute_capability"] = info.compute_capability;
  fixture.metadata["driver"] = info.driver;
  fixture.metadata["cuda_runtime"] = info.cuda;
  fixture.metadata["project_version"] = kVersion;
  fixture.metadata["seed"] = o.inputs ? "" : std::to_string(o.seed);
  fixture.metadata["date"] = report::utc_now_iso8601();
  fixture.metadata["producer"] = std::string("boundary-verify ") + kVersion + " capture";
  fixture.tensors = std::move(file.tensors);
  st::Tensor out_t = st::make_tensor(st::Dtype::BF16, {m, kH});
  std::memcpy(out_t.data<std::uint16_t>(), hw.out.data(), n * 2);
  fixture.tensors["out"] = std::move(out_t);
  if (store) {
    st::Tensor ns = st::make_tensor(st::Dtype::F32, {m, kH});
    std::memcpy(ns.data<float>(), hw.new_stream.data(), n * 4);
    fixture.tensors["new_stream"] = std::move(ns);
  }
  st::write_file(o.output, fixture);
  result["written"] = true;
  *exit_code = kSuccess;
  return result;
}

GpuReplayHook make_gpu_replay_hook() {
  GpuReplayHook hook;
  hook.probe = gpu_runs::gpu_info;
  hook.run = [](const Constants& constants, const BoundTensors& bound, const std::map<std::string, std::string>& metadata,
                bool store_stream) {
    // The fixture's own variant where it names one (capture writes "late_gates=0,pdl=1").
    std::optional<bool> late;
    bool pdl = true;
    if (const auto v = metadata.find("variant"); v != metadata.end()) {
      if (v->second.find("late_gates=1") != std::string::npos) late = true;
      if (v->second.find("late_gates=0") != std::string::npos) late = false;
      pdl = v->second.find("pdl=0") == std::string::npos;
    }
    GpuRun r = gpu_runs::run_on_gpu(constants, bound, store_stream, late, pdl);
    std::vector<ReplayedOutputs> outputs;
    for (auto& [check, k] : {std::pair<const char*, KernelOutputs*>{"gpu:fused", &r.fused}, {"gpu:eager", &r.eager}}) {
      ReplayedOutputs o{check, st::make_tensor(st::Dtype::BF16, {bound.m, kH}), std::nullopt};
      std::memcpy(o.out.data<std::uint16_t>(), k->out.data(), k->out.size() * 2);
      if (store_stream) {
        o.new_stream = st::make_tensor(st::Dtype::F32, {bound.m, kH});
        std::memcpy(o.new_stream->data<float>(), k->new_stream.data(), k->new_stream.size() * 4);
      }
      outputs.push_back(std::move(o));
    }
    return outputs;
  };
  return hook;
}

std::string format_capture(const nlohmann::json& r) {
  std::ostringstream o;
  if (!r.contains("rows")) return "capture: " + r.value("reason", std::string("nothing captured")) + "\n";
  o << "capture: " << r["rows"] << " rows of " << r["inputs"].get<std::string>() << " on " << r["gpu"].get<std::string>()
    << ", variant " << r["variant"].get<std::string>() << "\n";
  if (r["written"].get<bool>()) {
    o << "  fused == eager chain == emulator on every element; wrote " << r["output"].get<std::string>() << "\n";
  } else {
    o << "  REFUSED: " << r["differing_elements"] << " elements differ; nothing written. First differences:\n";
    for (const auto& d : r["first_differences"])
      o << "    " << d["pair"].get<std::string>() << ": " << d["tensor"].get<std::string>() << " row " << d["row"]
        << " column " << d["column"] << ": expected 0x" << std::hex << d["expected_bits"].get<std::uint32_t>()
        << ", got 0x" << d["actual_bits"].get<std::uint32_t>() << std::dec << "\n";
  }
  return o.str();
}

}  // namespace boundary::cli
