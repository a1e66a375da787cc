#include <boundary/verify/edge_rows.hpp>
#include <boundary/primitives.hpp>

#include <bit>
#include <cstring>
#include <iterator>
#include <limits>
#include <vector>

namespace boundary {

namespace {

const EdgePattern kPatterns[] = {
    {"realistic", [](const RowEdit&) {}},
    {"branch: one negative NaN with a payload", [](const RowEdit& r) { r.branch[4000] = bf16_bits(1, 0xFF, 0x01); }},
    {"branch: +Inf in the first column", [](const RowEdit& r) { r.branch[0] = bf16_bits(0, 0xFF, 0); }},
    {"branch: -Inf in the last column", [](const RowEdit& r) { r.branch[kH - 1] = bf16_bits(1, 0xFF, 0); }},
    {"stream: one signalling NaN with a payload", [](const RowEdit& r) { r.set_stream_bits(123, f32_bits(0, 0xFF, 1), bf16_bits(0, 0xFF, 1)); }},
    {"stream: +Inf and -Inf",
     [](const RowEdit& r) {
       r.set_stream(5, std::numeric_limits<float>::infinity());
       r.set_stream(6, -std::numeric_limits<float>::infinity());
     }},
    {"-0.0 in every other branch column and every third stream column",
     [](const RowEdit& r) {
       for (int c = 0; c < kH; c += 2) r.branch[c] = bf16_bits(1, 0, 0);
       for (int c = 0; c < kH; c += 3) r.set_stream(c, -0.0f);
     }},
    {"branch and stream all -0.0",
     [](const RowEdit& r) {
       for (int c = 0; c < kH; ++c) {
         r.branch[c] = bf16_bits(1, 0, 0);
         r.set_stream(c, -0.0f);
       }
     }},
    {"branch and stream all +0.0",
     [](const RowEdit& r) {
       for (int c = 0; c < kH; ++c) {
         r.branch[c] = 0;
         r.set_stream(c, 0.0f);
       }
     }},
    {"branch all BF16 subnormals",
     [](const RowEdit& r) {
       for (int c = 0; c < kH; ++c) r.branch[c] = bf16_bits(r.sign(), 0, 1 + r.below(127));
     }},
    {"subnormals sprinkled in the branch and the stream",
     [](const RowEdit& r) {
       for (int c = 3; c < kH; c += 7) r.branch[c] = bf16_bits(r.sign(), 0, 1 + r.below(127));
       for (int c = 1; c < kH; c += 5) r.set_stream(c, f32_value(r.sign(), 0, 1 + r.below((1u << 23) - 1)));
     }},
    {"stream all FP32 subnormals, branch zero",
     [](const RowEdit& r) {
       for (int c = 0; c < kH; ++c) {
         r.branch[c] = 0;
         r.set_stream(c, f32_value(r.sign(), 0, 1 + r.below((1u << 23) - 1)));
       }
     }},
    {"branch +-2^63: each square finite, the sum of squares overflows",
     [](const RowEdit& r) {
       for (int c = 0; c < kH; ++c) r.branch[c] = bf16_bits(r.sign(), 127 + 63, 0);
     }},
    {"branch +-2^70 in every 512th column: those squares overflow",
     [](const RowEdit& r) {
       for (int c = 11; c < kH; c += 512) r.branch[c] = bf16_bits(r.sign(), 127 + 70, 0);
     }},
    {"branch all at the BF16 maximum",
     [](const RowEdit& r) {
       for (int c = 0; c < kH; ++c) r.branch[c] = bf16_bits(r.sign(), 0xFE, 0x7F);
     }},
    {"stream all at the FP32 maximum (Inf once rounded to BF16)",
     [](const RowEdit& r) {
       for (int c = 0; c < kH; ++c) r.set_stream(c, f32_value(r.sign(), 0xFE, (1u << 23) - 1));
     }},
    {"stream +-2^63: the pre norm's sum of squares overflows",
     [](const RowEdit& r) {
       for (int c = 0; c < kH; ++c) r.set_stream(c, f32_value(r.sign(), 127 + 63, 0));
     }},
    {"wide dynamic range: random exponents, subnormal to 2^53",
     [](const RowEdit& r) {
       for (int c = 0; c < kH; ++c) {
         r.branch[c] = bf16_bits(r.sign(), r.below(181), r.below(128));
         r.set_stream(c, f32_value(r.sign(), r.below(171), r.below(1u << 23)));
       }
     }},
    {"around 2^-70: every square an FP32 subnormal (fma and mul+add differ)",
     [](const RowEdit& r) {
       for (int c = 0; c < kH; ++c) {
         r.branch[c] = bf16_bits(r.sign(), 127 - 70, r.below(128));
         r.set_stream(c, f32_value(r.sign(), 127 - 70, r.below(1u << 23)));
       }
     }},
    {"branch first half zero",
     [](const RowEdit& r) {
       for (int c = 0; c < kH / 2; ++c) r.branch[c] = 0;
     }},
    {"branch +Inf and a negative quiet NaN in the stream",
     [](const RowEdit& r) {
       r.branch[10] = bf16_bits(0, 0xFF, 0);
       r.set_stream_bits(20, f32_bits(1, 0xFF, 1u << 22), bf16_bits(1, 0xFF, 0x40));
     }},
    {"FPRev: ones with one 2^12 (its square swallows each 1 added to it alone)",
     [](const RowEdit& r) {
       for (int c = 0; c < kH; ++c) r.branch[c] = bf16_bits(0, 127, 0);
       r.branch[r.below(kH)] = bf16_bits(0, 127 + 12, 0);
     }},
    {"FPRev: 2^12 at p, 1 at q and r, zeros elsewhere (S tells whether q and r meet first)",
     [](const RowEdit& r) {
       for (int c = 0; c < kH; ++c) r.branch[c] = 0;
       r.branch[r.below(kH)] = bf16_bits(0, 127 + 12, 0);
       r.branch[r.below(kH)] = bf16_bits(0, 127, 0);
       r.branch[r.below(kH)] = bf16_bits(0, 127, 0);
     }},
};

}  // namespace

std::span<const EdgePattern> edge_patterns() { return kPatterns; }

void RowEdit::set_stream(int c, float v) const {
  s32[c] = v;
  s16[c] = ref::f32_to_bf16_rn(v);
}

// NaN payloads: bits copied, never through a float operation that could quiet them.
void RowEdit::set_stream_bits(int c, std::uint32_t f32_pattern, std::uint16_t bf16_pattern) const {
  std::memcpy(&s32[c], &f32_pattern, sizeof f32_pattern);
  s16[c] = bf16_pattern;
}

float f32_value(std::uint32_t sign, std::uint32_t exp, std::uint32_t frac) {
  return std::bit_cast<float>(f32_bits(sign, exp, frac));
}

EditableRows::EditableRows(const Constants& constants, std::int64_t rows, std::uint64_t seed)
    : seed_(seed), file_(generate_inputs(constants, rows, seed, StreamDtype::f32)) {
  branch_ = file_.tensors.at("branch").data<std::uint16_t>();
  s32_ = file_.tensors.at("stream").data<float>();
  s16_.resize(static_cast<std::size_t>(rows) * kH);
  for (std::size_t i = 0; i < s16_.size(); ++i) s16_[i] = ref::f32_to_bf16_rn(s32_[i]);
}

safetensors::File EditableRows::finish(StreamDtype stream_dtype) && {
  if (stream_dtype == StreamDtype::bf16) {
    const std::int64_t rows = static_cast<std::int64_t>(s16_.size() / kH);
    safetensors::Tensor t = safetensors::make_tensor(safetensors::Dtype::BF16, {rows, kH});
    std::memcpy(t.data<std::uint16_t>(), s16_.data(), s16_.size() * 2);
    file_.tensors["stream"] = std::move(t);
  }
  return std::move(file_);
}

safetensors::File generate_edge_inputs(const Constants& constants, std::uint64_t seed, StreamDtype stream_dtype) {
  const auto rows = static_cast<std::int64_t>(std::size(kPatterns));
  EditableRows editable(constants, rows, seed);
  for (std::int64_t row = 0; row < rows; ++row) editable.edit(row, kPatterns[row].edit);
  safetensors::File f = std::move(editable).finish(stream_dtype);
  f.metadata["generator"] = "edge rows: row i holds edge_patterns()[i] over a realistic row";
  return f;
}

}  // namespace boundary
