// The emulator twins of the planted bugs: Mutant::none is the production emulator bit for bit,
// and each twin changes a row built for it, first at the stage where its bug sits. The rows start
// from a unit row (branch all 1.0, eps 0, alpha 0, beta 1: every stage's value is 1 or 8192) and
// change a column or two, written as bit patterns.
#include "bits.hpp"

#include <boundary/mutant_emulators.hpp>
#include <boundary/reference.hpp>

#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using namespace boundary;
using namespace boundary::test;

// This file is built like any user of the library: without BOUNDARY_MUTANT, so it must see the
// production emulator. Fails to compile if a mutant's definition leaks into other targets.
static_assert(kMutant == Mutant::none);
static_assert(std::is_same_v<ref::Boundary, ref::v1::Boundary>);

namespace {

constexpr std::uint16_t kOneBf16 = make_bf16(0, 127, 0);

// One row (m = 1) with its operands. Weights are stored as raw words of their dtype.
struct Row {
  Constants constants{.post = {.eps = 0.0}, .pre = {.eps = 0.0}};
  std::vector<std::uint16_t> branch = std::vector<std::uint16_t>(kH, kOneBf16);
  std::vector<float> stream = std::vector<float>(kH, 0.0f);
  std::vector<float> alpha = std::vector<float>(kH, 0.0f), beta = std::vector<float>(kH, 1.0f);
  std::vector<std::uint16_t> post_w16 = std::vector<std::uint16_t>(kH, 0);
  std::vector<float> post_w32 = std::vector<float>(kH, 0.0f);
  // Rank partials in place of the branch when not empty (contract section 7).
  std::vector<std::vector<std::uint16_t>> partials;

  ref::Operands operands() const {
    const NormConstants& post = constants.post;
    const void* w = !post.has_weight() ? nullptr
                    : post.weight_dtype == WeightDtype::fp32 ? static_cast<const void*>(post_w32.data())
                                                             : post_w16.data();
    return {alpha.data(), beta.data(), w, nullptr};
  }
};

// Every output and intermediate of one row, in stage order.
struct Results {
  float s1 = 0, r1 = 0, s2 = 0, r2 = 0;
  std::vector<std::uint16_t> branch = std::vector<std::uint16_t>(kH), y_b = branch, z = branch, out = branch;
  std::vector<float> new_stream = std::vector<float>(kH);
};

// Runs one implementation on the row, every output and intermediate asked for.
using Implementation = std::function<void(const ref::Inputs&, const ref::Outputs&)>;
Results run_row(const Row& row, const Implementation& implementation) {
  Results r;
  ref::Inputs in;
  in.m = 1;
  std::vector<const std::uint16_t*> partials;
  for (const auto& p : row.partials) partials.push_back(p.data());
  if (partials.empty()) in.branch = row.branch.data();
  in.partials = partials;
  in.stream = row.stream.data();
  ref::Outputs o;
  o.out = r.out.data();
  o.branch = r.branch.data();
  o.new_stream = r.new_stream.data();
  o.post_row_sum = &r.s1;
  o.r1 = &r.r1;
  o.y_b = r.y_b.data();
  o.z = r.z.data();
  o.pre_row_sum = &r.s2;
  o.r2 = &r.r2;
  implementation(in, o);
  return r;
}

Results run(Mutant m, const Row& row) {
  return run_row(row, [&](const ref::Inputs& in, const ref::Outputs& o) {
    mutants::run_emulator(m, row.constants, row.operands(), in, o);
  });
}

template <class T>
bool same_bits(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, float>) return bits(a) == bits(b);
  else return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
}

