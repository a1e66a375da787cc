#!/usr/bin/env bash
# The boundary-verify executable's exit codes and messages (README: exit codes).
#   cli_exit_codes.sh BOUNDARY_VERIFY SOURCE_DIR
set -u
bin=$1 src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
expect() {  # expect CODE WORDS -- ARGS...: exit code and a phrase of stderr/stdout
  local code=$1 words=$2; shift 3
  "$bin" "$@" > "$dir/stdout" 2> "$dir/stderr"
  local rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -qF -- "$words" "$dir/stdout" "$dir/stderr"; then
    echo "FAIL: boundary-verify $* -> exit $rc (expected $code), output:"; cat "$dir/stdout" "$dir/stderr"
    failures=$((failures + 1))
  else
    echo "ok: exit $rc: boundary-verify $*"
  fi
}
ffn=$src/fixtures/constants/muse-spark-post-ffn.json
expect 0 "boundary-verify " -- --version
expect 0 "emulate" -- --help
expect 2 "subcommand" --
expect 2 "--constants" -- emulate --generate 2 --output "$dir/a.safetensors"
expect 2 "cannot open" -- emulate --constants "$dir/missing.json" --generate 2 --output "$dir/a.safetensors"
expect 2 "excludes" -- emulate --constants "$ffn" --generate 2 --inputs "$dir/x" --output "$dir/a.safetensors"
expect 2 "give --inputs" -- emulate --constants "$ffn" --output "$dir/a.safetensors"
expect 2 "$dir/nothing.safetensors" -- emulate --constants "$ffn" --inputs "$dir/nothing.safetensors" --output "$dir/a.safetensors"
[ -e "$dir/a.safetensors" ] && { echo "FAIL: an output file was left behind"; failures=$((failures + 1)); }
expect 0 "wrote" -- emulate --constants "$ffn" --generate 3 --seed 2 --output "$dir/a.safetensors"
expect 0 "\"rows\": 3" -- --json emulate --constants "$ffn" --inputs "$dir/a.safetensors" --output "$dir/b.safetensors"
expect 2 "required" -- replay
expect 2 "$dir/missing.safetensors" -- replay "$dir/missing.safetensors"
expect 0 "" -- replay "$dir/a.safetensors" --report "$dir/report.json"
[ -s "$dir/report.json" ] || { echo "FAIL: replay --report wrote nothing"; failures=$((failures + 1)); }
# --gpu: 77 and "not run" without a device; 0 with one (the GPU checks ran and agreed).
if "$bin" replay "$dir/a.safetensors" --gpu > "$dir/stdout" 2>&1; then
  grep -q "GPU checks: run" "$dir/stdout" && echo "ok: exit 0 with a device: replay --gpu" ||
    { echo "FAIL: replay --gpu exit 0 without running the GPU checks"; failures=$((failures + 1)); }
else
  rc=$?
  [ "$rc" -eq 77 ] && grep -q "not run" "$dir/stdout" && echo "ok: exit 77 without a device: replay --gpu" ||
    { echo "FAIL: replay --gpu -> exit $rc"; cat "$dir/stdout"; failures=$((failures + 1)); }
fi
# The gate (no subcommand): bad constants and a bad --level are usage errors (2); a run without a
# GPU checks the CPU parts and exits 77 saying so (0 on a machine with a device).
expect 2 "subcommand" -- --rows 4
expect 2 "missing.json" -- --constants "$dir/missing.json" --rows 4
expect 2 "--level" -- --constants "$ffn" --level 3
expect 2 "unknown variant" -- --constants "$ffn" --variants nope
if "$bin" --constants "$ffn" --rows 4 --report "$dir/gate.json" > "$dir/stdout" 2>&1; then
  grep -q "PASS" "$dir/stdout" && echo "ok: exit 0 with a device: gate" ||
    { echo "FAIL: gate exit 0 without passing"; failures=$((failures + 1)); }
else
  rc=$?
  [ "$rc" -eq 77 ] && grep -q "the GPU checks did not run" "$dir/stdout" && [ -s "$dir/gate.json" ] &&
    echo "ok: exit 77 without a device, report written: gate" ||
    { echo "FAIL: gate -> exit $rc"; cat "$dir/stdout"; failures=$((failures + 1)); }
fi
# capture (built where nvcc is, so not in the sanitizer build): 77 and nothing written without a
# device; 0 and a fixture with one. Usage errors: 2.
checks=21
if "$bin" --help | grep -q capture; then
checks=25
expect 2 "give --inputs" -- capture --constants "$ffn" --output "$dir/c.safetensors"
# rank (one process of the multi-process run): bad options and a file that is no case file, 2.
expect 2 "--ranks: 1 to 8, not 9" -- rank --channel "$dir" --rank 0 --ranks 9 --inputs "$dir/a.safetensors" --outputs "$dir"
expect 2 "a.safetensors: __metadata__ has no" -- rank --channel "$dir" --rank 0 --ranks 2 --inputs "$dir/a.safetensors" --outputs "$dir"
if "$bin" capture --constants "$ffn" --generate 1 --output "$dir/c.safetensors" > "$dir/stdout" 2>&1; then
  [ -s "$dir/c.safetensors" ] && echo "ok: exit 0 with a device: capture" ||
    { echo "FAIL: capture exit 0 without a fixture"; failures=$((failures + 1)); }
else
  rc=$?
  [ "$rc" -eq 77 ] && grep -q "no CUDA device" "$dir/stdout" && [ ! -e "$dir/c.safetensors" ] &&
    echo "ok: exit 77 without a device, nothing written: capture" ||
    { echo "FAIL: capture -> exit $rc"; cat "$dir/stdout"; failures=$((failures + 1)); }
fi
fi
echo "$((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
