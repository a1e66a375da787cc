// The GPU tests of the host API (ctest label gpu; part of the test_gpu_boundary program): the
// operands, tensors and captures DraftBoundary and EagerChain refuse, each refusal an InputError
// naming what it refuses and launching nothing, and run() with outputs it allocates.
#include "gpu_test_launches.hpp"

using namespace gpu_test;

namespace {

// Device operands and tensors for the refusal tests; their values are never read by a kernel
// except in the final good launch, where they are zeros.
struct ApiFixture {
  static constexpr std::int64_t m = 4;
  static constexpr std::size_t kSlack = 64;  // room for the misaligned (+4 bytes) views

  ApiFixture()
      : alpha(kH * 4 + kSlack),
        beta(kH * 4 + kSlack),
        weight16(kH * 2 + kSlack),
        weight16b(kH * 2 + kSlack),
        weight32(kH * 4 + kSlack),
        branch(bytes16(m) + kSlack),
        stream_f32(bytes32(m) + kSlack),
        stream_bf16(bytes16(m) + kSlack),
        out(bytes16(m) + kSlack),
        new_stream(bytes32(m) + kSlack),
        host(static_cast<std::uint8_t*>(std::aligned_alloc(256, bytes32(m))), std::free) {
    REQUIRE(host != nullptr);
    for (const DeviceBuffer* b : {&alpha, &beta, &weight16, &weight16b, &weight32, &branch, &stream_f32, &stream_bf16})
      CUDA_CHECK(cudaMemset(b->get(), 0, b->bytes()));
    std::memset(host.get(), 0, bytes32(m));
  }

  gpu::Operands ffn_operands() const {  // post-ffn: both norms with a BF16 weight
    return {TensorView{alpha.get(), Dtype::f32, {kH}}, TensorView{beta.get(), Dtype::f32, {kH}},
            TensorView{weight16.get(), Dtype::bf16, {kH}}, TensorView{weight16b.get(), Dtype::bf16, {kH}}};
  }
  TensorView branch_view() const { return {branch.get(), Dtype::bf16, {m, kH}}; }
  TensorView stream_view() const { return {stream_f32.get(), Dtype::f32, {m, kH}}; }
  gpu::Outputs outputs() const {
    return {TensorView{out.get(), Dtype::bf16, {m, kH}}, TensorView{new_stream.get(), Dtype::f32, {m, kH}}};
  }

  DeviceBuffer alpha, beta, weight16, weight16b, weight32, branch, stream_f32, stream_bf16, out, new_stream;
  std::unique_ptr<std::uint8_t, void (*)(void*)> host;  // not device memory, 256-byte aligned
};

// Both implementations refuse the same operands, with an InputError naming the operand.
void expect_operands_refused(const Constants& k, const gpu::Operands& ops, const char* needle) {
  INFO("refusal expected, message containing: " << std::string(needle));
  CHECK_THROWS_WITH_AS([&] { gpu::DraftBoundary fused(k, ops); }(), doctest::Contains(needle), InputError);
  CHECK_THROWS_WITH_AS([&] { gpu::EagerChain eager(k, ops); }(), doctest::Contains(needle), InputError);
}

}  // namespace