// The first stage (contract section 5) whose bits differ; "" when none does.
std::string first_difference(const Results& a, const Results& b) {
  if (!same_bits(a.branch, b.branch)) return "branch";
  if (!same_bits(a.s1, b.s1)) return "post_row_sum";
  if (!same_bits(a.r1, b.r1)) return "r1";
  if (!same_bits(a.y_b, b.y_b)) return "y_b";
  if (!same_bits(a.new_stream, b.new_stream)) return "new_stream";
  if (!same_bits(a.z, b.z)) return "z";
  if (!same_bits(a.s2, b.s2)) return "pre_row_sum";
  if (!same_bits(a.r2, b.r2)) return "r2";
  if (!same_bits(a.out, b.out)) return "out";
  return "";
}

// Thread t's first element (column(t, 0, 0)) squared is the thread's whole sum when the rest of
// the branch is zero. 1 + 2^-24 + 2^-24 is 1 added one at a time, 1 + 2^-23 with the two tiny
// terms added first: the order of the additions shows in S1.
Row row_sum_order_row(int second, int third) {
  Row row;
  std::fill(row.branch.begin(), row.branch.end(), std::uint16_t{0});
  row.branch[ref::column(0, 0, 0)] = kOneBf16;
  row.branch[ref::column(second, 0, 0)] = make_bf16(0, 127 - 12, 0);  // 2^-12, squared 2^-24
  row.branch[ref::column(third, 0, 0)] = make_bf16(0, 127 - 12, 0);
  return row;
}

struct Trigger {
  Row row;
  std::string first_stage;  // where the mutant's bits first differ from production
  std::function<void(const Results& production, const Results& mutant)> exact = {};  // hand-worked bits
};

