// Every file boundary-verify writes (safetensors, reports, JUnit, manifests) lands whole or not at
// all: written to a temporary beside the target, synced, then renamed over it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

namespace boundary::io {

// Replaces `path` with `bytes`. Throws InputError "<path>: ..." when path names a directory or
// the temporary cannot be created, written, synced or renamed; the temporary never stays behind.
void write_file_atomically(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);
void write_file_atomically(const std::filesystem::path& path, std::string_view text);

}  // namespace boundary::io
