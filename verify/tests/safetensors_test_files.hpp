// Hand-built safetensors bytes for the reader's tests (test_safetensors, test_safetensors_malformed):
// files written field by field, so that a test states exactly what the bytes hold.
#pragma once

#include "boundary/verify/safetensors.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace boundary::test {

namespace st = boundary::safetensors;
using Bytes = std::vector<std::uint8_t>;

// The source name every parse below reports.
inline const std::string kSource = "in.safetensors";

inline Bytes le64(std::uint64_t v) {
  Bytes b;
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  return b;
}

inline Bytes concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline Bytes text_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

// A file written by hand: the length field, the header text exactly as given, then the data.
inline Bytes raw_file(const std::string& header, const Bytes& data) {
  return concat(concat(le64(header.size()), text_bytes(header)), data);
}

// One header entry as the format spells it.
inline std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                         std::uint64_t begin, std::uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

inline st::File parse(const Bytes& b) { return st::parse(b, kSource); }

// A pattern that makes every byte position distinguishable, so a shifted copy cannot pass.
inline Bytes pattern(std::size_t n, std::uint8_t seed) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(seed + 37 * i + (i >> 3));
  return b;
}

inline st::Tensor tensor_with(st::Dtype dtype, std::vector<std::int64_t> shape, std::uint8_t seed) {
  st::Tensor t = st::make_tensor(dtype, std::move(shape));
  t.bytes = pattern(t.bytes.size(), seed);
  return t;
}

// Metadata, the three dtypes and a zero-element tensor.
inline st::File sample_file() {
  st::File f;
  f.metadata = {{"format", "pt"}, {"producer", "boundary"}};
  f.tensors.emplace("gamma", tensor_with(st::Dtype::BF16, {3}, 1));
  f.tensors.emplace("half", tensor_with(st::Dtype::F16, {2, 2}, 2));
  f.tensors.emplace("stream", tensor_with(st::Dtype::F32, {2, 3}, 3));
  f.tensors.emplace("empty", st::make_tensor(st::Dtype::F32, {0, 5}));
  return f;
}

}  // namespace boundary::test
