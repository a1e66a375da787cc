#!/usr/bin/env bash
# compare_bench.py (the A/B table of two builds' bench runs) on hand-made bench JSON, and
# ab_bench.sh's refusals: the figures it prints, the mismatches it refuses (exit 2, naming the file
# and field), an input never overwritten; with BENCH (boundary_gpu_bench), its refusals of bad
# --handout thresholds, which come before it looks for a device. Usage: compare_bench_cases.sh
# SOURCE_DIR [BENCH]
set -uo pipefail
src=$1 bench_exe=${2:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0 passed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
compare() { python3 "$src/verify/bench/compare_bench.py" "$@"; }

# bench JSON: NAME DEVICE GATES M FUSED_F32 [AR_FUSED]
bench() {
  local ar=""
  [ $# -ge 6 ] && ar=", \"all_reduce_rows\": [{\"m\": $4, \"fused\": {\"median_us\": $6}, \"all_reduce_then_draft\": {\"median_us\": 68.5}}]"
  cat > "$tmp/$1" <<JSON
{"device": {"name": "$2"}, "method": {"launches_per_graph": 20, "replays": 50, "gates": "$3"},
 "rows": [{"m": $4, "fused_f32": {"median_us": $5}, "fused_bf16": {"median_us": 25.0}}]$ar}
JSON
}

bench a1.json H200 early 1024 30.0 58.0
bench a2.json H200 early 1024 30.2 58.2
bench b1.json H200 early 1024 28.5 56.0
bench b2.json H200 early 1024 28.7 56.4
out=$(compare --a "$tmp/a1.json" "$tmp/a2.json" --b "$tmp/b1.json" "$tmp/b2.json" --json "$tmp/c.json"); rc=$?
[ $rc -eq 0 ] && ok || bad "a comparison: exit $rc"
# B / A of the means: 28.6 / 30.1 = 0.950; the all-reduce boundary 56.2 / 58.1 = 0.967.
grep -qF "| 1024 | fused F32, dispatched | 30.00 30.20 | 28.50 28.70 | 0.950 |" <<< "$out" && ok || bad "fused F32 row: $out"
grep -qF "| 1024 | all-reduce fused, dispatched | 58.00 58.20 | 56.00 56.40 | 0.967 |" <<< "$out" && ok || bad "all-reduce row: $out"
grep -qF "| 1024 | all-reduce chain | 68.50 68.50 | 68.50 68.50 | 1.000 |" <<< "$out" && ok || bad "chain row: $out"
grep -qF "| 1024 | cta F32 |" <<< "$out" && bad "a timing no run has got a row" || ok
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert abs(r['lines'][0]['b_over_a'] - 28.6/30.1) < 1e-12" "$tmp/c.json" \
  && ok || bad "--json's b_over_a"

# A timing one side lacks is shown, not dropped; its ratio is "-".
python3 - "$tmp/b1.json" "$tmp/b3.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1])); del b["rows"][0]["fused_bf16"]; json.dump(b, open(sys.argv[2], "w"))
PY
out=$(compare --a "$tmp/a1.json" --b "$tmp/b3.json") && grep -qF "| 1024 | fused BF16, dispatched | 25.00 | - | - |" <<< "$out" \
  && ok || bad "a timing only A has: $out"

# The traffic floor (the bench's traffic kernel, the floor a change to it moves) has rows of its
# own, for the DraftBoundary and the all-reduce boundary.
python3 - "$tmp/a1.json" "$tmp/t1.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
b["rows"][0]["floor_traffic"] = {"median_us": 27.5}
b["all_reduce_rows"][0]["floor_traffic"] = {"median_us": 51.25}
json.dump(b, open(sys.argv[2], "w"))
PY
out=$(compare --a "$tmp/t1.json" --b "$tmp/t1.json")
grep -qF "| 1024 | its traffic, cluster grid | 27.50 | 27.50 | 1.000 |" <<< "$out" && ok || bad "traffic floor row: $out"
grep -qF "| 1024 | all-reduce traffic, cluster grid | 51.25 | 51.25 | 1.000 |" <<< "$out" && ok || bad "all-reduce traffic floor row: $out"

# Refusals: exit 2, the message names the file and the field.
refused() {  # refused WHAT NEEDLE ARGS...: exit 2 and NEEDLE on stderr
  local what=$1 needle=$2; shift 2
  local err rc
  err=$(compare "$@" 2>&1 >/dev/null); rc=$?
  [ $rc -eq 2 ] && grep -qF -- "$needle" <<< "$err" && ok || bad "$what: exit $rc, stderr: $err"
}
bench h100.json "H100 80GB HBM3" early 1024 38.0
refused "another device" "$tmp/h100.json: 'device.name' is 'H100 80GB HBM3'" --a "$tmp/a1.json" --b "$tmp/h100.json"
bench late.json H200 late 1024 30.1
refused "other gates" "$tmp/late.json: 'method.gates' is 'late'" --a "$tmp/a1.json" --b "$tmp/late.json"
bench m8192.json H200 early 8192 200.0
refused "other rows" "$tmp/m8192.json: rows m = [8192]" --a "$tmp/a1.json" --b "$tmp/m8192.json"
echo '{"rows": ' > "$tmp/cut.json"
refused "a cut file" "$tmp/cut.json: not a readable boundary_gpu_bench JSON" --a "$tmp/a1.json" --b "$tmp/cut.json"
echo '{"m": 1}' > "$tmp/other.json"
refused "another JSON" "$tmp/other.json: no 'rows' list" --a "$tmp/a1.json" --b "$tmp/other.json"
refused "a missing file" "$tmp/none.json: not a readable" --a "$tmp/a1.json" --b "$tmp/none.json"
before=$(md5sum < "$tmp/b1.json")
refused "--json onto an input" "is one of the inputs: not overwritten" --a "$tmp/a1.json" --b "$tmp/b1.json" --json "$tmp/b1.json"
[ "$(md5sum < "$tmp/b1.json")" = "$before" ] && ok || bad "--json onto an input changed it"

# ab_bench.sh: usage and refusals (its run needs a GPU: the device's, not this test's).
ab() { bash "$src/verify/bench/ab_bench.sh" "$@"; }
ab > /dev/null 2>&1; [ $? -eq 2 ] && ok || bad "ab_bench without arguments: not exit 2"
err=$(ab run "$tmp" . "$tmp/out" 0 -- --rows 1 2>&1); [ $? -eq 2 ] && grep -qF "ROUNDS must be a positive count" <<< "$err" && ok || bad "ROUNDS 0: $err"
err=$(ab run "$tmp/nowhere" "$src" "$tmp/out" 2>&1); [ $? -eq 2 ] && grep -qF "$tmp/nowhere is not a source tree" <<< "$err" && ok || bad "no tree: $err"
err=$(ab run "$src" "$src,$tmp/nowhere" "$tmp/out" 2>&1); [ $? -eq 2 ] && grep -qF "$tmp/nowhere is not a source tree" <<< "$err" && ok || bad "a missing third tree: $err"
err=$(ab run "$src" "$src,,$src" "$tmp/out" 2>&1); [ $? -eq 2 ] && grep -qF "an empty tree name in '$src,,$src'" <<< "$err" && ok || bad "an empty tree name: $err"
err=$(ab run "$src" "$src,$src,$src,$src,$src" "$tmp/out" 2>&1); [ $? -eq 2 ] && grep -qF "DIR_B is one to four trees, comma separated" <<< "$err" && ok || bad "five trees after A: $err"
[ ! -e "$tmp/out" ] && ok || bad "a refused run made its OUTDIR"
err=$(AB_RUN_TIMEOUT=soon ab run "$tmp/nowhere" "$src" "$tmp/out" -- --rows 1 2>&1); [ $? -eq 2 ] && grep -qF "AB_RUN_TIMEOUT must be a positive number of seconds, not 'soon'" <<< "$err" && ok || bad "AB_RUN_TIMEOUT soon: $err"
err=$(AB_RUN_TIMEOUT=0 ab run "$tmp/nowhere" "$src" "$tmp/out" -- --rows 1 2>&1); [ $? -eq 2 ] && grep -qF "not '0'" <<< "$err" && ok || bad "AB_RUN_TIMEOUT 0: $err"
mkdir "$tmp/taken"; touch "$tmp/taken/keep"
err=$(ab export HEAD "$tmp/taken" 2>&1); [ $? -eq 2 ] && [ -f "$tmp/taken/keep" ] && grep -qF "exists: not overwritten" <<< "$err" && ok || bad "export onto a folder: $err"
if git -C "$src" rev-parse --verify -q HEAD > /dev/null; then
  ab export HEAD "$tmp/head" > /dev/null && [ -f "$tmp/head/verify/bench/gpu_bench.cpp" ] && [ -d "$tmp/head/fixtures/rsqrt" ] \
    && [ -z "$(ls "$tmp/head/fixtures/boundary" 2>/dev/null)" ] && ok || bad "export HEAD: not the tree without the captured fixtures"
else
  bad "export HEAD: $src is not a git checkout"
fi

# ab_bench.sh run on three fake trees, whose CMake target boundary_gpu_bench is a script that
# records its call and writes a fixed bench JSON (fused F32 30.0 / 28.5 / 31.5 us): every tree
# built, run in turn each round with the bench's arguments, and A compared with each other tree.
fake_tree() {  # fake_tree DIR SIDE US
  mkdir -p "$1"
  bench "$3.json" H200 early 1024 "$3"
  printf '#!/usr/bin/env bash\necho "%s $*" >> "%s"\nwhile [ $# -gt 0 ]; do [ "$1" = --json ] && cp "%s" "$2"; shift; done\n' \
    "$2" "$tmp/calls" "$tmp/$3.json" > "$1/bench.sh"
  chmod +x "$1/bench.sh"
  cat > "$1/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(fake_bench NONE)
add_custom_target(boundary_gpu_bench ALL
  COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_SOURCE_DIR}/bench.sh ${CMAKE_BINARY_DIR}/verify/bench/boundary_gpu_bench)
CMAKE
}
if command -v cmake > /dev/null && command -v ninja > /dev/null; then
  fake_tree "$tmp/ta" a 30.0; fake_tree "$tmp/tb" b 28.5; fake_tree "$tmp/tc" c 31.5
  out=$(AB_BUILD_DIR="$tmp/builds" ab run "$tmp/ta" "$tmp/tb,$tmp/tc" "$tmp/abc" 2 -- --rows 1024 2>&1); rc=$?
  [ $rc -eq 0 ] && ok || bad "a run of three trees: exit $rc: $out"
  [ "$(cut -c1 "$tmp/calls" | tr -d '\n')" = abcabc ] && ok || bad "three trees, two rounds: not run a b c a b c: $(cat "$tmp/calls")"
  grep -qvF -- "--rows 1024 --json" "$tmp/calls" && bad "a run without the bench's arguments: $(cat "$tmp/calls")" || ok
  grep -qF "| 1024 | fused F32, dispatched | 30.00 30.00 | 28.50 28.50 | 0.950 |" <<< "$out" && ok || bad "A against B: $out"
  grep -qF "| 1024 | fused F32, dispatched | 30.00 30.00 | 31.50 31.50 | 1.050 |" <<< "$out" && ok || bad "A against C: $out"
  python3 -c "import json,sys; assert abs(json.load(open(sys.argv[1]))['lines'][0]['b_over_a'] - 1.05) < 1e-12" "$tmp/abc/compare_c.json" \
    && ok || bad "compare_c.json: not C against A"
  # the end of the output: every tree's dispatched rows after the tables (a device call shows the end)
  last=$(sed -n '/^ab_bench: the dispatched rows, each tree against A:/,$p' <<< "$out")
  grep -qF "| 1024 | fused F32, dispatched | 30.00 30.00 | 28.50 28.50 | 0.950 |" <<< "$last" \
    && grep -qF "| 1024 | fused F32, dispatched | 30.00 30.00 | 31.50 31.50 | 1.050 |" <<< "$last" \
    && grep -qF "A against C ($tmp/tc):" <<< "$last" && ok || bad "no summary of the dispatched rows at the end: $out"
  packed=$(tar tzf "$tmp/abc/runs.tar.gz" 2> /dev/null | sort | tr '\n' ' ')
  [ "$packed" = "a1.json a1.log a2.json a2.log b1.json b1.log b2.json b2.log c1.json c1.log c2.json c2.log " ] \
    && [ -z "$(cd "$tmp/abc" && ls ./*[0-9].json ./*[0-9].log 2> /dev/null)" ] && ok || bad "the runs not packed into runs.tar.gz: '$packed', $(ls "$tmp/abc")"
else
  bad "ab_bench.sh run: needs cmake and ninja, as the build does"
fi

# boundary_gpu_bench --handout: three row counts in [0, 1000000], else exit 2 naming the option.
if [ -n "$bench_exe" ]; then
  err=$("$bench_exe" --handout 12,24 2>&1); [ $? -eq 2 ] && grep -qF -- "--handout: At least 3 required but received 2" <<< "$err" && ok || bad "--handout of two: $err"
  err=$("$bench_exe" --handout 12,-1,32 2>&1); [ $? -eq 2 ] && grep -qF -- "--handout: -1 is not a row count in [0, 1000000]" <<< "$err" && ok || bad "--handout -1: $err"
  err=$("$bench_exe" --handout 12,24,2000000 2>&1); [ $? -eq 2 ] && grep -qF -- "--handout: 2000000 is not a row count" <<< "$err" && ok || bad "--handout 2e6: $err"
fi

echo "compare_bench_cases: $passed passed, $fail failed"
[ $fail -eq 0 ]
