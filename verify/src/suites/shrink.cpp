#include <boundary/verify/shrink.hpp>

#include <boundary/verify/boundary_tensors.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <tuple>

namespace boundary::shrink {

namespace {

namespace st = safetensors;

// One input tensor of the case seen as kH bit patterns of a binary floating-point format.
struct Field {
  std::uint8_t* bytes;
  int size;       // bytes per element: 2 or 4
  int exp_bits;
  int frac_bits;
  std::uint32_t trivial;

  std::uint32_t get(int c) const {
    std::uint32_t v = 0;
    std::memcpy(&v, bytes + static_cast<std::size_t>(c) * size, static_cast<std::size_t>(size));
    return v;
  }
  void set(int c, std::uint32_t v) const { std::memcpy(bytes + static_cast<std::size_t>(c) * size, &v, static_cast<std::size_t>(size)); }
};

constexpr std::uint32_t kOne = 0x3F800000u;

Field weight_field(std::vector<std::uint8_t>& w, WeightDtype dtype) {
  auto* p = w.data();
  switch (dtype) {
    case WeightDtype::bf16: return {p, 2, 8, 7, 0};
    case WeightDtype::fp16: return {p, 2, 5, 10, 0};
    case WeightDtype::fp32: break;
  }
  return {p, 4, 8, 23, 0};
}

// The case's fields in a fixed order: branch, stream, alpha, beta, then the weights it has.
std::vector<Field> fields(Case& k) {
  auto bytes = [](auto& v) { return reinterpret_cast<std::uint8_t*>(v.data()); };
  std::vector<Field> f = {{bytes(k.branch), 2, 8, 7, 0}};
  if (k.stream_dtype == StreamDtype::f32) f.push_back({bytes(k.stream_f32), 4, 8, 23, 0});
  else f.push_back({bytes(k.stream_bf16), 2, 8, 7, 0});
  f.push_back({bytes(k.alpha), 4, 8, 23, kOne});
  f.push_back({bytes(k.beta), 4, 8, 23, 0});
  if (!k.post_weight.empty()) f.push_back(weight_field(k.post_weight, k.constants.post.weight_dtype));
  if (!k.pre_weight.empty()) f.push_back(weight_field(k.pre_weight, k.constants.pre.weight_dtype));
  return f;
}

// One element, or with field kWholeColumn every element of a column.
struct Element {
  std::size_t field;
  int column;
};
constexpr std::size_t kWholeColumn = ~std::size_t{0};

std::vector<Element> nontrivial(Case& k) {
  std::vector<Element> list;
  const std::vector<Field> f = fields(k);
  for (std::size_t i = 0; i < f.size(); ++i)
    for (int c = 0; c < kH; ++c)
      if (f[i].get(c) != f[i].trivial) list.push_back({i, c});
  return list;
}

std::vector<Element> nontrivial_columns(Case& k) {
  std::vector<bool> any(kH);
  for (const Element& e : nontrivial(k)) any[e.column] = true;
  std::vector<Element> list;
  for (int c = 0; c < kH; ++c)
    if (any[c]) list.push_back({kWholeColumn, c});
  return list;
}

void make_trivial(const std::vector<Field>& f, const Element& e) {
  for (std::size_t i = 0; i < f.size(); ++i)
    if (e.field == kWholeColumn || e.field == i) f[i].set(e.column, f[i].trivial);
}

// How complicated a value reads: non-trivial first, then significand bits in use, then distance
// of the exponent from that of 1, then a minus sign. A simplification must lower it.
using Complexity = std::tuple<int, int, int, int>;

Complexity complexity(const Field& f, std::uint32_t bits) {
  if (bits == f.trivial) return {0, 0, 0, 0};
  const std::uint32_t frac = bits & ((1u << f.frac_bits) - 1u);
  const int exp = static_cast<int>((bits >> f.frac_bits) & ((1u << f.exp_bits) - 1u));
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const int frac_used = frac == 0 ? 0 : f.frac_bits - std::countr_zero(frac);
  return {1, frac_used, std::abs(exp - bias), static_cast<int>(bits >> (8 * f.size - 1))};
}

// Simpler values than `bits`, the simplest first: trivial; fewer significand bits; the exponent
// of 1, then halfway there, then one step; the sign dropped.
std::vector<std::uint32_t> simpler_values(const Field& f, std::uint32_t bits) {
  const int sign_shift = 8 * f.size - 1;
  const std::uint32_t sign = bits >> sign_shift;
  const std::uint32_t frac_mask = (1u << f.frac_bits) - 1u;
  const int exp = static_cast<int>((bits >> f.frac_bits) & ((1u << f.exp_bits) - 1u));
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const auto make = [&](std::uint32_t s, int e, std::uint32_t frac) {
    return (s << sign_shift) | (static_cast<std::uint32_t>(e) << f.frac_bits) | frac;
  };
  std::vector<std::uint32_t> out = {f.trivial};
  for (int keep = 0; keep < f.frac_bits; ++keep)
    out.push_back(make(sign, exp, bits & frac_mask & ~((1u << (f.frac_bits - keep)) - 1u)));
  for (const int e : {bias, (exp + bias) / 2, exp + (bias > exp ? 1 : -1)}) out.push_back(make(sign, e, bits & frac_mask));
  out.push_back(bits & ~(1u << sign_shift));
  const Complexity now = complexity(f, bits);
  std::erase_if(out, [&](std::uint32_t v) { return !(complexity(f, v) < now); });
  return out;
}

class Shrinker {
 public:
  Shrinker(const Case& failing, const StillFails& still_fails, int max_calls)
      : current_(failing), still_fails_(still_fails), max_calls_(max_calls) {}

