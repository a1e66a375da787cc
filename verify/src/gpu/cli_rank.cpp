// boundary-verify rank: one rank process of the multi-process all-reduce boundary. Every case is
// read, bound and readied first; then the rank group's rendezvous; then per case one protocol
// step (wait_writable, this rank's partial copied in, arrive, fused + eager, depart), its
// outputs checked for a peer failure and written.
#include <boundary/verify/cases.hpp>
#include <boundary/verify/cli_rank.hpp>
#include <boundary/gpu/cuda_check.hpp>
#include <boundary/gpu/rank_ipc.hpp>
#include <boundary/verify/gpu_runs.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>

namespace boundary::cli {

namespace st = safetensors;

namespace {

// A case file without any outputs it may carry (as `kernel` reads one).
st::File read_case(const std::filesystem::path& path) {
  st::File f = st::read_file(path);
  for (const std::string& name : kOutputNames) f.tensors.erase(name);
  return f;
}

// One case file, bound, with this rank's partial on the host.
struct RankCase {
  RankCase(const std::filesystem::path& p, int rank, int ranks)
      : path(p),
        file(read_case(p)),
        constants(cases::case_constants(file, p.string())),
        store(cases::case_store_stream(file, p.string())),
        bound(bind_inputs(file, constants, p.string())) {
    const std::size_t n = static_cast<std::size_t>(bound.m) * kH;
    if (!bound.partial_rows.empty()) {
      if (static_cast<int>(bound.partial_rows.size()) != ranks)
        throw InputError(p.string() + ": tensor 'partials' holds " + std::to_string(bound.partial_rows.size()) +
                         " rank partials; the group has " + std::to_string(ranks) + " ranks");
      const std::uint16_t* own = bound.partial_rows[static_cast<std::size_t>(rank)];
      partial.assign(own, own + n);
      return;
    }
    partial.assign(n, kNegativeZeroBf16);
    for (std::int64_t row = rank; row < bound.m; row += ranks)
      std::copy_n(bound.inputs.branch + static_cast<std::size_t>(row) * kH, kH,
                  partial.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(row) * kH));
  }
  std::filesystem::path path;
  st::File file;  // bound points into it
  Constants constants;
  bool store = true;
  BoundTensors bound;
  std::vector<std::uint16_t> partial;  // this rank's BF16 [m, 8192]
};

st::Tensor download(const gpu::DeviceBuffer& b, st::Dtype dtype, std::int64_t m) {
  st::Tensor t = st::make_tensor(dtype, {m, kH});
  b.download(t.bytes.data(), t.bytes.size());
  return t;
}

}  // namespace

std::filesystem::path rank_output_path(const std::filesystem::path& dir, const std::filesystem::path& inputs, int rank,
                                       const std::string& impl) {
  return dir / (inputs.stem().string() + ".rank" + std::to_string(rank) + "." + impl + ".safetensors");
}

CLI::App* setup_rank(CLI::App& app, RankOptions& o) {
  CLI::App* sub = app.add_subcommand(
      "rank", "One rank process of the multi-process all-reduce boundary (R copies run at once, one per rank)");
  sub->add_option("--channel", o.channel, "The group's directory, where each rank publishes its CUDA IPC handle")->required();
  sub->add_option("--rank", o.rank, "This process's rank, 0 .. ranks - 1")->required();
  sub->add_option("--ranks", o.ranks, "The group's size R, 1 .. 8")->required();
  sub->add_option("--inputs", o.inputs, "Case files (partials [R, m, 8192], or a branch split over the ranks), in order")
      ->required();
  sub->add_option("--outputs", o.outputs, "Directory for <case>.rank<r>.<fused|eager>.safetensors")->required();
  sub->add_option("--timeout-ms", o.timeout_ms, "Each device wait and host rendezvous, in ms")->capture_default_str();
  sub->add_flag("--no-pdl", o.no_pdl, "Launch without programmatic dependent launch");
  sub->add_option("--device", o.device, "CUDA device of this rank (default: rank % visible devices)");
  return sub;
}

