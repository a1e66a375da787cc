#!/usr/bin/env bash
# verify/device.sh's step selection, without a GPU: a name in SKIP or ONLY that is no step is
# refused before anything runs (exit 64, the name in the message, no log folder made); ONLY runs
# configure, build and the named steps and reports every other step as skipped. cmake is a stub on
# PATH and the working folder is empty, so nothing is built and the named step fails (its program
# is absent): the exit code, the number of failed steps, says that it ran.
#   device_script_cases.sh SOURCE_DIR
set -uo pipefail
src=$1
unset SKIP ONLY  # the cases set their own
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0 passed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
mkdir -p "$tmp/bin" "$tmp/work"
printf '#!/bin/sh\nexit 0\n' > "$tmp/bin/cmake" && chmod +x "$tmp/bin/cmake"
device() {  # device OUTDIR: device.sh run in the empty folder with the stub cmake
  (cd "$tmp/work" && PATH="$tmp/bin:$PATH" bash "$src/verify/device.sh" "$1")
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

out=$(ONLY="nan_probe" SKIP="nan_probe" device "$tmp/both" 2>&1); rc=$?
[ $rc -eq 0 ] && ok || bad "ONLY and SKIP of the same step: exit $rc, expected 0"
grep -qF "== nan_probe: skipped (SKIP)" <<< "$out" && ok || bad "SKIP did not win over ONLY: $out"

echo "device_script_cases: $passed passed, $fail failed"
[ $fail -eq 0 ]
