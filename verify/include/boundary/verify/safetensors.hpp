// safetensors read/write: the file format PyTorch users open directly.
//
// Layout: an 8-byte little-endian header length N, N bytes of UTF-8 JSON, then the data buffer.
// The reader is strict (it accepts what the reference Rust implementation accepts, restricted to
// the three dtypes this project uses) and reports every bad input as boundary::InputError naming
// the file, the tensor or field, and what was expected versus found.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "boundary/types.hpp"

namespace boundary::safetensors {

// Tensor bytes are kept in file order (little-endian) and viewed in place through data<T>().
static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian and is viewed in place");

enum class Dtype : std::uint8_t { BF16, F16, F32 };

std::string_view dtype_name(Dtype);  // "BF16", "F16", "F32": the format's spelling
std::size_t dtype_size(Dtype);       // 2, 2, 4

struct Tensor {
  Dtype dtype = Dtype::F32;
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> bytes;  // little-endian, row-major, exactly numel * dtype_size

  // Throws std::logic_error on a negative dimension or a count beyond int64.
  std::int64_t numel() const;

  // T = std::uint16_t for BF16/F16, float (or std::uint32_t for the bits) for F32. Throws
  // std::logic_error if sizeof(T) is not the dtype's size or bytes do not hold numel elements,
  // so that indexing [0, numel) through the pointer is always in bounds.
  template <class T>
  const T* data() const {
    static_assert(std::is_trivially_copyable_v<T>);
    check_view(sizeof(T));
    // The vector's storage comes from operator new, hence is aligned for any scalar type.
    return reinterpret_cast<const T*>(bytes.data());
  }
  template <class T>
  T* data() {
    static_assert(std::is_trivially_copyable_v<T>);
    check_view(sizeof(T));
    return reinterpret_cast<T*>(bytes.data());
  }

 private:
  void check_view(std::size_t element_size) const;
};

// Zero-filled. Throws std::invalid_argument on a negative dimension or an oversized shape.
Tensor make_tensor(Dtype, std::vector<std::int64_t> shape);

struct File {
  std::map<std::string, std::string> metadata;  // "__metadata__": string -> string, as the format requires
  std::map<std::string, Tensor> tensors;
};

// source: the name used in error messages (usually the path).
File parse(std::span<const std::uint8_t> bytes, const std::string& source);
File read_file(const std::filesystem::path&);

// Throws std::invalid_argument for a File that no valid file can represent (bytes that do not
// match the shape, a tensor named "__metadata__", names that are not UTF-8).
std::vector<std::uint8_t> serialize(const File&);

// Writes a temporary file in the same directory, then renames it over the target: readers see
// the old file or the new one, never a partial one; on failure the temporary is removed.
void write_file(const std::filesystem::path&, const File&);

// Look up a tensor and check it: the error names the source, the tensor, and the expectation.
const Tensor& require(const File&, const std::string& source, const std::string& name,
                      std::initializer_list<Dtype> allowed, const std::vector<std::int64_t>& shape);

// "[4, 8192]"; "[]" for a scalar.
std::string shape_string(const std::vector<std::int64_t>&);

}  // namespace boundary::safetensors
