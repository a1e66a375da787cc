// Shrinking a failing row, with the emulator's mutants as the buggy implementations.
#include <boundary/verify/boundary_tensors.hpp>
#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/edge_suite.hpp>
#include <boundary/verify/generate.hpp>
#include <boundary/mutant_emulators.hpp>
#include <boundary/verify/shrink.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>

using namespace boundary;
namespace st = boundary::safetensors;

namespace {
Constants stock(const char* name) {
  return read_constants(std::string(BOUNDARY_SOURCE_DIR "/fixtures/constants/muse-spark-") + name + ".json");
}

// out and new_stream, bit patterns side by side.
std::vector<std::uint16_t> out_of(Mutant m, const shrink::Case& k) {
  std::vector<std::uint16_t> out(3 * kH);
  ref::Outputs o;
  o.out = out.data();
  o.new_stream = reinterpret_cast<float*>(out.data() + kH);
  mutants::run_emulator(m, k.constants, shrink::operands(k), shrink::inputs(k), o);
  return out;
}

// The failure to keep: the mutant's out or new_stream differs from the production emulator's somewhere.
shrink::StillFails differs(Mutant m) {
  return [m](const shrink::Case& k) { return out_of(m, k) != out_of(Mutant::none, k); };
}

shrink::Case realistic_case(const Constants& c, StreamDtype dtype, std::uint64_t seed) {
  return shrink::case_from_inputs(c, generate_inputs(c, 2, seed, dtype), 1);
}

bool same(const shrink::Case& a, const shrink::Case& b) {
  return st::serialize(shrink::to_inputs(a)) == st::serialize(shrink::to_inputs(b));
}

// k with one non-trivial element made trivial, for each such element (the trivial values of the
// "trivial elements" test below, compared as bit patterns).
std::vector<shrink::Case> each_element_trivial(const shrink::Case& k) {
  std::vector<shrink::Case> out;
  const auto each = [&](auto member, auto trivial) {
    const auto& v = k.*member;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (std::memcmp(&v[i], &trivial, sizeof trivial) == 0) continue;
      shrink::Case c = k;
      (c.*member)[i] = trivial;
      out.push_back(std::move(c));
    }
  };
  each(&shrink::Case::branch, std::uint16_t{0});
  each(&shrink::Case::stream_f32, 0.0f);
  each(&shrink::Case::stream_bf16, std::uint16_t{0});
  each(&shrink::Case::alpha, 1.0f);
  each(&shrink::Case::beta, 0.0f);
  // Weights are bytes: an element is 2 of them (BF16, FP16) or 4 (FP32), made +0 together.
  const auto each_weight = [&](std::vector<std::uint8_t> shrink::Case::*member, const NormConstants& norm) {
    const std::vector<std::uint8_t>& w = k.*member;
    if (w.empty()) return;
    const std::size_t size = norm.weight_dtype == WeightDtype::fp32 ? 4 : 2;
    for (std::size_t at = 0; at < w.size(); at += size) {
      if (std::all_of(w.begin() + at, w.begin() + at + size, [](std::uint8_t b) { return b == 0; })) continue;
      shrink::Case c = k;
      std::fill((c.*member).begin() + at, (c.*member).begin() + at + size, 0);
      out.push_back(std::move(c));
    }
  };
  each_weight(&shrink::Case::post_weight, k.constants.post);
  each_weight(&shrink::Case::pre_weight, k.constants.pre);
  return out;
}
}  // namespace

TEST_CASE("connection_fma: a realistic row shrinks to a handful of simple elements, still failing, a fixed point") {
  for (const StreamDtype dtype : {StreamDtype::f32, StreamDtype::bf16}) {
    const shrink::Case failing = realistic_case(stock("post-ffn"), dtype, 3);
    const shrink::StillFails still_fails = differs(Mutant::connection_fma);
    REQUIRE(still_fails(failing));
    const shrink::Result r = shrink::shrink(failing, still_fails, 3000);
    MESSAGE("non-trivial elements " << r.nontrivial_before << " -> " << r.nontrivial_after << " in " << r.predicate_calls
                                    << " predicate calls, " << r.steps << " steps");
    CHECK(r.nontrivial_before > 30000);
    CHECK(r.nontrivial_after <= 8);
    CHECK(r.nontrivial_after == shrink::nontrivial_elements(r.minimal));
    CHECK(r.predicate_calls < 3000);
    CHECK(still_fails(r.minimal));
    // The budget was not spent, so the result is 1-minimal: no single element can go. (A
    // shrinker that stops early, with its budget left, leaves one that can.)
    const std::vector<shrink::Case> simpler = each_element_trivial(r.minimal);
    CHECK(simpler.size() == static_cast<std::size_t>(r.nontrivial_after));
    for (const shrink::Case& c : simpler) CHECK_FALSE(still_fails(c));
    const shrink::Result again = shrink::shrink(r.minimal, still_fails, 3000);
    CHECK(again.steps == 0);
    CHECK(same(again.minimal, r.minimal));
    CHECK(same(shrink::shrink(failing, still_fails, 3000).minimal, r.minimal));  // deterministic
  }
}

