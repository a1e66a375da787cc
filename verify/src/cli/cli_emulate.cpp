// boundary-verify emulate: the contract's emulator on a file of inputs (or generated ones),
// written as safetensors with the outputs and, on request, every intermediate.
#include <boundary/verify/boundary_tensors.hpp>
#include <boundary/verify/cases.hpp>
#include <boundary/verify/cli.hpp>
#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/generate.hpp>
#include <boundary/verify/input_limits.hpp>
#include <boundary/reference.hpp>
#include <boundary/verify/version.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <thread>

namespace boundary::cli {

namespace st = safetensors;

unsigned host_threads(unsigned asked) { return asked ? asked : std::max(1u, std::thread::hardware_concurrency()); }

CLI::App* setup_emulate(CLI::App& app, EmulateOptions& o) {
  CLI::App* sub = app.add_subcommand("emulate", "Run the contract's CPU emulator on boundary rows");
  sub->add_option("--constants", o.constants,
                  "Constants JSON (e.g. fixtures/constants/muse-spark-post-ffn.json); without it, --inputs must be a "
                  "case file of export, whose __metadata__ gives the constants and store_stream");
  auto* inputs = sub->add_option("--inputs", o.inputs,
                                 "Input safetensors: branch (or partials), stream, alpha, beta, weights");
  auto* generate = sub->add_option("--generate", o.generate_rows, "Generate this many realistic rows instead")
                       ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  inputs->excludes(generate);
  generate->excludes(inputs);
  // Both shape generated rows only: with --inputs they would be ignored silently.
  sub->add_option("--seed", o.seed, "Seed for --generate")->check(io::unsigned_decimal())->excludes(inputs);
  sub->add_option("--stream-dtype", o.stream_dtype, "Stream dtype for --generate")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->excludes(inputs);
  sub->add_option("--output", o.output, "Output safetensors (inputs with --generate, outputs)")->required();
  sub->add_flag("--no-store-stream", o.no_store_stream, "Do not write new_stream");
  sub->add_flag("--intermediates", o.intermediates,
                "Also write the contract's intermediates (post_row_sum r1 y_b z pre_row_sum r2, branch, res)");
  sub->add_option("--threads", o.threads, "Host threads (0: every core)")->check(io::unsigned_decimal());
  return sub;
}

namespace {

// Counts of the value classes of a BF16 tensor, for the summary.
nlohmann::json bf16_classes(const std::uint16_t* v, std::size_t n) {
  std::size_t nan = 0, inf = 0, zero = 0, subnormal = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned e = (v[i] >> 7) & 0xFF, f = v[i] & 0x7F;
    nan += e == 0xFF && f;
    inf += e == 0xFF && !f;
    zero += e == 0 && !f;
    subnormal += e == 0 && f;
  }
  return {{"nan", nan}, {"inf", inf}, {"zero", zero}, {"subnormal", subnormal}};
}

std::pair<float, float> finite_range(const std::vector<float>& v) {
  float lo = INFINITY, hi = -INFINITY;
  for (float x : v)
    if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
  return {lo, hi};
}

// Bytes one generated row needs at once: its inputs and outputs (12 bytes a column; the
// intermediates 8 more), twice over, as the file is serialized from them before it is written.
std::uint64_t generated_row_bytes(bool intermediates) { return 2ull * kH * (12 + (intermediates ? 8 : 0)); }

}  // namespace

