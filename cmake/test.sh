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

# Line tables only (-g1): all a sanitizer's stack trace reads, at about four fifths of -g's compile
# time. -O1: compiles the JSON and CLI templates about a third faster than -O2; the code that runs
# for minutes here (the emulator, its twins, the suites) keeps -O2 (boundary_hot_code), the
# subcommands' parsing and the verify tests' own sources, run for moments, take -O0
# (boundary_brief_code; both in cmake/BoundaryFlags.cmake).
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  -DBOUNDARY_SANITIZE=ON -DBOUNDARY_GPU_PROGRAMS=OFF
# The Release tests run while the sanitizer build compiles: either alone leaves cores idle (the
# longest tests' tail, the links). The tests' output is shown when they end.
ctest --test-dir build --output-on-failure -j "$jobs" > build/release-tests.log 2>&1 &
release_tests=$!
trap 'kill "$release_tests" 2> /dev/null || true' EXIT
cmake --build build-sanitize -j "$jobs"
status=0
wait "$release_tests" || status=$?
trap - EXIT
cat build/release-tests.log
[ "$status" -eq 0 ] || { echo "Release tests failed (exit $status)" >&2; exit "$status"; }

ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-sanitize --output-on-failure -j "$jobs" -E install_find_package

bash verify/fuzz/fuzz.sh 30
