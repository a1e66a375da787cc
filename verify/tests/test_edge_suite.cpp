// The edge and fuzz suites, the edge constants, and the vacuity check against the emulator's mutants.
#include <boundary/mutant_emulators.hpp>
#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/edge_rows.hpp>
#include <boundary/verify/edge_suite.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <iterator>
#include <string>
#include <thread>

using namespace boundary;
namespace st = boundary::safetensors;

namespace {
Constants stock(const char* name) {
  return read_constants(std::string(BOUNDARY_SOURCE_DIR "/fixtures/constants/muse-spark-") + name + ".json");
}
const char* const kStock[] = {"post-attention", "post-ffn"};
// The sanitizer build runs the emulator 10 to 15 times slower: the emulator-heavy cases check two
// of the four (stock constants, stream dtype) pairs, post-attention with F32 and post-ffn with BF16;
// the Release build checks all four.
bool checked(std::size_t stock, StreamDtype dtype) {
#ifdef BOUNDARY_SANITIZED
  return (stock == 0) == (dtype == StreamDtype::f32);
#else
  (void)stock;
  (void)dtype;
  return true;
#endif
}
unsigned cores() { return std::max(1u, std::thread::hardware_concurrency()); }

bool has_family(const suite::Suite& s, const std::string& prefix) {
  return std::any_of(s.row_family.begin(), s.row_family.end(), [&](const std::string& f) { return f.starts_with(prefix); });
}
}  // namespace

