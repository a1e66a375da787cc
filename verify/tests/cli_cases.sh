#!/usr/bin/env bash
# export, check and the gate's --implementation, end to end (README: checking any implementation):
# the emulator as the external implementation passes; one flipped bit is exit 1 naming that
# element; a missing or incomplete outputs file and a failing command are exit 2 naming them.
#   cli_cases.sh BOUNDARY_VERIFY SOURCE_DIR
set -u
bin=$1 src=$2
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

# export: every case file and the manifest; a non-empty directory is refused.
expect 0 "manifest" -- export --constants "$ffn" --dir "$dir/cases" --rows 2 --ranks 2
[ -s "$dir/cases/manifest.json" ] || fail "export wrote no manifest"
for f in edge-f32 edge-bf16 fuzz-f32 operand-special-f32-00 edge-f32-eps-0 partials-f32; do
  [ -s "$dir/cases/$f.safetensors" ] || fail "export wrote no $f.safetensors"
done
expect 2 "not an empty directory" -- export --constants "$ffn" --dir "$dir/cases" --rows 2

# The emulator as the implementation, one case file at a time: check passes.
mkdir "$dir/outputs"
for f in "$dir"/cases/*.safetensors; do
  "$bin" emulate --inputs "$f" --output "$dir/outputs/$(basename "$f")" > /dev/null || fail "emulate $f"
done
expect 0 "PASS" -- check --constants "$ffn" --cases "$dir/cases" --outputs "$dir/outputs" --report "$dir/check.json" --junit "$dir/check.xml"
grep -q '"command": "check"' "$dir/check.json" || fail "check --report: no report of command check"
grep -q 'classname="gate.partials/f32"' "$dir/check.xml" || fail "check --junit: no test case for the partials suite"
expect 2 "other constants" -- check --constants "$src/fixtures/constants/muse-spark-post-attention.json" --cases "$dir/cases" --outputs "$dir/outputs"

# One flipped bit (out, row 1, column 7 of the fuzz case): exit 1 naming that element.
cp "$dir/outputs/fuzz-bf16.safetensors" "$dir/saved.safetensors"
flip "$dir/outputs/fuzz-bf16.safetensors" out $((8192 + 7))
expect 1 "fuzz/bf16 implementation vs emulator: out [row 1, column 7]" -- check --constants "$ffn" --cases "$dir/cases" --outputs "$dir/outputs" --junit "$dir/check.xml"
grep -q "1 elements differ" "$dir/check.xml" || fail "check --junit: the flipped bit is not a failure"
cp "$dir/saved.safetensors" "$dir/outputs/fuzz-bf16.safetensors"
flip "$dir/outputs/edge-f32.safetensors" new_stream 3
expect 1 "new_stream [row 0, column 3]" -- check --constants "$ffn" --cases "$dir/cases" --outputs "$dir/outputs"
"$bin" emulate --inputs "$dir/cases/edge-f32.safetensors" --output "$dir/outputs/edge-f32.safetensors" > /dev/null

# A missing outputs file, a case stored without its new_stream: exit 2 naming the file.
mv "$dir/outputs/edge-bf16.safetensors" "$dir/saved.safetensors"
expect 2 "$dir/outputs/edge-bf16.safetensors" -- check --constants "$ffn" --cases "$dir/cases" --outputs "$dir/outputs"
"$bin" emulate --inputs "$dir/cases/edge-bf16.safetensors" --no-store-stream --output "$dir/outputs/edge-bf16.safetensors" > /dev/null
expect 2 "'new_stream' F32" -- check --constants "$ffn" --cases "$dir/cases" --outputs "$dir/outputs"

# export --no-store-stream (one suite family): the emulator writes out alone, and check wants nothing else.
expect 0 "manifest" -- export --constants "$ffn" --dir "$dir/nostore" --suite operand-special --no-store-stream
mkdir "$dir/nostore-out"
for f in "$dir"/nostore/*.safetensors; do "$bin" emulate --inputs "$f" --output "$dir/nostore-out/$(basename "$f")" > /dev/null; done
expect 0 "PASS" -- check --constants "$ffn" --cases "$dir/nostore" --outputs "$dir/nostore-out"
"$bin" emulate --inputs "$dir/cases/operand-special-f32-00.safetensors" --output "$dir/nostore-out/operand-special-f32-00.safetensors" > /dev/null
expect 2 "unexpected tensor 'new_stream'" -- check --constants "$ffn" --cases "$dir/nostore" --outputs "$dir/nostore-out"

# The gate with the emulator as --implementation: exit 0, never 77. Its temporary directory under
# a TMPDIR with a space and a quote: the paths must reach the command as one word each.
mkdir "$dir/it's a tmp"
impl="$bin emulate --inputs {inputs} --output {output}"
TMPDIR="$dir/it's a tmp" expect 0 "PASS: every bit equal" -- --constants "$ffn" --rows 1 --implementation "$impl" --junit "$dir/gate.xml"
grep -q "<skipped" "$dir/gate.xml" && fail "gate --implementation --junit: a skipped case"
[ -z "$(ls -A "$dir/it's a tmp")" ] || fail "gate --implementation left files in its temporary directory"
# One flipped bit in every run of the command (out, row 0, column 5): exit 1 naming the first
# suite's element, shrunk to a fixture that replay reproduces.
expect 1 "edge/f32 implementation vs emulator: out [row 0, column 5]" -- --constants "$ffn" --rows 1 \
  --implementation "$impl && python3 '$dir/flip.py' {output} out 5" \
  --report "$dir/gate.json"
expect 1 "out [row 0, column 5]" -- replay "$dir/gate-shrunk.safetensors"
# A command that fails or writes nothing: exit 2 naming the case and its stderr.
expect 2 "broken-implementation" -- --constants "$ffn" --rows 1 --implementation 'echo broken-implementation >&2; exit 3 # {inputs} {output}'
grep -qF "case edge-f32 (suite edge/f32)" "$dir/stderr" || fail "a failing command's error does not name the case"
expect 2 "wrote no {output} file" -- --constants "$ffn" --rows 1 --implementation 'true {inputs} {output}'
expect 2 "has no {output}" -- --constants "$ffn" --implementation 'true {inputs}'

echo "$((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