std::map<Mutant, Trigger> triggers() {
  std::map<Mutant, Trigger> t;

  // Lanes 16 and 17 of warp 0: production pairs lane 16 with lane 0 first (d = 16), the mutant
  // pairs 16 with 17 (d = 1).
  t[Mutant::warp_order] = {row_sum_order_row(16, 17), "post_row_sum", [](const Results& p, const Results& m) {
                             CHECK(bits(p.s1) == 0x3F800000u);
                             CHECK(bits(m.s1) == 0x3F800001u);
                           }};
  // Warps 1 and 2: production adds warp 1 to warp 0 first, the mutant adds 2 and 1 first.
  t[Mutant::cross_warp_order] = {row_sum_order_row(32, 64), "post_row_sum", [](const Results& p, const Results& m) {
                                   CHECK(bits(p.s1) == 0x3F800000u);
                                   CHECK(bits(m.s1) == 0x3F800001u);
                                 }};

  // alpha * s = (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24, a tie that rounds down to even; beta * y_b =
  // 2^-30 breaks the tie upwards only inside an fma.
  {
    Row row;
    row.alpha[0] = row.stream[0] = make_f32(0, 127, 1u << 11);
    row.beta[0] = make_f32(0, 127 - 30, 0);
    t[Mutant::connection_fma] = {row, "new_stream", [](const Results& p, const Results& m) {
                                   CHECK(bits(p.new_stream[0]) == 0x3F801000u);
                                   CHECK(bits(m.new_stream[0]) == 0x3F801001u);
                                 }};
  }
  // FP32 post weight after the norm, centre 0: y[0] = 1 + 2^-20, y_b[0] = 1. The y_b written out
  // stays rounded; only the connection reads y.
  {
    Row row;
    row.constants.post = {.eps = 0.0, .gain_center = 0.0, .weight_dtype = WeightDtype::fp32};
    std::fill(row.post_w32.begin(), row.post_w32.end(), 1.0f);
    row.post_w32[0] = make_f32(0, 127, 1u << 3);
    t[Mutant::y_b_unrounded] = {row, "new_stream", [](const Results& p, const Results& m) {
                                  CHECK(bits(p.new_stream[0]) == 0x3F800000u);
                                  CHECK(bits(m.new_stream[0]) == 0x3F800008u);
                                }};
  }
  // res[0] = 1 + 2^-9, z[0] = 1: S2 is 8192, or 8192 + 2^-8 when the pre norm squares res.
  {
    Row row;
    row.beta[0] = make_f32(0, 127, 1u << 14);
    t[Mutant::z_unrounded] = {row, "pre_row_sum", [](const Results& p, const Results& m) {
                                CHECK(bits(p.s2) == 0x46000000u);
                                CHECK(bits(m.s2) == 0x46000004u);
                                CHECK(same_bits(p.z, m.z));  // z itself is still written rounded
                              }};
  }
  // Branch all 1 + 2^-7: S1 / 8192 = (1 + 2^-7)^2 exactly, where the captured MUFU.RSQ value is
  // one ulp below the correctly rounded 1 / (1 + 2^-7).
  {
    Row row;
    std::fill(row.branch.begin(), row.branch.end(), make_bf16(0, 127, 1));
    t[Mutant::rsqrt_recip_sqrt] = {row, "r1", [](const Results& p, const Results& m) {
                                     CHECK(bits(p.r1) == 0x3F7E03F7u);
                                     CHECK(bits(m.r1) == 0x3F7E03F8u);
                                   }};
  }
  // alpha * s = 2^-70 * 2^-70 = 2^-140, subnormal; beta 0.
  {
    Row row;
    row.alpha[0] = row.stream[0] = make_f32(0, 127 - 70, 0);
    row.beta[0] = 0.0f;
    t[Mutant::ftz_products] = {row, "new_stream", [](const Results& p, const Results& m) {
                                 CHECK(bits(p.new_stream[0]) == 0x00000200u);
                                 CHECK(bits(m.new_stream[0]) == 0x00000000u);
                               }};
  }
  // BF16 post weight as input scale, centre 1: w[0] = 2^-8 - 2^-16, 1 + w[0] rounds to BF16 1.
  {
    Row row;
    row.constants.post = {.eps = 0.0, .gain_center = 1.0, .input_scale = true};
    row.post_w16[0] = make_bf16(0, 127 - 9, 0x7F);
    t[Mutant::gain_unrounded] = {row, "post_row_sum", [](const Results& p, const Results&) {
                                   CHECK(bits(p.s1) == 0x46000000u);
                                 }};
  }
  // Thread 0's fragments 1 and 2 hold 2^-12 (squared 2^-24), fragment 0 holds 1: production adds
  // 1 + 2^-24 + 2^-24 (1, twice a tie to even), the mutant adds fragments 3 .. 0, the two tiny
  // ones first (1 + 2^-23).
  {
    Row row;
    std::fill(row.branch.begin(), row.branch.end(), std::uint16_t{0});
    row.branch[ref::column(0, 0, 0)] = kOneBf16;
    row.branch[ref::column(0, 1, 0)] = row.branch[ref::column(0, 2, 0)] = make_bf16(0, 127 - 12, 0);
    t[Mutant::fragment_order] = {row, "post_row_sum", [](const Results& p, const Results& m) {
                                   CHECK(bits(p.s1) == 0x3F800000u);
                                   CHECK(bits(m.s1) == 0x3F800001u);
                                 }};
  }
  // Three partials of the unit row but for column 0: 1, 2^30, -2^30. In rank order 1 + 2^30 rounds
  // to 2^30 and the branch is 0 there; last rank first -2^30 + 2^30 = 0, then + 1: the branch is 1.
  {
    Row row;
    row.partials = {row.branch, std::vector<std::uint16_t>(kH, 0), std::vector<std::uint16_t>(kH, 0)};
    row.partials[1][0] = make_bf16(0, 127 + 30, 0);
    row.partials[2][0] = make_bf16(1, 127 + 30, 0);
    t[Mutant::rank_order] = {row, "branch", [](const Results& p, const Results& m) {
                               CHECK(p.branch[0] == 0x0000u);
                               CHECK(m.branch[0] == kOneBf16);
                               CHECK(bits(p.s1) == 0x45FFF800u);  // 8191
                               CHECK(bits(m.s1) == 0x46000000u);  // 8192
                             }};
  }

  // The unit row: r1 = 1.
  t[Mutant::r1_ulp_off] = {Row{}, "r1", [](const Results& p, const Results& m) {
                             CHECK(bits(p.r1) == 0x3F800000u);
                             CHECK(bits(m.r1) == 0x3F800001u);
                           }};
  return t;
}

}  // namespace