  Result run() {
    Result r;
    r.nontrivial_before = nontrivial_elements(current_);
    while (calls_ < max_calls_) {
      const int before = steps_;
      // Whole columns first: a column's elements often matter together (z = bf16(alpha * s)).
      remove(nontrivial_columns);
      remove(nontrivial);
      simplify_values();
      if (steps_ == before) break;
    }
    r.minimal = current_;
    r.steps = steps_;
    r.predicate_calls = calls_;
    r.nontrivial_after = nontrivial_elements(current_);
    return r;
  }

 private:
  // Keeps the candidate when it still fails; false once the budget is spent.
  bool try_case(Case&& candidate) {
    if (calls_ >= max_calls_) return false;
    ++calls_;
    if (!still_fails_(candidate)) return false;
    current_ = std::move(candidate);
    ++steps_;
    return true;
  }

  // Delta debugging: chunks of the non-trivial elements set to their trivial values, the chunk
  // halved when no chunk of its size can go.
  void remove(std::vector<Element> (*units)(Case&)) {
    std::size_t chunk = units(current_).size();
    while (chunk >= 1 && calls_ < max_calls_) {
      const std::vector<Element> list = units(current_);
      chunk = std::min(chunk, list.size());
      if (chunk == 0) return;
      bool removed = false;
      for (std::size_t start = 0; start < list.size(); start += chunk) {
        // A spent budget rejects every candidate unseen: stop building them (each a copy of the case).
        if (calls_ >= max_calls_) return;
        Case candidate = current_;
        const std::vector<Field> f = fields(candidate);
        for (std::size_t i = start; i < std::min(start + chunk, list.size()); ++i) make_trivial(f, list[i]);
        removed = try_case(std::move(candidate)) || removed;
      }
      if (!removed) {
        if (chunk == 1) return;
        chunk = (chunk + 1) / 2;
      }
    }
  }

  void simplify_values() {
    for (const Element& e : nontrivial(current_)) {
      if (calls_ >= max_calls_) return;  // as in remove()
      for (bool simplified = true; simplified;) {
        simplified = false;
        const Field f = fields(current_)[e.field];
        for (const std::uint32_t v : simpler_values(f, f.get(e.column))) {
          Case candidate = current_;
          fields(candidate)[e.field].set(e.column, v);
          if (try_case(std::move(candidate))) {
            simplified = true;
            break;
          }
        }
      }
    }
  }

