#!/usr/bin/env bash
# export, check and the gate's --implementation, end to end (README: checking any implementation):
# the emulator as the external implementation passes; one flipped bit is exit 1 naming that
# element; a missing or incomplete outputs file is exit 2 naming it. (How a failing command is
# reported: test_external.cpp, without a gate run each.)
#   cli_cases.sh BOUNDARY_VERIFY SOURCE_DIR [--no-gate-runs]
# --no-gate-runs (the sanitizer build, where a gate run takes minutes) leaves out the two gate runs:
# test_external checks the hook and test_gate the gate's paths under the sanitizers.
set -u
bin=$1 src=$2 gate_runs=${3:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ffn=$src/fixtures/constants/muse-spark-post-ffn.json
failures=0 checks=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect() {  # expect CODE WORDS -- ARGS...: exit code and a phrase of stdout/stderr
  local code=$1 words=$2; shift 3
  checks=$((checks + 1))
  "$bin" "$@" > "$dir/stdout" 2> "$dir/stderr"
  local rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -qF -- "$words" "$dir/stdout" "$dir/stderr"; then
    fail "boundary-verify $* -> exit $rc (expected $code with '$words'), output:"; cat "$dir/stdout" "$dir/stderr"
  else
    echo "ok: exit $rc: boundary-verify $*"
  fi
}
# flip.py FILE TENSOR INDEX: flips the lowest bit of element INDEX of TENSOR in a safetensors file
# (Python's standard library only).
cat > "$dir/flip.py" <<'EOF'
import json, struct, sys
path, tensor, index = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", data[:8])[0]
t = json.loads(data[8:8 + n])[tensor]
data[8 + n + t["data_offsets"][0] + (4 if t["dtype"] == "F32" else 2) * index] ^= 1
open(path, "wb").write(data)
EOF
flip() { python3 "$dir/flip.py" "$@"; }

# export: case files and the manifest; a non-empty directory is refused.
expect 0 "manifest" -- export --constants "$ffn" --dir "$dir/cases" --suite fuzz --rows 2
[ -s "$dir/cases/manifest.json" ] || fail "export wrote no manifest"
for f in fuzz-f32 fuzz-bf16; do [ -s "$dir/cases/$f.safetensors" ] || fail "export wrote no $f.safetensors"; done
expect 2 "not an empty directory" -- export --constants "$ffn" --dir "$dir/cases" --rows 2
expect 0 "manifest" -- export --constants "$ffn" --dir "$dir/partials" --suite partials --ranks 2

# The emulator as the implementation, one case file at a time: check passes.
for set in cases partials; do
  mkdir "$dir/$set-out"
  for f in "$dir/$set"/*.safetensors; do
    "$bin" emulate --inputs "$f" --output "$dir/$set-out/$(basename "$f")" > /dev/null || fail "emulate $f"
  done
done
out=$dir/cases-out
expect 0 "PASS" -- check --constants "$ffn" --cases "$dir/cases" --outputs "$out" --report "$dir/check.json"
grep -q '"command": "check"' "$dir/check.json" || fail "check --report: no report of command check"
expect 0 "PASS" -- check --constants "$ffn" --cases "$dir/partials" --outputs "$dir/partials-out" --junit "$dir/check.xml"
grep -q 'classname="gate.partials/f32"' "$dir/check.xml" || fail "check --junit: no test case for the partials suite"
expect 2 "other constants" -- check --constants "$src/fixtures/constants/muse-spark-post-attention.json" --cases "$dir/cases" --outputs "$out"

# One flipped bit: exit 1 naming that element (out: row 1, column 7; new_stream: row 0, column 3).
flip "$out/fuzz-bf16.safetensors" out $((8192 + 7))
expect 1 "fuzz/bf16 implementation vs emulator: out [row 1, column 7]" -- check --constants "$ffn" --cases "$dir/cases" --outputs "$out" --junit "$dir/check.xml"
grep -q "1 elements differ" "$dir/check.xml" || fail "check --junit: the flipped bit is not a failure"
flip "$out/fuzz-bf16.safetensors" out $((8192 + 7))
flip "$out/fuzz-f32.safetensors" new_stream 3
expect 1 "fuzz/f32 implementation vs emulator: new_stream [row 0, column 3]" -- check --constants "$ffn" --cases "$dir/cases" --outputs "$out"
flip "$out/fuzz-f32.safetensors" new_stream 3

# A missing outputs file, a case stored without its new_stream: exit 2 naming the file.
mv "$out/fuzz-bf16.safetensors" "$dir/saved.safetensors"
expect 2 "$out/fuzz-bf16.safetensors" -- check --constants "$ffn" --cases "$dir/cases" --outputs "$out"
"$bin" emulate --inputs "$dir/cases/fuzz-bf16.safetensors" --no-store-stream --output "$out/fuzz-bf16.safetensors" > /dev/null
expect 2 "'new_stream' F32" -- check --constants "$ffn" --cases "$dir/cases" --outputs "$out"

# export --no-store-stream (one suite family): the emulator writes out alone, and check wants nothing else.
expect 0 "manifest" -- export --constants "$ffn" --dir "$dir/nostore" --suite operand-special --no-store-stream
mkdir "$dir/nostore-out"
for f in "$dir"/nostore/*.safetensors; do "$bin" emulate --inputs "$f" --output "$dir/nostore-out/$(basename "$f")" > /dev/null; done
expect 0 "PASS" -- check --constants "$ffn" --cases "$dir/nostore" --outputs "$dir/nostore-out"
"$bin" emulate --inputs "$dir/nostore/operand-special-f32-00.safetensors" --constants "$ffn" --output "$dir/nostore-out/operand-special-f32-00.safetensors" > /dev/null
expect 2 "unexpected tensor 'new_stream'" -- check --constants "$ffn" --cases "$dir/nostore" --outputs "$dir/nostore-out"

if [ "$gate_runs" != --no-gate-runs ]; then
# The gate with the emulator as --implementation: exit 0, never 77, no skipped JUnit case (but the
# planted bugs not applicable to its suites: rank_order, whose suites' branch is one rank), nothing
# left in its temporary directory.
mkdir "$dir/tmp"
impl="$bin emulate --inputs {inputs} --output {output}"
TMPDIR="$dir/tmp" expect 0 "PASS: every bit equal" -- --constants "$ffn" --rows 1 --implementation "$impl" --junit "$dir/gate.xml"
grep "<skipped" "$dir/gate.xml" | grep -qv '<skipped message="not applicable: ' && fail "gate --implementation --junit: a skipped case"
grep -q '<skipped message="not applicable: R = 1 rank partial' "$dir/gate.xml" || fail "gate --implementation --junit: rank_order not skipped as not applicable"
[ -z "$(ls -A "$dir/tmp")" ] || fail "gate --implementation left files in its temporary directory"
# One flipped bit in every run of the command (out, row 0, column 5): exit 1 naming the first
# suite's element, shrunk by rerunning the command to a fixture that replay reproduces.
expect 1 "edge/f32 implementation vs emulator: out [row 0, column 5]" -- --constants "$ffn" --rows 1 \
  --implementation "$impl && python3 '$dir/flip.py' {output} out 5" --report "$dir/gate.json"
expect 1 "out [row 0, column 5]" -- replay "$dir/gate-shrunk.safetensors"
fi

echo "$((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