TEST_CASE("the unit row: every stage is 1 or 8192") {
  const Results r = run(Mutant::none, Row{});
  CHECK(bits(r.s1) == 0x46000000u);
  CHECK(bits(r.r1) == 0x3F800000u);
  CHECK(bits(r.s2) == 0x46000000u);
  CHECK(bits(r.r2) == 0x3F800000u);
  for (const auto& v : {r.y_b, r.z, r.out}) CHECK(v == std::vector<std::uint16_t>(kH, kOneBf16));
  CHECK(r.new_stream == std::vector<float>(kH, 1.0f));
}

TEST_CASE("Mutant::none is the production emulator, bit for bit") {
  std::mt19937 gen(5);
  std::uniform_int_distribution<std::uint32_t> any;
  const auto f32 = [&] { return from_bits(any(gen)); };  // every class: NaN, Inf, subnormal, zero
  for (WeightDtype dtype : {WeightDtype::bf16, WeightDtype::fp16, WeightDtype::fp32}) {
    CAPTURE(static_cast<int>(dtype));
    Row row;
    row.constants = {.post = {.eps = 1e-8, .gain_center = 1.0, .weight_dtype = dtype, .input_scale = true},
                     .pre = {.eps = 1e-5, .fma_squares = true}};
    for (auto& h : row.branch) h = static_cast<std::uint16_t>(any(gen));
    for (auto& h : row.post_w16) h = static_cast<std::uint16_t>(any(gen));
    for (auto* v : {&row.stream, &row.alpha, &row.beta, &row.post_w32})
      for (float& x : *v) x = f32();
    const Results production = run_row(row, [&](const ref::Inputs& in, const ref::Outputs& o) {
      ref::Boundary(row.constants, row.operands()).run(in, o);
    });
    CHECK(first_difference(production, run(Mutant::none, row)) == "");
  }
}

TEST_CASE("each emulator twin changes its row, first where its bug sits") {
  const std::map<Mutant, Trigger> all = triggers();
  for (Mutant m : mutants::kEmulatorTwins) {
    CAPTURE(mutant_name(m));
    REQUIRE(all.count(m) == 1);  // a new twin needs its row here
    const Trigger& t = all.at(m);
    const Results production = run(Mutant::none, t.row);
    const Results mutant = run(m, t.row);
    CHECK(first_difference(production, mutant) == t.first_stage);
    t.exact(production, mutant);
  }
}

// rank_order is not applicable below 3 ranks (verify's suite::not_applicable): with 1 partial
// there is no sum, with 2 add_rn(a, b) == add_rn(b, a) bit for bit. Random bits of every class.
TEST_CASE("rank_order_needs_three_ranks: with 1 or 2 partials its twin is the production emulator") {
  std::mt19937 gen(13);
  std::uniform_int_distribution<std::uint32_t> any;
  for (std::size_t ranks : {1u, 2u}) {
    CAPTURE(ranks);
    Row row;
    row.partials.assign(ranks, std::vector<std::uint16_t>(kH));
    for (auto& p : row.partials)
      for (auto& h : p) h = static_cast<std::uint16_t>(any(gen));
    CHECK(first_difference(run(Mutant::none, row), run(Mutant::rank_order, row)) == "");
  }
}

TEST_CASE("a mutant of the GPU launch path has no emulator twin and is refused") {
  for (Mutant m : kAllMutants) {
    CAPTURE(mutant_name(m));
    if (has_emulator_twin(m)) continue;
    CHECK_THROWS_AS(run(m, Row{}), std::invalid_argument);
  }
}

TEST_CASE("a twin checks its inputs like the production emulator") {
  Row row;
  row.constants.pre.gain_center = 1.0;  // a weight the operands do not give
  CHECK_THROWS_AS(run(Mutant::warp_order, row), InputError);
}
