// boundary-verify kernel: this project's kernels as an external implementation, driven through the
// same path as any other (`--implementation 'boundary-verify kernel --inputs {inputs} --output
// {output}'`): a case file in, its outputs out, no comparison here (check and the gate compare).
#include <boundary/verify/cases.hpp>
#include <boundary/verify/cli_kernel.hpp>
#include <boundary/verify/gpu_runs.hpp>

#include <CLI/CLI.hpp>

#include <cstring>
#include <sstream>

namespace boundary::cli {

namespace st = safetensors;

CLI::App* setup_kernel(CLI::App& app, KernelOptions& o) {
  CLI::App* sub = app.add_subcommand("kernel", "Run this project's fused kernel (or the eager chain) on a case file of export");
  sub->add_option("--inputs", o.inputs, "A case file: inputs, and __metadata__ constants and store_stream")->required();
  sub->add_option("--output", o.output, "Where out (and new_stream, when the case stores it) go")->required();
  sub->add_option("--kernel", o.kernel, "fused (DraftBoundary, or the fused all-reduce boundary for partials) or eager")
      ->check(CLI::IsMember({"fused", "eager"}));
  sub->add_option("--gates", o.gates, "When gates load: auto (the dispatcher's: early), early, late")
      ->check(CLI::IsMember({"auto", "early", "late"}));
  sub->add_flag("--no-pdl", o.no_pdl, "Launch without programmatic dependent launch");
  return sub;
}

nlohmann::json run_kernel(const KernelOptions& o, int* exit_code) {
  st::File file = st::read_file(o.inputs);
  const std::string source = o.inputs.string();
  const Constants constants = cases::case_constants(file, source);
  const bool store = cases::case_store_stream(file, source);
  for (const std::string& name : kOutputNames) file.tensors.erase(name);
  const BoundTensors bound = bind_inputs(file, constants, source);
  if (!gpu::device_available()) {
    *exit_code = kNoDevice;
    return {{"command", "kernel"}, {"written", false}, {"reason", "no CUDA device: nothing run"}};
  }
  std::optional<bool> late;
  if (o.gates != "auto") late = o.gates == "late";
  // run_on_gpu runs both implementations (the eager chain is the cheap one); the asked one is kept.
  const gpu_runs::GpuRun run = gpu_runs::run_on_gpu(constants, bound, store, late, !o.no_pdl);
  const gpu_runs::KernelOutputs& k = o.kernel == "eager" ? run.eager : run.fused;
  st::File outputs;
  outputs.metadata["kernel"] = o.kernel == "eager" ? "eager chain" : run.fused_name;
  outputs.metadata["variant"] = gpu_runs::variant_metadata(run.variant);
  st::Tensor out = st::make_tensor(st::Dtype::BF16, {bound.m, kH});
  std::memcpy(out.bytes.data(), k.out.data(), out.bytes.size());
  outputs.tensors["out"] = std::move(out);
  if (store) {
    st::Tensor ns = st::make_tensor(st::Dtype::F32, {bound.m, kH});
    std::memcpy(ns.bytes.data(), k.new_stream.data(), ns.bytes.size());
    outputs.tensors["new_stream"] = std::move(ns);
  }
  st::write_file(o.output, outputs);
  *exit_code = kSuccess;
  return {{"command", "kernel"}, {"written", true}, {"output", o.output.string()}, {"rows", bound.m},
          {"kernel", outputs.metadata["kernel"]}, {"variant", outputs.metadata["variant"]}};
}

std::string format_kernel(const nlohmann::json& r) {
  std::ostringstream o;
  if (!r["written"].get<bool>()) return "kernel: " + r["reason"].get<std::string>() + "\n";
  o << "kernel: " << r["kernel"].get<std::string>() << " (" << r["variant"].get<std::string>() << ") on "
    << r["rows"] << " rows: wrote " << r["output"].get<std::string>() << "\n";
  return o.str();
}

}  // namespace boundary::cli
