// The gate's --implementation CMD: an implementation the toolkit did not build, as a shell command
// run once per case (TestFloat's `gen | implementation | ver`, one file at a time). `{inputs}` in
// CMD becomes a case file as `export` writes it (cases.hpp), `{output}` the path where CMD writes
// `out` and, when the case's store_stream is "true", `new_stream`. Both are paths this tool makes
// in its own temporary directory, shell-quoted: write the placeholders unquoted.
#pragma once

#include <boundary/verify/gate.hpp>

#include <string>

namespace boundary::cli {

// The gate's implementation in that mode: name "implementation", every stream dtype, stream stored.
GateVariant external_variant();

// A hook that runs CMD where the gate runs a GPU implementation: run() writes the bound rows as a
// case file, runs `/bin/sh -c CMD` (stdin /dev/null) and reads its outputs; no debug build (the
// first divergent stage stays unknown), no planted bugs, no device. InputError (exit 2) when CMD
// lacks a placeholder, exits non-zero, dies of a signal or writes no valid outputs file: the
// message gives CMD's exit status and the tail of its stderr.
GateGpuHook make_external_hook(const std::string& command);

}  // namespace boundary::cli
