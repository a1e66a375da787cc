#!/usr/bin/env bash
# verify/device.sh's step selection, without a GPU: a name in SKIP or ONLY that is no step is
# refused before anything runs (exit 64, the name in the message, no log folder made); ONLY runs
# configure, build and the named steps and reports every other step as skipped, and the build
# makes only the programs the named steps run (everything for the tests). cmake is a stub on PATH
# that writes down its arguments, and the working folder is empty, so nothing is built and the named
# step fails (its program is absent): the exit code, the number of failed steps, says that it ran.
#   device_script_cases.sh SOURCE_DIR
set -uo pipefail
src=$1
unset SKIP ONLY  # the cases set their own
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0 passed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
mkdir -p "$tmp/bin" "$tmp/work"
printf '#!/bin/sh\necho "$*" >> "%s"\n' "$tmp/cmake-calls" > "$tmp/bin/cmake" && chmod +x "$tmp/bin/cmake"
device() {  # device OUTDIR: device.sh run in the empty folder with the stub cmake
  rm -f "$tmp/cmake-calls"
  (cd "$tmp/work" && PATH="$tmp/bin:$PATH" bash "$src/verify/device.sh" "$1")
}
builds() {  # builds WHAT EXPECTED: the stub's build call (after its configure call) was EXPECTED
  local got; got=$(grep -- '^--build' "$tmp/cmake-calls" 2>/dev/null)
  [ "$got" = "$2" ] && ok || bad "$1: the build ran 'cmake $got', expected 'cmake $2'"
}

refused() {  # refused VARIABLE VALUE NAME: exit 64 naming NAME, nothing made
  local out rc
  out=$(export "$1=$2"; device "$tmp/refused" 2>&1); rc=$?
  [ $rc -eq 64 ] && ok || bad "$1=$2: exit $rc, expected 64"
  grep -qF "'$3'" <<< "$out" && ok || bad "$1=$2: the message does not name '$3': $out"
  [ ! -e "$tmp/refused" ] && ok || bad "$1=$2: a log folder was made before the refusal"
}
refused ONLY gpu_bnch gpu_bnch
refused SKIP "nan_probe typo" typo

out=$(ONLY="nan_probe" device "$tmp/only" 2>&1); rc=$?
[ $rc -eq 1 ] && ok || bad "ONLY=nan_probe: exit $rc, expected 1 (nan_probe ran and failed, nothing else did)"
for line in "== configure: cmake" "== build: cmake" "== nan_probe: exit 127" "== gpu_tests: skipped (not in ONLY)" \
            "== gate_post-ffn: skipped (not in ONLY)" "== external_torch_gate: skipped (not in ONLY)" "failed steps: 1"; do
  grep -qF -- "$line" <<< "$out" && ok || bad "ONLY=nan_probe: no line '$line' in: $out"
done
[ -s "$tmp/only/logs.tar.gz" ] && ok || bad "ONLY=nan_probe: no logs.tar.gz"
jobs=$(nproc)
builds "ONLY=nan_probe" "--build build-device -j $jobs --target boundary_nan_probe"

# The build follows ONLY: the benchmark's steps build its program alone; Python steps build nothing;
# a step that runs the tests builds everything, and so does a run without ONLY (SKIP never narrows it).
ONLY="gpu_bench torch_peer bench_combined" device "$tmp/bench" > /dev/null 2>&1
builds "ONLY=gpu_bench torch_peer bench_combined" "--build build-device -j $jobs --target boundary_gpu_bench"
ONLY="self_test_post-ffn gpu_bench_one_launch replay_gpu sass" device "$tmp/several" > /dev/null 2>&1
builds "ONLY=self_test_post-ffn gpu_bench_one_launch replay_gpu sass" \
  "--build build-device -j $jobs --target boundary-verify boundary_gpu_bench boundary_kernels"
out=$(ONLY="torch_peer" device "$tmp/python" 2>&1)
builds "ONLY=torch_peer" ""
grep -qF "== build: echo nothing to build" <<< "$out" && ok || bad "ONLY=torch_peer: the build step did not say it builds nothing: $out"
ONLY="gpu_bench gpu_tests" device "$tmp/tests" > /dev/null 2>&1
builds "ONLY=gpu_bench gpu_tests" "--build build-device -j $jobs"
later_steps=$(sed -n '/^steps=(/,/)/p' "$src/verify/device.sh" | tr -d '()' | sed 's/^steps=//' | tr ' ' '\n' |
  grep -vx -e '' -e configure -e build | tr '\n' ' ')
[ $(wc -w <<< "$later_steps") -gt 10 ] && ok || bad "the steps read from device.sh: '$later_steps'"
SKIP="$later_steps" device "$tmp/skip" > /dev/null 2>&1
builds "SKIP of every step but configure and build" "--build build-device -j $jobs"

out=$(ONLY="nan_probe" SKIP="nan_probe" device "$tmp/both" 2>&1); rc=$?
[ $rc -eq 0 ] && ok || bad "ONLY and SKIP of the same step: exit $rc, expected 0"
grep -qF "== nan_probe: skipped (SKIP)" <<< "$out" && ok || bad "SKIP did not win over ONLY: $out"

echo "device_script_cases: $passed passed, $fail failed"
[ $fail -eq 0 ]