TEST_CASE("host API: operands of the wrong shape, dtype, alignment or memory, and missing or unexpected weights") {
  const ApiFixture f;
  const Constants ffn = post_ffn();
  // The unchanged operands are accepted: each refusal below is caused by the one thing changed.
  CHECK_NOTHROW([&] { gpu::DraftBoundary fused(ffn, f.ffn_operands()); }());
  CHECK_NOTHROW([&] { gpu::EagerChain eager(ffn, f.ffn_operands()); }());

  gpu::Operands o = f.ffn_operands();
  o.alpha.shape = {kH - 1};
  expect_operands_refused(ffn, o, "'alpha' has shape");
  o = f.ffn_operands();
  o.alpha.shape = {1, kH};
  expect_operands_refused(ffn, o, "'alpha' has shape");
  o = f.ffn_operands();
  o.beta.dtype = Dtype::bf16;
  expect_operands_refused(ffn, o, "'beta' has dtype");
  o = f.ffn_operands();
  o.alpha.data = f.alpha.at(4);
  expect_operands_refused(ffn, o, "'alpha' is not 32-byte aligned");
  o = f.ffn_operands();
  o.beta.data = f.beta.at(16);  // 16-byte aligned is not enough for the FP32 gates
  expect_operands_refused(ffn, o, "'beta' is not 32-byte aligned");
  o = f.ffn_operands();
  o.alpha.data = nullptr;
  expect_operands_refused(ffn, o, "'alpha' is missing");
  o = f.ffn_operands();
  o.beta.data = f.host.get();
  expect_operands_refused(ffn, o, "'beta' is not device memory");
  o = f.ffn_operands();
  o.post_weight.reset();
  expect_operands_refused(ffn, o, "'post_weight' is missing");
  o = f.ffn_operands();
  o.pre_weight->dtype = Dtype::f16;
  expect_operands_refused(ffn, o, "'pre_weight' has dtype");
  o = f.ffn_operands();
  o.post_weight->shape = {kH + 1};
  expect_operands_refused(ffn, o, "'post_weight' has shape");
  o = f.ffn_operands();
  o.pre_weight->data = f.weight16b.at(4);
  expect_operands_refused(ffn, o, "'pre_weight' is not 16-byte aligned");
  o = f.ffn_operands();
  o.post_weight->data = f.host.get();
  expect_operands_refused(ffn, o, "'post_weight' is not device memory");

  // post-attention: the post norm has no weight, so one given is refused.
  const Constants attention = post_attention();
  o = f.ffn_operands();
  CHECK_NOTHROW([&] {
    gpu::Operands ok = o;
    ok.post_weight.reset();
    gpu::DraftBoundary fused(attention, ok);
  }());
  expect_operands_refused(attention, o, "'post_weight' is given");

  // An FP32 weight needs 32-byte alignment, like the gates.
  Constants fp32 = ffn;
  fp32.pre.weight_dtype = WeightDtype::fp32;
  o = f.ffn_operands();
  o.pre_weight = TensorView{f.weight32.get(), Dtype::f32, {kH}};
  CHECK_NOTHROW([&] { gpu::DraftBoundary fused(fp32, o); }());
  o.pre_weight->data = f.weight32.at(16);
  expect_operands_refused(fp32, o, "'pre_weight' is not 32-byte aligned");
  o.pre_weight = TensorView{f.weight16b.get(), Dtype::bf16, {kH}};
  expect_operands_refused(fp32, o, "'pre_weight' has dtype");
}