nlohmann::json run_emulate(const EmulateOptions& o) {
  const bool from_case = o.constants.empty();
  if (from_case && !o.inputs) throw InputError("emulate: give --constants (it is optional only with a case file as --inputs)");
  std::vector<std::filesystem::path> inputs;
  if (!from_case) inputs.push_back(o.constants);
  if (o.inputs) inputs.push_back(*o.inputs);
  io::check_outputs({{"--output", o.output}}, inputs);
  st::File file;
  std::string source;
  if (from_case) {
    file = st::read_file(*o.inputs);
    source = o.inputs->string();
  }
  const Constants constants = from_case ? cases::case_constants(file, source) : read_constants(o.constants);
  const bool store_stream = from_case ? cases::case_store_stream(file, source) && !o.no_store_stream : !o.no_store_stream;
  if (from_case) {
    for (const std::string& name : kOutputNames) file.tensors.erase(name);
  } else if (o.generate_rows) {
    const std::uint64_t need = static_cast<std::uint64_t>(*o.generate_rows) * generated_row_bytes(o.intermediates);
    const std::uint64_t memory = io::physical_memory_bytes();
    if (need > memory)
      throw InputError("--generate " + std::to_string(*o.generate_rows) + ": needs about " +
                       std::to_string(need >> 20) + " MiB, more than this machine's " + std::to_string(memory >> 20) +
                       " MiB of memory (at most " + std::to_string(memory / generated_row_bytes(o.intermediates)) +
                       " rows here)");
    file = generate_inputs(constants, *o.generate_rows, o.seed,
                           o.stream_dtype == "bf16" ? StreamDtype::bf16 : StreamDtype::f32);
    source = "generated";
  } else if (o.inputs) {
    file = st::read_file(*o.inputs);
    source = o.inputs->string();
    for (const std::string& name : kOutputNames) file.tensors.erase(name);  // outputs are recomputed
  } else {
    throw InputError("emulate: give --inputs FILE or --generate ROWS");
  }
  const BoundTensors bound = bind_inputs(file, constants, source);
  const std::int64_t m = bound.m;

  st::File result;
  result.metadata = file.metadata;
  result.metadata["constants"] = constants_to_json(constants).dump();
  result.metadata["producer"] = std::string("boundary-verify ") + kVersion + " emulate";
  if (o.generate_rows) result.tensors = std::move(file.tensors);  // the generated inputs go with the outputs

  auto add = [&](const std::string& name, st::Dtype dtype, std::vector<std::int64_t> shape) {
    return &(result.tensors[name] = st::make_tensor(dtype, std::move(shape)));
  };
  ref::Outputs out;
  out.out = add("out", st::Dtype::BF16, {m, kH})->data<std::uint16_t>();
  if (store_stream) out.new_stream = add("new_stream", st::Dtype::F32, {m, kH})->data<float>();
  if (o.intermediates) {
    if (!bound.partial_rows.empty()) out.branch = add("branch", st::Dtype::BF16, {m, kH})->data<std::uint16_t>();
    out.post_row_sum = add("post_row_sum", st::Dtype::F32, {m})->data<float>();
    out.r1 = add("r1", st::Dtype::F32, {m})->data<float>();
    out.y_b = add("y_b", st::Dtype::BF16, {m, kH})->data<std::uint16_t>();
    out.z = add("z", st::Dtype::BF16, {m, kH})->data<std::uint16_t>();
    out.pre_row_sum = add("pre_row_sum", st::Dtype::F32, {m})->data<float>();
    out.r2 = add("r2", st::Dtype::F32, {m})->data<float>();
    if (!store_stream) out.new_stream = add("res", st::Dtype::F32, {m, kH})->data<float>();
  }
  // The summary needs r1 and r2 even when they are not written.
  std::vector<float> r1(static_cast<std::size_t>(m)), r2(r1.size());
  if (!out.r1) out.r1 = r1.data();
  if (!out.r2) out.r2 = r2.data();

  const unsigned threads = host_threads(o.threads);
  const auto t0 = std::chrono::steady_clock::now();
  ref::Boundary(constants, bound.operands).run(bound.inputs, out, threads);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r1.assign(out.r1, out.r1 + m);
  r2.assign(out.r2, out.r2 + m);
  const auto [r1_lo, r1_hi] = finite_range(r1);
  const auto [r2_lo, r2_hi] = finite_range(r2);

  st::write_file(o.output, result);
  return {
      {"command", "emulate"},
      {"constants", from_case ? source + " (__metadata__)" : o.constants.string()},
      {"inputs", o.generate_rows ? "generated (seed " + std::to_string(o.seed) + ")" : source},
      {"rows", m},
      {"ranks", bound.partial_rows.size()},
      {"stream_dtype", bound.inputs.stream_dtype == StreamDtype::f32 ? "F32" : "BF16"},
      {"output", o.output.string()},
      {"tensors_written", [&] {
         nlohmann::json names = nlohmann::json::array();
         for (const auto& [name, t] : result.tensors) names.push_back(name);
         return names;
       }()},
      {"out_classes", bf16_classes(out.out, static_cast<std::size_t>(m) * kH)},
      {"r1_finite_range", {r1_lo, r1_hi}},
      {"r2_finite_range", {r2_lo, r2_hi}},
      {"threads", threads},
      {"seconds", seconds},
      {"rows_per_second", static_cast<double>(m) / seconds},
  };
}

std::string format_emulate(const nlohmann::json& s) {
  std::ostringstream o;
  o << "emulate: " << s["rows"].get<std::int64_t>() << " rows of " << s["inputs"].get<std::string>()
    << (s["ranks"].get<int>() ? " (all-reduce of " + std::to_string(s["ranks"].get<int>()) + " partials)" : "")
    << ", " << s["stream_dtype"].get<std::string>() << " stream, constants " << s["constants"].get<std::string>() << "\n";
  const auto& c = s["out_classes"];
  o << "  out: " << c["nan"] << " NaN, " << c["inf"] << " Inf, " << c["zero"] << " zero, " << c["subnormal"]
    << " subnormal\n";
  o << "  r1 in [" << s["r1_finite_range"][0] << ", " << s["r1_finite_range"][1] << "], r2 in ["
    << s["r2_finite_range"][0] << ", " << s["r2_finite_range"][1] << "] (finite values)\n";
  o << "  " << s["seconds"].get<double>() * 1e3 << " ms on " << s["threads"] << " threads ("
    << static_cast<long long>(s["rows_per_second"].get<double>()) << " rows/s)\n";
  o << "  wrote " << s["output"].get<std::string>() << ": " << s["tensors_written"].dump() << "\n";
  return o.str();
}

}  // namespace boundary::cli
