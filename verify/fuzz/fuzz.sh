#!/usr/bin/env bash
# Builds the libFuzzer harnesses of the parsers (verify/fuzz: clang, ASan, UBSan) and runs each:
# its regression corpus (inputs that once broke a parser) as ctest tests, then SECONDS of fuzzing
# (default 30) seeded from the committed fixtures and constants. A finding (a crash, a sanitizer
# report, a broken round trip) fails the script; libFuzzer leaves the input in build-fuzz as
# <harness>-crash-<sha1>: minimize it, add it to verify/fuzz/regressions/<harness>, fix the parser.
#   verify/fuzz/fuzz.sh [SECONDS]   (CI: 30 a harness; on demand, longer: e.g. 600)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-30}
cmake -S verify/fuzz -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ > /dev/null
cmake --build build-fuzz -j "$(nproc)"
ctest --test-dir build-fuzz --output-on-failure
# fuzz_fixture's seeds: each fixture padded (see fuzz_fixture.cpp), "BVPAD", the length of its
# tensor data (4 bytes, little-endian) and its 8-byte header length and header, 1 to 2 KB in all.
padded=build-fuzz/seeds-fixture
mkdir -p "$padded"
for f in fixtures/boundary/*.safetensors; do
  n=$(od -An -t u8 -N 8 "$f" | tr -d ' ')
  pad=$(( $(stat -c %s "$f") - 8 - n ))
  { printf 'BVPAD'
    printf "$(printf '\\x%02x' $((pad & 255)) $((pad >> 8 & 255)) $((pad >> 16 & 255)) $((pad >> 24 & 255)))"
    head -c $((8 + n)) "$f"; } > "$padded/$(basename "$f")"
done
# One harness: SECONDS of fuzzing, then its count of executions, or its log's tail on a finding.
fuzz() {
  local harness=$1 seeds=fixtures/boundary max_len=300000
  # Fixtures are 180 KB to 2.3 MB: 300,000 bytes keep the smaller whole (binding needs [m, 8192]
  # tensors); a valid constants file is under 1 KB; a padded fixture under 3 KB.
  [ "$harness" = constants ] && seeds=fixtures/constants max_len=4096
  [ "$harness" = fixture ] && seeds=$padded max_len=16384
  # The first directory collects what the fuzzer finds (kept between runs on this machine); the
  # seeds and regressions are only read.
  local corpus=build-fuzz/corpus-$harness
  mkdir -p "$corpus"
  if ! build-fuzz/fuzz_$harness -max_total_time="$seconds" -max_len="$max_len" -print_final_stats=1 \
      -artifact_prefix="build-fuzz/$harness-" "$corpus" "$seeds" "verify/fuzz/regressions/$harness" \
      > "build-fuzz/$harness.log" 2>&1; then
    tail -n 40 "build-fuzz/$harness.log"
    echo "fuzz_$harness: FINDING (log: build-fuzz/$harness.log)"
    return 1
  fi
  echo "fuzz_$harness: $(grep -o 'number_of_executed_units: [0-9]*' "build-fuzz/$harness.log" | cut -d' ' -f2) executions in ${seconds} s, no finding"
}
# The three at once, each for SECONDS of a core: on fewer cores than harnesses they share them for
# longer (on two cores 45 s each for 30 s, where one at a time per core took two rounds, 60 s,
# with a core idle in the second).
harnesses=(safetensors constants fixture)
cores=$(nproc)
if [ "$cores" -lt ${#harnesses[@]} ]; then
  seconds=$(( (seconds * ${#harnesses[@]} + cores - 1) / cores ))
fi
pids=()
for harness in "${harnesses[@]}"; do
  fuzz "$harness" &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do
  wait "$pid" || failed=1
done
exit "$failed"