nlohmann::json run_rank(const RankOptions& o, int* exit_code) {
  if (o.ranks < 1 || o.ranks > kMaxRanks) throw InputError("--ranks: 1 to 8, not " + std::to_string(o.ranks));
  if (o.rank < 0 || o.rank >= o.ranks)
    throw InputError("--rank: 0 to " + std::to_string(o.ranks - 1) + ", not " + std::to_string(o.rank));
  if (o.timeout_ms < 1) throw InputError("--timeout-ms: at least 1");
  std::vector<std::unique_ptr<RankCase>> cs;
  std::int64_t max_rows = 1;
  for (const auto& path : o.inputs) {
    cs.push_back(std::make_unique<RankCase>(path, o.rank, o.ranks));
    max_rows = std::max(max_rows, cs.back()->bound.m);
  }
  if (!gpu::device_available()) {
    *exit_code = kNoDevice;
    return {{"command", "rank"}, {"written", false}, {"reason", "no CUDA device: nothing run"}};
  }
  int devices = 0;
  gpu::cuda_check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  const int device = o.device >= 0 ? o.device : o.rank % devices;
  if (device >= devices)
    throw InputError("--device: " + std::to_string(device) + ", but " + std::to_string(devices) + " devices are visible");
  gpu::cuda_check(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t s = nullptr;
  gpu::cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  const std::unique_ptr<CUstream_st, void (*)(cudaStream_t)> stream_owner(s, [](cudaStream_t x) { cudaStreamDestroy(x); });
  const bool pdl = !o.no_pdl;
  // Everything readied before the rendezvous, so that the device deadlines start with all ranks busy stepping.
  struct Ready {
    gpu_runs::DeviceOperands ops;
    gpu::DeviceBuffer stream;
    std::unique_ptr<gpu::RankBoundary> boundary;
    gpu::Variant variant;
  };
  std::vector<std::unique_ptr<Ready>> ready;
  for (const auto& c : cs) {
    const std::int64_t m = c->bound.m;
    const bool f32 = c->bound.inputs.stream_dtype == StreamDtype::f32;
    auto r = std::make_unique<Ready>(Ready{gpu_runs::DeviceOperands(c->constants, c->bound.operands),
                                           gpu::DeviceBuffer(c->bound.inputs.stream, static_cast<std::size_t>(m) * kH * (f32 ? 4 : 2)),
                                           nullptr, {}});
    r->boundary = std::make_unique<gpu::RankBoundary>(c->constants, r->ops.views(), m);
    r->variant = r->boundary->fused().variant_for(m, c->bound.inputs.stream_dtype, c->store, pdl);
    r->boundary->prepare(r->variant, s);
    ready.push_back(std::move(r));
  }
  gpu::RankConfig config{o.channel, o.rank, o.ranks, max_rows, std::chrono::milliseconds(o.timeout_ms)};
  gpu::RankGroup group(config);
  nlohmann::json written = nlohmann::json::array();
  for (std::size_t k = 0; k < cs.size(); ++k) {
    const RankCase& c = *cs[k];
    Ready& r = *ready[k];
    const std::int64_t m = c.bound.m;
    const auto n = static_cast<std::size_t>(m) * kH;
    // Poisoned outputs: an element no kernel wrote cannot pass (cases.hpp, gpu_runs::run_poisoned).
    gpu::DeviceBuffer outs[2] = {gpu::DeviceBuffer(n * 2), gpu::DeviceBuffer(n * 2)};
    gpu::DeviceBuffer streams[2] = {c.store ? gpu::DeviceBuffer(n * 4) : gpu::DeviceBuffer(),
                                    c.store ? gpu::DeviceBuffer(n * 4) : gpu::DeviceBuffer()};
    for (int i = 0; i < 2; ++i) {
      outs[i].fill(0xFF);
      if (c.store) streams[i].fill(0xFF);
    }
    const auto outputs = [&](int i) {
      return gpu::Outputs{outs[i].view(gpu::Dtype::bf16, {m, kH}), streams[i].view(gpu::Dtype::f32, {m, kH})};
    };
    const gpu::TensorView stream_view = r.stream.view(
        c.bound.inputs.stream_dtype == StreamDtype::f32 ? gpu::Dtype::f32 : gpu::Dtype::bf16, {m, kH});
    group.wait_writable(s, pdl);
    gpu::cuda_check(cudaMemcpyAsync(group.partial(o.rank, m).data, c.partial.data(), n * 2, cudaMemcpyHostToDevice, s),
                    "copying this rank's partial");
    group.arrive(s, pdl);
    r.boundary->launch(group, m, stream_view, outputs(0), outputs(1), s, r.variant);
    group.depart(s, pdl);
    gpu::cuda_check(cudaStreamSynchronize(s), "the rank's step");
    group.check();
    for (int i = 0; i < 2; ++i) {
      st::File f;
      f.metadata["kernel"] = i == 0 ? "AllReduceBoundary" : "all-reduce kernel + eager chain";
      f.metadata["rank"] = std::to_string(o.rank) + " of " + std::to_string(o.ranks);
      f.tensors["out"] = download(outs[i], st::Dtype::BF16, m);
      if (c.store) f.tensors["new_stream"] = download(streams[i], st::Dtype::F32, m);
      const auto path = rank_output_path(o.outputs, c.path, o.rank, i == 0 ? "fused" : "eager");
      st::write_file(path, f);
      written.push_back(path.string());
    }
  }
  *exit_code = kSuccess;
  return {{"command", "rank"}, {"written", true}, {"rank", o.rank}, {"ranks", o.ranks}, {"outputs", written},
          {"epoch", group.epoch()}};
}

std::string format_rank(const nlohmann::json& r) {
  if (!r["written"].get<bool>()) return "rank: " + r["reason"].get<std::string>() + "\n";
  std::ostringstream s;
  s << "rank " << r["rank"] << " of " << r["ranks"] << ": " << r["outputs"].size() << " outputs written, "
    << r["epoch"] << " steps\n";
  return s.str();
}

}  // namespace boundary::cli