  Case current_;
  const StillFails& still_fails_;
  int max_calls_;
  int calls_ = 0;
  int steps_ = 0;
};

template <class T>
std::vector<T> row_of(const T* data, std::int64_t row) {
  const T* at = data + static_cast<std::size_t>(row) * kH;
  return std::vector<T>(at, at + kH);
}

std::vector<std::uint8_t> weight_bytes(const NormConstants& norm, const void* w) {
  if (!norm.has_weight()) return {};
  const auto* p = static_cast<const std::uint8_t*>(w);
  return std::vector<std::uint8_t>(p, p + kH * st::dtype_size(weight_tensor_dtype(norm.weight_dtype)));
}

}  // namespace

std::int64_t nontrivial_elements(const Case& k) {
  Case copy = k;
  return static_cast<std::int64_t>(nontrivial(copy).size());
}

Result shrink(const Case& failing, const StillFails& still_fails, int max_predicate_calls) {
  return Shrinker(failing, still_fails, max_predicate_calls).run();
}

Case case_from_inputs(const Constants& constants, const st::File& file, std::int64_t row) {
  const BoundTensors bound = bind_inputs(file, constants, "shrink input");
  if (row < 0 || row >= bound.m)
    throw InputError("shrink input: row " + std::to_string(row) + " out of range, the file holds " + std::to_string(bound.m));
  if (bound.inputs.branch == nullptr) throw InputError("shrink input: rank partials; shrinking takes a branch tensor");
  Case k;
  k.constants = constants;
  k.branch = row_of(bound.inputs.branch, row);
  k.stream_dtype = bound.inputs.stream_dtype;
  if (k.stream_dtype == StreamDtype::f32) k.stream_f32 = row_of(static_cast<const float*>(bound.inputs.stream), row);
  else k.stream_bf16 = row_of(static_cast<const std::uint16_t*>(bound.inputs.stream), row);
  k.alpha = row_of(bound.operands.alpha, 0);
  k.beta = row_of(bound.operands.beta, 0);
  k.post_weight = weight_bytes(constants.post, bound.operands.post_weight);
  k.pre_weight = weight_bytes(constants.pre, bound.operands.pre_weight);
  return k;
}

st::File to_inputs(const Case& k) {
  const auto check = [](bool ok, const char* what) {
    if (!ok) throw InputError(std::string("shrink case: '") + what + "' does not hold one row of 8192 elements");
  };
  check(k.branch.size() == kH, "branch");
  check(k.stream_dtype == StreamDtype::f32 ? k.stream_f32.size() == kH : k.stream_bf16.size() == kH, "stream");
  check(k.alpha.size() == kH && k.beta.size() == kH, "alpha/beta");
  check(weight_bytes(k.constants.post, k.post_weight.data()).size() == k.post_weight.size(), "post_weight");
  check(weight_bytes(k.constants.pre, k.pre_weight.data()).size() == k.pre_weight.size(), "pre_weight");
  st::File f;
  const auto put = [&](const std::string& name, st::Dtype dtype, std::vector<std::int64_t> shape, const void* data) {
    st::Tensor t = st::make_tensor(dtype, std::move(shape));
    std::memcpy(t.bytes.data(), data, t.bytes.size());
    f.tensors[name] = std::move(t);
  };
  put("branch", st::Dtype::BF16, {1, kH}, k.branch.data());
  if (k.stream_dtype == StreamDtype::f32) put("stream", st::Dtype::F32, {1, kH}, k.stream_f32.data());
  else put("stream", st::Dtype::BF16, {1, kH}, k.stream_bf16.data());
  put("alpha", st::Dtype::F32, {kH}, k.alpha.data());
  put("beta", st::Dtype::F32, {kH}, k.beta.data());
  if (!k.post_weight.empty()) put("post_weight", weight_tensor_dtype(k.constants.post.weight_dtype), {kH}, k.post_weight.data());
  if (!k.pre_weight.empty()) put("pre_weight", weight_tensor_dtype(k.constants.pre.weight_dtype), {kH}, k.pre_weight.data());
  f.metadata["generator"] = "shrunk reproducer of a failing row";
  return f;
}

ref::Operands operands(const Case& k) {
  ref::Operands o;
  o.alpha = k.alpha.data();
  o.beta = k.beta.data();
  o.post_weight = k.post_weight.empty() ? nullptr : k.post_weight.data();
  o.pre_weight = k.pre_weight.empty() ? nullptr : k.pre_weight.data();
  return o;
}

ref::Inputs inputs(const Case& k) {
  ref::Inputs in;
  in.m = 1;
  in.branch = k.branch.data();
  in.stream_dtype = k.stream_dtype;
  in.stream = k.stream_dtype == StreamDtype::f32 ? static_cast<const void*>(k.stream_f32.data()) : k.stream_bf16.data();
  return in;
}

}  // namespace boundary::shrink