TEST_CASE("host API: branch, stream and outputs refused by run(), naming the tensor, and nothing launched") {
  const ApiFixture f;
  const NamedConstants k{"post-ffn (stock)", post_ffn(), true};
  gpu::DraftBoundary fused(k.constants, f.ffn_operands());
  gpu::EagerChain eager(k.constants, f.ffn_operands());
  const Stream stream;
  poison(f.out.get(), f.out.bytes(), stream);
  poison(f.new_stream.get(), f.new_stream.bytes(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));

  struct Case {
    const char* needle;
    TensorView branch, stream;
    gpu::Outputs outputs;
  };
  const auto with = [&](const char* needle, auto&& change) {
    Case c{needle, f.branch_view(), f.stream_view(), f.outputs()};
    change(c);
    return c;
  };
  const Case cases[] = {
      with("'branch' has shape", [](Case& c) { c.branch.shape = {ApiFixture::m, kH - 1}; }),
      with("'branch' has shape", [](Case& c) { c.branch.shape = {kH}; }),
      with("'branch' has shape", [](Case& c) { c.branch.shape = {0, kH}; }),
      with("'branch' has dtype", [](Case& c) { c.branch.dtype = Dtype::f32; }),
      with("'branch' is not 16-byte aligned", [&](Case& c) { c.branch.data = f.branch.at(4); }),
      with("'branch' is missing", [](Case& c) { c.branch.data = nullptr; }),
      with("'branch' is not device memory", [&](Case& c) { c.branch.data = f.host.get(); }),
      with("'stream' has shape", [](Case& c) { c.stream.shape = {ApiFixture::m + 1, kH}; }),
      with("'stream' has dtype", [](Case& c) { c.stream.dtype = Dtype::f16; }),
      with("'stream' is not 16-byte aligned", [&](Case& c) { c.stream.data = f.stream_f32.at(4); }),
      with("'stream' is not device memory", [&](Case& c) { c.stream.data = f.host.get(); }),
      with("'out' has dtype", [](Case& c) { c.outputs.out.dtype = Dtype::f32; }),
      with("'out' has shape", [](Case& c) { c.outputs.out.shape = {ApiFixture::m - 1, kH}; }),
      with("'out' is not 16-byte aligned", [&](Case& c) { c.outputs.out.data = f.out.at(4); }),
      with("'out' is missing", [](Case& c) { c.outputs.out.data = nullptr; }),
      with("'new_stream' has dtype", [](Case& c) { c.outputs.new_stream.dtype = Dtype::bf16; }),
      with("'new_stream' has shape", [](Case& c) { c.outputs.new_stream.shape = {ApiFixture::m, kH - 8}; }),
      with("'new_stream' is not 16-byte aligned", [&](Case& c) { c.outputs.new_stream.data = f.new_stream.at(4); }),
  };
  for (const Case& c : cases) {
    INFO("refusal expected, message containing: " << std::string(c.needle));
    CHECK_THROWS_WITH_AS(fused.run(c.branch, c.stream, c.outputs, stream), doctest::Contains(c.needle), InputError);
    CHECK_THROWS_WITH_AS(eager.run(c.branch, c.stream, c.outputs, stream), doctest::Contains(c.needle), InputError);
  }
  // A forced variant must match the tensors it is launched on.
  const Variant good = fused.variant_for(ApiFixture::m, StreamDtype::f32, true);
  CHECK_THROWS_WITH_AS(fused.run(f.branch_view(), f.stream_view(), f.outputs(), stream, Variant{StreamDtype::bf16, true, false, true}),
                       doctest::Contains("variant"), InputError);
  CHECK_THROWS_WITH_AS(fused.run(f.branch_view(), f.stream_view(), f.outputs(), stream, Variant{StreamDtype::f32, false, false, true}),
                       doctest::Contains("variant"), InputError);

  // launch() checks nothing but its own scratch: unprepared, it refuses rather than write past it.
  {
    gpu::EagerChain unprepared(k.constants, f.ffn_operands());
    CHECK_THROWS_WITH_AS(unprepared.launch(f.branch_view(), f.stream_view(), f.outputs(), stream), doctest::Contains("prepare"),
                         InputError);
  }

  // run() checks before it launches: the poisoned outputs are untouched.
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<std::uint16_t> out(elements(ApiFixture::m));
  std::vector<float> ns(elements(ApiFixture::m));
  CUDA_CHECK(cudaMemcpy(out.data(), f.out.get(), bytes16(ApiFixture::m), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(ns.data(), f.new_stream.get(), bytes32(ApiFixture::m), cudaMemcpyDeviceToHost));
  for (std::int64_t row = 0; row < ApiFixture::m; ++row) {
    expect_untouched<std::uint16_t>("refused runs", "out", std::span(out).subspan(elements(row), kH), "by a refused call");
    expect_untouched<float>("refused runs", "new_stream", std::span(ns).subspan(elements(row), kH), "by a refused call");
  }

  // The same call with the good tensors launches and writes every element: the poison check
  // above could have failed. All-zero inputs and gates: S = 0, r = rsqrt(eps), every output +0.
  for (bool use_eager : {false, true}) {
    const std::string context = use_eager ? "eager chain, good tensors" : "fused, good tensors";
    if (use_eager) eager.run(f.branch_view(), f.stream_view(), f.outputs(), stream);
    else fused.run(f.branch_view(), f.stream_view(), f.outputs(), stream, good);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaMemcpy(out.data(), f.out.get(), bytes16(ApiFixture::m), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(ns.data(), f.new_stream.get(), bytes32(ApiFixture::m), cudaMemcpyDeviceToHost));
    expect_bits<std::uint16_t>(context, "out", out, std::vector<std::uint16_t>(out.size(), 0), "+0");
    expect_bits<float>(context, "new_stream", ns, std::vector<float>(ns.size(), 0.0f), "+0");
    poison(f.out.get(), f.out.bytes(), stream);
    poison(f.new_stream.get(), f.new_stream.bytes(), stream);
  }
}

TEST_CASE("host API: takes() is false for a branch or stream run() would refuse") {
  const ApiFixture f;
  const gpu::DraftBoundary fused(post_ffn(), f.ffn_operands());
  // The good tensors are taken (both stream dtypes): each false below is caused by one change.
  CHECK(fused.takes(f.branch_view(), f.stream_view()));
  CHECK(fused.takes(f.branch_view(), TensorView{f.stream_bf16.get(), Dtype::bf16, {ApiFixture::m, kH}}));

  const auto not_taken = [&](const char* what, auto&& change) {
    TensorView branch = f.branch_view(), stream = f.stream_view();
    change(branch, stream);
    INFO("takes() must be false: " << std::string(what));
    CHECK_FALSE(fused.takes(branch, stream));
  };
  not_taken("branch 1-D", [](TensorView& b, TensorView&) { b.shape = {kH}; });
  not_taken("branch of 0 rows", [](TensorView& b, TensorView& s) { b.shape = s.shape = {0, kH}; });
  not_taken("branch of -1 rows", [](TensorView& b, TensorView& s) { b.shape = s.shape = {-1, kH}; });
  not_taken("branch [m, 8191]", [](TensorView& b, TensorView&) { b.shape = {ApiFixture::m, kH - 1}; });
  not_taken("branch [m, 8192, 1]", [](TensorView& b, TensorView&) { b.shape = {ApiFixture::m, kH, 1}; });
  not_taken("branch F16", [](TensorView& b, TensorView&) { b.dtype = Dtype::f16; });
  not_taken("branch F32", [](TensorView& b, TensorView&) { b.dtype = Dtype::f32; });
  not_taken("branch 4 bytes off alignment", [&](TensorView& b, TensorView&) { b.data = f.branch.at(4); });
  not_taken("branch in host memory", [&](TensorView& b, TensorView&) { b.data = f.host.get(); });
  not_taken("branch null", [](TensorView& b, TensorView&) { b.data = nullptr; });
  not_taken("stream of other rows", [](TensorView&, TensorView& s) { s.shape = {ApiFixture::m + 1, kH}; });
  not_taken("stream 1-D", [](TensorView&, TensorView& s) { s.shape = {ApiFixture::m * kH}; });
  not_taken("stream F16", [](TensorView&, TensorView& s) { s.dtype = Dtype::f16; });
  not_taken("stream 4 bytes off alignment", [&](TensorView&, TensorView& s) { s.data = f.stream_f32.at(4); });
  not_taken("stream in host memory", [&](TensorView&, TensorView& s) { s.data = f.host.get(); });
  not_taken("stream null", [](TensorView&, TensorView& s) { s.data = nullptr; });
}

TEST_CASE("host API: hand-out thresholds start from the device's, a negative one is refused naming its field") {
  const ApiFixture f;
  gpu::DraftBoundary fused(post_ffn(), f.ffn_operands());
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  const gpu::HandoutThresholds start = gpu::handout_thresholds_for(device);
  CHECK(fused.handout_thresholds() == start);
  CHECK(start.cta_f32 > 0);  // the cta layout hands rows out on every device measured
  CHECK(start.cta_bf16 > 0);
  CHECK(start.quad >= 0);
  const gpu::HandoutThresholds set{1, 0, 7};
  fused.set_handout_thresholds(set);
  CHECK(fused.handout_thresholds() == set);
  CHECK_THROWS_WITH_AS(fused.set_handout_thresholds({-1, 24, 0}), doctest::Contains("HandoutThresholds::cta_f32 is -1"), InputError);
  CHECK_THROWS_WITH_AS(fused.set_handout_thresholds({12, -2, 0}), doctest::Contains("HandoutThresholds::cta_bf16 is -2"), InputError);
  CHECK_THROWS_WITH_AS(fused.set_handout_thresholds({12, 24, -3}), doctest::Contains("HandoutThresholds::quad is -3"), InputError);
  CHECK(fused.handout_thresholds() == set);  // a refused set changes nothing
}

TEST_CASE("host API: prepare() refused while its stream captures; the capture survives the refusal") {
  const ApiFixture f;
  const Constants k = post_ffn();
  gpu::DraftBoundary fused(k, f.ffn_operands());
  const Variant v = fused.variant_for(ApiFixture::m, StreamDtype::f32, true);
  for (unsigned flags : {unsigned{cudaStreamNonBlocking}, unsigned{cudaStreamDefault}}) {
    INFO("capturing stream flags " << flags);
    gpu::EagerChain eager(k, f.ffn_operands());  // no scratch yet: run() would have to allocate
    const Stream stream(flags);
    Capture capture(stream, cudaStreamCaptureModeGlobal);
    CHECK_THROWS_WITH_AS(fused.prepare(v, stream), doctest::Contains("capture"), InputError);
    CHECK_THROWS_WITH_AS(eager.prepare(ApiFixture::m, stream), doctest::Contains("capture"), InputError);
    // run() needs scratch it cannot allocate during a capture.
    CHECK_THROWS_WITH_AS(eager.run(f.branch_view(), f.stream_view(), f.outputs(), stream), doctest::Contains("capture"),
                         InputError);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
    CHECK(status == cudaStreamCaptureStatusActive);  // not invalidated by the refusals
    const Graph graph(capture.end());                // ends cleanly: nothing illegal was captured
    CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
    CHECK(status == cudaStreamCaptureStatusNone);
    // Outside the capture the same calls are accepted.
    CHECK_NOTHROW(fused.prepare(v, stream));
    CHECK_NOTHROW(eager.prepare(ApiFixture::m, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
}

// The header promises a refusal while `stream` captures, and, through the legacy default stream,
// while a blocking stream captures: prepare() with its default stream argument.
TEST_CASE("host API: prepare() on the default stream refused while a blocking stream captures") {
  const ApiFixture f;
  const Constants k = post_ffn();
  gpu::DraftBoundary fused(k, f.ffn_operands());
  const Variant v = fused.variant_for(ApiFixture::m, StreamDtype::f32, true);
  for (unsigned flags : {unsigned{cudaStreamDefault}}) {
    INFO("capturing stream flags " << flags);
    gpu::EagerChain eager(k, f.ffn_operands());
    const Stream stream(flags);
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    CHECK_THROWS_WITH_AS(fused.prepare(v), doctest::Contains("capture"), InputError);
    CHECK_THROWS_WITH_AS(eager.prepare(ApiFixture::m), doctest::Contains("capture"), InputError);
    // Ended by hand, whatever happened: a failed prepare may have invalidated the capture.
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    if (graph) CUDA_CHECK(cudaGraphDestroy(graph));
    // A refused CUDA query leaves its error as the thread's last error, which the next
    // <<<>>> launch checked with cudaGetLastError would report as its own.
    cudaGetLastError();
    CHECK_MESSAGE(ended == cudaSuccess, "the capture did not survive the refusals: " << std::string(cudaGetErrorName(ended)));
  }
}

TEST_CASE("run() with owned outputs equals the emulator") {
  // Fresh rows (another seed) that no earlier launch computed: the unpoisoned memory run()
  // allocates cannot already hold their bits.
  const Constants k = post_ffn();
  const std::int64_t m = 133;
  const st::File f = generate_inputs(k, m, kRowSeed + 1, StreamDtype::bf16);
  HostRows h;
  h.n = m;
  const auto* b = f.tensors.at("branch").data<std::uint16_t>();
  const auto* sb = f.tensors.at("stream").data<std::uint16_t>();
  h.branch.assign(b, b + elements(m));
  h.stream_bf16.assign(sb, sb + elements(m));
  h.stream_f32.resize(elements(m));
  std::transform(h.stream_bf16.begin(), h.stream_bf16.end(), h.stream_f32.begin(), ref::bf16_to_f32);
  const DeviceRows rows(h);
  Subject s({"post-ffn (stock)", k, true}, realistic_operands(k));
  const Expected want = emulate(s, h, StreamDtype::bf16, m);
  const Stream stream;
  for (bool store : {true, false}) {
    const std::string context = s.name + " | owned outputs, stored = " + std::to_string(store);
    const gpu::OwnedOutputs o = s.fused.run(rows.branch_view(0, m), rows.stream_view(StreamDtype::bf16, 0, m), stream, store);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CHECK(o.views.out.dtype == Dtype::bf16);
    CHECK(o.views.out.shape == std::vector<std::int64_t>{m, kH});
    REQUIRE(o.views.out.data != nullptr);
    CHECK((o.views.new_stream.data != nullptr) == store);
    std::vector<std::uint16_t> out(elements(m));
    CUDA_CHECK(cudaMemcpy(out.data(), o.views.out.data, bytes16(m), cudaMemcpyDeviceToHost));
    expect_bits<std::uint16_t>(context, "out", out, want.out_rows(0, m), "the emulator");
    if (!store) continue;
    CHECK(o.views.new_stream.dtype == Dtype::f32);
    CHECK(o.views.new_stream.shape == std::vector<std::int64_t>{m, kH});
    std::vector<float> ns(elements(m));
    CUDA_CHECK(cudaMemcpy(ns.data(), o.views.new_stream.data, bytes32(m), cudaMemcpyDeviceToHost));
    expect_bits<float>(context, "new_stream", ns, want.new_stream_rows(0, m), "the emulator");
  }
}