TEST_CASE("every emulator mutant: its first failing edge-suite row shrinks, still failing") {
  const Constants c = stock("post-attention");
  const suite::Suite s = suite::make_edge_suite(c, 1, 1, StreamDtype::f32);
  for (const Mutant m : mutants::kEmulatorTwins) {
    if (suite::not_applicable(m, c, 1)) continue;  // rank_order: the suite's branch is one rank
    const shrink::StillFails still_fails = differs(m);
    shrink::Case failing;
    for (std::size_t row = 0; row < s.row_family.size(); ++row) {
      failing = shrink::case_from_inputs(c, s.inputs, static_cast<std::int64_t>(row));
      if (still_fails(failing)) break;
    }
    REQUIRE_MESSAGE(still_fails(failing), mutant_name(m));
    // An order or norm-factor bug shows through the exact row sum, which every element moves:
    // such rows shrink slowly, so they get a small budget and only have to stay failing.
    const bool local = m != Mutant::warp_order && m != Mutant::cross_warp_order && m != Mutant::fragment_order &&
                       m != Mutant::rsqrt_recip_sqrt;
    const shrink::Result r = shrink::shrink(failing, still_fails, local ? 2000 : 300);
    MESSAGE(mutant_name(m) << ": " << r.nontrivial_before << " -> " << r.nontrivial_after << " in " << r.predicate_calls << " calls");
    CHECK(still_fails(r.minimal));
    CHECK(r.nontrivial_after <= r.nontrivial_before);
    if (local) CHECK(r.nontrivial_after <= 8);
  }
}

TEST_CASE("the predicate budget bounds the work") {
  const shrink::Result r = shrink::shrink(realistic_case(stock("post-ffn"), StreamDtype::f32, 3), differs(Mutant::connection_fma), 7);
  CHECK(r.predicate_calls == 7);
  CHECK(differs(Mutant::connection_fma)(r.minimal));
}

TEST_CASE("to_inputs writes the fixture's input tensors: bind_inputs reads them back to the same outputs") {
  const Constants c = stock("post-ffn");
  const shrink::Case k = realistic_case(c, StreamDtype::bf16, 8);
  const st::File f = st::parse(st::serialize(shrink::to_inputs(k)), "shrunk");
  const BoundTensors bound = bind_inputs(f, c, "shrunk");
  CHECK(bound.m == 1);
  std::vector<std::uint16_t> out(kH);
  ref::Outputs o;
  o.out = out.data();
  ref::Boundary(c, bound.operands).run(bound.inputs, o);
  const std::vector<std::uint16_t> expected = out_of(Mutant::none, k);
  CHECK(std::equal(out.begin(), out.end(), expected.begin()));
  CHECK(same(shrink::case_from_inputs(c, f, 0), k));
  CHECK_THROWS_AS(shrink::case_from_inputs(c, f, 1), InputError);
  shrink::Case broken = k;
  broken.alpha.pop_back();
  CHECK_THROWS_AS(shrink::to_inputs(broken), InputError);
}

TEST_CASE("trivial elements: branch and stream +0, alpha 1, beta 0, weights +0; -0 counts") {
  shrink::Case k = realistic_case(stock("post-attention"), StreamDtype::f32, 1);
  std::fill(k.branch.begin(), k.branch.end(), 0);
  std::fill(k.stream_f32.begin(), k.stream_f32.end(), 0.0f);
  std::fill(k.alpha.begin(), k.alpha.end(), 1.0f);
  std::fill(k.beta.begin(), k.beta.end(), 0.0f);
  std::fill(k.pre_weight.begin(), k.pre_weight.end(), 0);
  CHECK(shrink::nontrivial_elements(k) == 0);
  k.stream_f32[5] = -0.0f;
  k.pre_weight[3] = 1;
  CHECK(shrink::nontrivial_elements(k) == 2);
}