TEST_CASE("level 1: a few hundred rows, one family name per row, the 23 edge patterns included") {
  for (const StreamDtype dtype : {StreamDtype::f32, StreamDtype::bf16}) {
    const auto start = std::chrono::steady_clock::now();
    const suite::Suite s = suite::make_edge_suite(stock("post-ffn"), 1, 5, dtype);
    MESSAGE("level 1 suite built in " << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s");
    const std::int64_t rows = s.inputs.tensors.at("branch").shape[0];
    CHECK(rows >= 200);
    CHECK(rows <= 600);
    CHECK(s.row_family.size() == static_cast<std::size_t>(rows));
    CHECK(s.inputs.tensors.at("stream").dtype == (dtype == StreamDtype::f32 ? st::Dtype::F32 : st::Dtype::BF16));
    for (const EdgePattern& p : edge_patterns()) CHECK(has_family(s, std::string("pattern: ") + p.name));
    for (const char* family : {"sweep branch: exponent 0,", "sweep stream: exponent 254,", "all equal:", "one outlier:",
                               "S1 overflows", "S2 subnormal", "S1 = 0 with x != 0", "FPRev: warp butterfly", "FPRev: warp totals",
                               "FPRev (stream)", "FPRev: thread chains", "tie: y", "tie: res", "tie: o", "realistic"})
      CHECK_MESSAGE(has_family(s, family), family);
  }
  const auto level2 = suite::make_edge_suite(stock("post-attention"), 2, 5, StreamDtype::f32);
  CHECK(level2.inputs.tensors.at("branch").shape[0] > 2 * suite::make_edge_suite(stock("post-attention"), 1, 5, StreamDtype::f32).row_family.size());
  CHECK(has_family(level2, "sweep branch: exponent 127, significand alternating"));
  CHECK_THROWS_AS(suite::make_edge_suite(stock("post-ffn"), 3, 5, StreamDtype::f32), InputError);
}

TEST_CASE("the edge suite is deterministic in its seed") {
  const Constants c = stock("post-attention");
  const auto a = st::serialize(suite::make_edge_suite(c, 1, 9, StreamDtype::bf16).inputs);
  CHECK(a == st::serialize(suite::make_edge_suite(c, 1, 9, StreamDtype::bf16).inputs));
  CHECK(a != st::serialize(suite::make_edge_suite(c, 1, 10, StreamDtype::bf16).inputs));
}

TEST_CASE("edge gates and weights sit in their columns; the other columns keep realistic values") {
  const suite::Suite s = suite::make_edge_suite(stock("post-ffn"), 1, 3, StreamDtype::f32);
  const auto* alpha = s.inputs.tensors.at("alpha").data<std::uint32_t>();
  const auto* beta = s.inputs.tensors.at("beta").data<std::uint32_t>();
  const std::vector<int> gates = suite::gate_edge_columns();
  REQUIRE(gates.size() >= 16);
  CHECK(alpha[gates[1]] == 0x80000000u);  // -0
  CHECK(beta[gates[7]] == 0x3F800000u);
  CHECK(alpha[gates[7]] == 0x00000001u);  // the smallest subnormal
  int realistic = 0;
  for (int c = 0; c < kH; ++c) {
    const float a = std::bit_cast<float>(alpha[c]);
    realistic += a > 0.03f && a < 1.5f && std::bit_cast<float>(beta[c]) > 0.0f;
  }
  CHECK(realistic >= kH - static_cast<int>(gates.size()));
  const auto* w = s.inputs.tensors.at("pre_weight").data<std::uint16_t>();
  const std::vector<int> weights = suite::weight_edge_columns();
  CHECK(w[weights[1]] == 0x8000u);                  // -0
  CHECK(w[weights[2]] == 0xBF80u);                  // -1: gamma 0 with gain centre 1
  CHECK(w[weights[weights.size() - 1]] == 0x8001u); // the smallest BF16 subnormal, negative
}

TEST_CASE("tie rows: y, res and o land exactly halfway between two BF16 values (checked through the emulator)") {
  for (std::size_t i = 0; i < std::size(kStock); ++i)
    for (const StreamDtype dtype : {StreamDtype::f32, StreamDtype::bf16}) {
      if (!checked(i, dtype)) continue;
      const char* const name = kStock[i];
      const Constants c = stock(name);
      const suite::Suite s = suite::make_edge_suite(c, 1, 11, dtype);
      const suite::TieRows ties = suite::count_tie_rows(c, s.inputs);
      MESSAGE(name << ": rows with a tie in y " << ties.y << ", res " << ties.res << ", o " << ties.out);
      const auto family_rows = [&](const char* prefix) {
        return std::count_if(s.row_family.begin(), s.row_family.end(), [&](const std::string& f) { return f.starts_with(prefix); });
      };
      CHECK(ties.y >= family_rows("tie: y"));
      CHECK(ties.res >= family_rows("tie: res"));
      CHECK(ties.out >= family_rows("tie: o"));
      // Without the tie families a realistic row rarely holds an exact tie.
      const suite::TieRows realistic = suite::count_tie_rows(c, suite::make_fuzz_suite(c, 4, 1, dtype).inputs);
      CHECK(realistic.y + realistic.out < ties.y + ties.out);
    }
}

TEST_CASE("vacuity: the level-1 suite catches every emulator mutant, for both stock constants and stream dtypes") {
  for (std::size_t i = 0; i < std::size(kStock); ++i)
    for (const StreamDtype dtype : {StreamDtype::f32, StreamDtype::bf16}) {
      if (!checked(i, dtype)) continue;
      const char* const name = kStock[i];
      const Constants c = stock(name);
      const suite::Suite s = suite::make_edge_suite(c, 1, 1, dtype);
      const auto start = std::chrono::steady_clock::now();
      const suite::Vacuity v = suite::check_vacuity(c, s.inputs, cores());
      MESSAGE(name << ": vacuity check in " << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s");
      for (const auto& [mutant, rows] : v.rows_caught) MESSAGE("  " << mutant << ": " << rows << " rows");
      CHECK(v.rows_caught.size() == mutants::kEmulatorTwins.size());
      CHECK_MESSAGE(v.uncaught.empty(), (v.uncaught.empty() ? std::string() : v.uncaught.front()));
      // A branch is one rank: rank_order cannot apply, and is said so, not counted uncaught.
      CHECK(v.not_applicable.count("rank_order") == 1);
      CHECK(v.rows_caught.at("fragment_order") > 0);
    }
}

TEST_CASE("vacuity: all-zero rows catch nothing, and the check says so") {
  const Constants c = stock("post-ffn");
  st::File zeros = suite::make_fuzz_suite(c, 3, 1, StreamDtype::f32).inputs;
  for (auto* t : {&zeros.tensors.at("branch"), &zeros.tensors.at("stream")}) std::fill(t->bytes.begin(), t->bytes.end(), 0);
  const suite::Vacuity v = suite::check_vacuity(c, zeros, 2);
  CHECK(v.uncaught.size() == mutants::kEmulatorTwins.size() - 1);  // all but rank_order, not applicable
  CHECK(v.rows_caught.at("connection_fma") == 0);
}

TEST_CASE("fuzz suite: realistic rows, some with random bit patterns; deterministic in the seed") {
  const Constants c = stock("post-attention");
  const suite::Suite a = suite::make_fuzz_suite(c, 64, 7, StreamDtype::f32);
  REQUIRE(a.row_family.size() == 64);
  const auto fuzzed = std::count_if(a.row_family.begin(), a.row_family.end(), [](const std::string& f) { return f != "fuzz: realistic"; });
  CHECK(fuzzed > 16);
  CHECK(fuzzed < 48);
  CHECK(st::serialize(a.inputs) == st::serialize(suite::make_fuzz_suite(c, 64, 7, StreamDtype::f32).inputs));
  CHECK(st::serialize(a.inputs) != st::serialize(suite::make_fuzz_suite(c, 64, 8, StreamDtype::f32).inputs));
  // Realistic rows stay those of the generator: the first realistic row equals generate_inputs' row.
  const st::File plain = suite::make_fuzz_suite(c, 64, 7, StreamDtype::bf16).inputs;
  CHECK(plain.tensors.at("stream").dtype == st::Dtype::BF16);
}

TEST_CASE("operand specials: NaN payloads and infinities in one gate or weight column") {
  const auto attention = suite::make_operand_special_suites(stock("post-attention"), 1, StreamDtype::f32);
  CHECK(attention.size() == 3 * 6);  // alpha, beta, pre_weight
  const auto ffn = suite::make_operand_special_suites(stock("post-ffn"), 1, StreamDtype::f32);
  REQUIRE(ffn.size() == 4 * 6);
  const auto it = std::find_if(ffn.begin(), ffn.end(), [](const suite::Suite& s) { return s.name.find("post_weight") != std::string::npos && s.name.ends_with("-signalling NaN"); });
  REQUIRE(it != ffn.end());
  const auto* w = it->inputs.tensors.at("post_weight").data<std::uint16_t>();
  CHECK(std::count(w, w + kH, std::uint16_t{0xFF81}) == 1);
  const auto* alpha = ffn.front().inputs.tensors.at("alpha").data<std::uint32_t>();
  CHECK(std::count(alpha, alpha + kH, 0x7FC00001u) == 1);
}

TEST_CASE("edge constants: every variant differs from the base and is what the constants file accepts") {
  const auto ffn = suite::edge_constants(stock("post-ffn"));
  std::vector<std::string> names;
  for (const auto& [name, c] : ffn) {
    names.push_back(name);
    CHECK(constants_to_json(c) != constants_to_json(stock("post-ffn")));
    CHECK(constants_to_json(constants_from_json(constants_to_json(c), name)) == constants_to_json(c));
  }
  CHECK(names == std::vector<std::string>{"eps 0", "eps tiny (the smallest normal float)", "gain centre 0", "weight dtype fp16",
                                          "weight dtype fp32", "fma_squares on"});
  const auto& [tiny_name, tiny] = ffn[1];
  CHECK(static_cast<float>(tiny.pre.eps) == std::numeric_limits<float>::min());
  const auto& [gain_name, gain0] = ffn[2];
  CHECK(gain0.post.gain_center == 0.0);
  CHECK(gain0.pre.gain_center == 0.0);
  // The post-attention post norm has no weight: the variants leave it without one.
  for (const auto& [name, c] : suite::edge_constants(stock("post-attention"))) CHECK_MESSAGE(!c.post.has_weight(), name);
}
