// boundary-verify replay: each fixture's inputs through the emulator (and, with --gpu, the GPU
// hook's kernels), every output element compared bit for bit with the recorded one.
#include <boundary/verify/atomic_file.hpp>
#include <boundary/verify/fixture_metadata.hpp>
#include <boundary/verify/input_limits.hpp>
#include <boundary/verify/replay.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <sstream>

namespace boundary::cli {

namespace st = safetensors;

CLI::App* setup_replay(CLI::App& app, ReplayOptions& o) {
  CLI::App* sub = app.add_subcommand("replay", "Recompute recorded boundary outputs (fixtures) and compare them bit for bit");
  sub->add_option("files", o.files, "Fixture safetensors: inputs, operands, out, new_stream, __metadata__ constants")
      ->required();
  sub->add_flag("--gpu", o.gpu, "Also replay on the GPU (fused kernel, eager chain); exit 77 without a device");
  sub->add_option("--report", o.report, "Write the JSON report (verify/report-schema.json) to this file");
  sub->add_option("--max-mismatches", o.max_mismatches, "Mismatches listed in the report (all are counted)")
      ->check(io::unsigned_decimal());
  sub->add_option("--threads", o.threads, "Host threads (0: every core)")->check(io::unsigned_decimal());
  return sub;
}

namespace {

// Metadata keys copied into the report as the fixture's provenance (none is required).
const std::vector<std::string> kProvenanceKeys = {"gpu",  "compute_capability", "driver", "cuda",
                                                  "project_version", "seed", "date", "producer"};

ReplayedOutputs run_emulator(const Fixture& f, unsigned threads) {
  ReplayedOutputs r{"emulator", st::make_tensor(st::Dtype::BF16, {f.bound.m, kH}), std::nullopt};
  ref::Outputs out;
  out.out = r.out.data<std::uint16_t>();
  if (f.new_stream) {
    r.new_stream = st::make_tensor(st::Dtype::F32, {f.bound.m, kH});
    out.new_stream = r.new_stream->data<float>();
  }
  ref::Boundary(f.constants, f.bound.operands).run(f.bound.inputs, out, threads);
  return r;
}

// Compares one implementation's outputs with the fixture's; the fixture holds the expected bits.
void compare_outputs(const Fixture& f, const ReplayedOutputs& r, report::FileReport& file_report,
                     report::Report& rep) {
  const auto compare = [&](const std::string& tensor, const st::Tensor& expected, const st::Tensor& actual) {
    const report::CompareContext where{"", r.check + " vs fixture", f.metadata("variant"), f.name, tensor};
    file_report.counts.push_back(report::compare_tensors(expected, actual, r.check, where, rep.mismatches));
    rep.elements_compared += file_report.counts.back().compared;
  };
  // A hook that returns the wrong shape is a bug of this tool, not of the fixture: compare_tensors
  // throws logic_error (exit 70).
  compare("out", *f.out, r.out);
  if (f.new_stream) {
    if (!r.new_stream) throw std::logic_error(r.check + ": no new_stream returned for " + f.name);
    compare("new_stream", *f.new_stream, *r.new_stream);
  }
  file_report.checks.push_back(r.check);
}

report::FileReport describe(const Fixture& f) {
  report::FileReport fr;
  fr.path = f.name;
  if (f.file.metadata.count("kernel")) fr.kernel = f.metadata("kernel");
  if (f.file.metadata.count("variant")) fr.variant = f.metadata("variant");
  for (const std::string& key : kProvenanceKeys)
    if (f.file.metadata.count(key)) fr.provenance[key] = f.metadata(key);
  fr.rows = f.bound.m;
  fr.stream_dtype = f.bound.inputs.stream_dtype == StreamDtype::f32 ? "F32" : "BF16";
  return fr;
}

// Decides whether the GPU checks run: "run", or why not.
std::string gpu_status(const ReplayOptions& o, report::Environment& env) {
  if (!o.gpu) return "not requested";
  if (!o.gpu_hook.probe || !o.gpu_hook.run) return "not run: no CUDA device (this build has no GPU replay)";
  env.gpu = o.gpu_hook.probe();
  return env.gpu ? "run" : "not run: no CUDA device";
}

int exit_code_of(const report::Report& r) {
  if (r.mismatches.total() > 0) return kMismatch;  // differing bits outrank a skipped check
  if (r.gpu != "run" && r.gpu != "not requested") return kNoDevice;
  return kSuccess;
}

}  // namespace

ReplayResult replay(const ReplayOptions& o) {
  if (o.files.empty()) throw InputError("replay: give at least one fixture file");
  if (o.report) io::check_outputs({{"--report", *o.report}}, o.files);
  ReplayResult result{report::start_report("replay", o.max_mismatches)};
  report::Report& rep = result.report;
  rep.gpu = gpu_status(o, rep.environment);
  const unsigned threads = host_threads(o.threads);

  for (const std::filesystem::path& path : o.files) {
    const Fixture f(path);
    report::FileReport fr = describe(f);
    compare_outputs(f, run_emulator(f, threads), fr, rep);
    if (rep.gpu == "run")
      for (const ReplayedOutputs& r : o.gpu_hook.run(f.constants, f.bound, f.file.metadata, f.new_stream != nullptr))
        compare_outputs(f, r, fr, rep);
    rep.files.push_back(std::move(fr));
  }
  rep.exit_code = result.exit_code = exit_code_of(rep);
  return result;
}

nlohmann::json run_replay(const ReplayOptions& o, int* exit_code) {
  const ReplayResult result = replay(o);
  nlohmann::json json = report::to_json(result.report);
  if (o.report) io::write_file_atomically(*o.report, json.dump(2) + "\n");
  if (exit_code) *exit_code = result.exit_code;
  return json;
}

namespace {

constexpr std::size_t kFilesShown = 8;
constexpr std::size_t kMismatchesShown = 8;

void format_file(std::ostringstream& o, const nlohmann::json& f) {
  o << "  " << f["path"].get<std::string>() << ": " << f["rows"] << " rows, " << f["stream_dtype"].get<std::string>()
    << " stream";
  if (f["kernel"].is_string()) o << ", kernel " << f["kernel"].get<std::string>();
  if (f["variant"].is_string()) o << ", variant " << f["variant"].get<std::string>();
  o << "\n";
  for (const auto& c : f["counts"])
    o << "    " << c["check"].get<std::string>() << " " << c["tensor"].get<std::string>() << ": "
      << c["mismatches"] << " of " << c["compared"] << " differ\n";
}

void format_mismatch(std::ostringstream& o, const nlohmann::json& m) {
  o << "    " << m["file"].get<std::string>() << " " << m["tensor"].get<std::string>() << " [row "
    << m["row"] << ", column " << m["column"] << "] " << m["pair"].get<std::string>() << ": expected "
    << m["expected_bits"].get<std::string>() << " (" << m["expected_class"].get<std::string>() << "), actual "
    << m["actual_bits"].get<std::string>() << " (" << m["actual_class"].get<std::string>() << "), ";
  if (m["ulp_distance"].get<std::int64_t>() < 0)
    o << "NaN involved\n";
  else
    o << m["ulp_distance"] << " ulp " << m["dtype"].get<std::string>() << "\n";
}

}  // namespace

std::string format_replay(const nlohmann::json& r) {
  std::ostringstream o;
  const auto& files = r["files"];
  std::int64_t rows = 0;
  for (const auto& f : files) rows += f["rows"].get<std::int64_t>();
  const std::int64_t total = r["mismatches"]["total"].get<std::int64_t>();
  o << "replay: " << files.size() << (files.size() == 1 ? " file, " : " files, ") << rows << " rows, "
    << r["counts"]["elements_compared"] << " elements compared, " << total
    << (total == 0 ? " mismatches: every bit equal\n" : total == 1 ? " mismatch\n" : " mismatches\n");
  for (std::size_t i = 0; i < files.size() && i < kFilesShown; ++i) format_file(o, files[i]);
  if (files.size() > kFilesShown) o << "  ... and " << files.size() - kFilesShown << " more files\n";
  if (r["gpu"] != "not requested") o << "  GPU checks: " << r["gpu"].get<std::string>() << "\n";
  const auto& items = r["mismatches"]["items"];
  if (total > 0) {
    const std::size_t shown = std::min(items.size(), kMismatchesShown);
    o << "  first " << shown << " of " << total << " mismatches:\n";
    for (std::size_t i = 0; i < shown; ++i) format_mismatch(o, items[i]);
  }
  o << "  exit " << r["exit_code"] << "\n";
  return o.str();
}

}  // namespace boundary::cli
