#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test twice:
# a Release build (CUDA programs included; GPU tests report skipped without a device) and a
# build of the host code under AddressSanitizer and UndefinedBehaviorSanitizer; then fuzzes each
# parser for 30 s (verify/fuzz/fuzz.sh, clang) after replaying its regression corpus.
# The loop of one test while editing: cmake/loop.sh REGEX builds only what it runs, then runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
source cmake/install-deps.sh
jobs=$(nproc)

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

# Line tables only (-g1): all a sanitizer's stack trace reads, at about four fifths of -g's compile time.
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
  -DBOUNDARY_SANITIZE=ON -DBOUNDARY_GPU_PROGRAMS=OFF
cmake --build build-sanitize -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-sanitize --output-on-failure -j "$jobs" -E install_find_package

bash verify/fuzz/fuzz.sh 30
