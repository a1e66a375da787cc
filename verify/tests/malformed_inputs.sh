#!/usr/bin/env bash
# The malformed-input suite (issue 13): bad safetensors files, bad constants files and command-line
# misuse. Each case asserts the exit code, a phrase of the message that names the file, field or
# tensor, and that no file of the scratch directory was created, truncated or replaced (names,
# inodes, sizes and SHA-256 compared before and after), outputs and inputs alike.
#   malformed_inputs.sh BOUNDARY_VERIFY SOURCE_DIR
set -u
bin=$(realpath "$1") src=$(realpath "$2")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
attn=$src/fixtures/constants/muse-spark-post-attention.json
ffn=$src/fixtures/constants/muse-spark-post-ffn.json
fixture=$(ls "$src"/fixtures/boundary/post-attention-wbf16-sf32-stored.safetensors)
failures=0 cases=0

snapshot() { find . -printf '%p %i %s\n' | sort; find . -type f -exec sha256sum {} + | sort; }

# case CODE PHRASE -- ARGS...: boundary-verify ARGS exits CODE, its stderr has PHRASE, the directory
# is unchanged and stderr stays short (a value echoed whole would not).
case_() {
  local code=$1 phrase=$2; shift 3
  cases=$((cases + 1))
  local before; before=$(snapshot)
  timeout 60 "$bin" "$@" > ../stdout.$$ 2> ../stderr.$$
  local rc=$?
  local after; after=$(snapshot)
  local why=""
  [ "$rc" -eq "$code" ] || why="exit $rc, expected $code"
  [ -z "$phrase" ] || grep -qF -- "$phrase" ../stderr.$$ || why="$why; stderr lacks '$phrase'"
  [ "$before" = "$after" ] || why="$why; files changed: $(diff <(echo "$before") <(echo "$after") | head -5 | tr '\n' ' ')"
  [ "$(wc -c < ../stderr.$$)" -lt 4000 ] || why="$why; stderr is $(wc -c < ../stderr.$$) bytes"
  if [ -n "$why" ]; then
    echo "FAIL: boundary-verify $(echo "$*" | cut -c1-150) -> $why"; head -c 600 ../stderr.$$; echo
    failures=$((failures + 1))
  else
    echo "ok: exit $rc: boundary-verify $(echo "$*" | cut -c1-150)"
  fi
  rm -f ../stdout.$$ ../stderr.$$
}

le64() { printf "$(printf '\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)) \
  $(($1 >> 32 & 255)) $(($1 >> 40 & 255)) $(($1 >> 48 & 255)) $(($1 >> 56 & 255)))"; }
# st FILE HEADER [DATA_BYTES]: a safetensors file: the header's length, the header, zero bytes.
st() { { le64 ${#2}; printf '%s' "$2"; head -c "${3:-0}" /dev/zero; } > "$1"; }
# tensors FILE NAME:DTYPE:SHAPE ...: a well-formed file of zero-filled tensors, with the
# __metadata__ object $META when set.
tensors() {
  local f=$1 header="{" offset=0 sep=""; shift
  [ -n "${META:-}" ] && header+="\"__metadata__\":$META" sep=","
  for t in "$@"; do
    local name=${t%%:*} rest=${t#*:}; local dtype=${rest%%:*} shape=${rest#*:}
    local n=$(( $(echo "$shape" | tr -d '[] ' | tr ',' '*') * $([ "$dtype" = F32 ] && echo 4 || echo 2) ))
    header+="$sep\"$name\":{\"dtype\":\"$dtype\",\"shape\":$shape,\"data_offsets\":[$offset,$((offset + n))]}"
    offset=$((offset + n)) sep=","
  done
  st "$f" "$header}" "$offset"
}
H=8192
ops="alpha:F32:[$H] beta:F32:[$H] pre_weight:BF16:[$H]"

# Inputs every case reads; out.safetensors stands for an earlier output that must survive.
printf 'sentinel' > out.safetensors
cp "$attn" attn.json
tensors good.safetensors "branch:BF16:[1,$H]" "stream:F32:[1,$H]" $ops
emulate() { case_ "$1" "$2" -- emulate --constants attn.json --inputs "$3" --output out.safetensors; }

echo "== safetensors (emulate --inputs)"
: > empty.safetensors; emulate 2 "empty.safetensors: file is 0 bytes" empty.safetensors
printf 'abcdefg' > short.safetensors; emulate 2 "short.safetensors: file is 7 bytes" short.safetensors
{ le64 1000; printf '{}'; } > long.safetensors; emulate 2 "long.safetensors: header length 1000 exceeds the file size" long.safetensors
{ le64 $((1 << 62)); printf '{}'; } > huge.safetensors; emulate 2 "huge.safetensors: header length" huge.safetensors
st notjson.safetensors '{"branch":'; emulate 2 "notjson.safetensors: header is not valid JSON" notjson.safetensors
st array.safetensors '[]'; emulate 2 "array.safetensors: header is JSON array, expected an object" array.safetensors
{ le64 4; printf '{\0}}'; } > nul.safetensors; emulate 2 "nul.safetensors: header has a NUL byte" nul.safetensors
st dup.safetensors '{"branch":{"dtype":"BF16","shape":[0],"data_offsets":[0,0]},"branch":{"dtype":"BF16","shape":[0],"data_offsets":[0,0]}}'
emulate 2 "dup.safetensors: duplicate tensor 'branch'" dup.safetensors
st f64.safetensors '{"branch":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}' 8
emulate 2 "f64.safetensors: tensor 'branch': dtype F64 is not supported" f64.safetensors
st negshape.safetensors '{"branch":{"dtype":"BF16","shape":[-1],"data_offsets":[0,2]}}' 2
emulate 2 "negshape.safetensors: tensor 'branch': shape holds -1" negshape.safetensors
st sizes.safetensors '{"branch":{"dtype":"BF16","shape":[4],"data_offsets":[0,6]}}' 6
emulate 2 "sizes.safetensors: tensor 'branch': data_offsets [0, 6) hold 6 bytes, expected 8" sizes.safetensors
st truncated.safetensors '{"branch":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}}' 4
emulate 2 "truncated.safetensors: tensor 'branch': data_offsets [0, 8) end past the data buffer" truncated.safetensors
st overlap.safetensors '{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[2,6]}}' 6
emulate 2 "overlap.safetensors: tensor 'b': bytes [2, 6) overlap tensor 'a'" overlap.safetensors
st gap.safetensors '{"a":{"dtype":"BF16","shape":[2],"data_offsets":[4,8]}}' 8
emulate 2 "gap.safetensors: data bytes [0, 4) before tensor 'a' are not covered" gap.safetensors
st trailing.safetensors '{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}' 9
emulate 2 "trailing.safetensors: data buffer has 5 trailing bytes" trailing.safetensors
st nodtype.safetensors '{"a":{"shape":[2],"data_offsets":[0,4]}}' 4
emulate 2 "nodtype.safetensors: tensor 'a': entry lacks dtype" nodtype.safetensors
st meta.safetensors '{"__metadata__":{"constants":5}}'
emulate 2 "meta.safetensors: __metadata__ key 'constants' is 5, expected a string" meta.safetensors
st deep.safetensors "$(printf '[%.0s' {1..5000})"; emulate 2 "deep.safetensors: header nests deeper than 16 levels" deep.safetensors
st longname.safetensors "{\"$(head -c 200000 /dev/zero | tr '\0' 'x')\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]}}" 8
emulate 2 "longname.safetensors: tensor 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... (200000 bytes)'" longname.safetensors
tensors nostream.safetensors "branch:BF16:[1,$H]" $ops
emulate 2 "nostream.safetensors: no tensor 'stream'" nostream.safetensors
tensors f32branch.safetensors "branch:F32:[1,$H]" "stream:F32:[1,$H]" $ops
emulate 2 "f32branch.safetensors: tensor 'branch': dtype F32, expected BF16" f32branch.safetensors
tensors narrow.safetensors "branch:BF16:[1,100]" "stream:F32:[1,$H]" $ops
emulate 2 "narrow.safetensors: tensor 'branch'" narrow.safetensors
tensors rows.safetensors "branch:BF16:[2,$H]" "stream:F32:[1,$H]" $ops
emulate 2 "rows.safetensors: tensor 'stream'" rows.safetensors
tensors noweight.safetensors "branch:BF16:[1,$H]" "stream:F32:[1,$H]" "alpha:F32:[$H]" "beta:F32:[$H]"
emulate 2 "noweight.safetensors: no tensor 'pre_weight'" noweight.safetensors
tensors extraweight.safetensors "branch:BF16:[1,$H]" "stream:F32:[1,$H]" $ops "post_weight:BF16:[$H]"
emulate 2 "extraweight.safetensors: tensor 'post_weight'" extraweight.safetensors
tensors ranks.safetensors "partials:BF16:[9,1,$H]" "stream:F32:[1,$H]" $ops
emulate 2 "ranks.safetensors: tensor 'partials'" ranks.safetensors
mkdir adir.safetensors; emulate 2 "adir.safetensors: is a directory" adir.safetensors
emulate 2 "/dev/zero: is not a regular file" /dev/zero
mkfifo fifo.safetensors; emulate 2 "fifo.safetensors: is not a regular file" fifo.safetensors
emulate 2 "missing.safetensors: cannot open" missing.safetensors

echo "== fixtures (replay)"
deep_constants=$(printf '[%.0s' {1..100000})
constants_text=$(tr -d '\n ' < "$attn" | sed 's/"/\\"/g')
variant() { echo "\"variant\":\"stream=f32,store_stream=$1,late_gates=0,pdl=1\""; }
fixture_tensors=("branch:BF16:[1,$H]" "stream:F32:[1,$H]" $ops "out:BF16:[1,$H]")
META="{\"constants\":\"$constants_text\",$(variant 0)}" tensors sound.safetensors "${fixture_tensors[@]}"
case_ 0 "" -- replay sound.safetensors  # well formed (zero rows, whose outputs are zero): the others differ only in what they break
META="{\"constants\":\"$deep_constants\"}" tensors deepmeta.safetensors "${fixture_tensors[@]}"
case_ 2 "deepmeta.safetensors (__metadata__ 'constants'): JSON nested deeper than 16 levels" -- replay deepmeta.safetensors
META="{$(variant 0)}" tensors nometa.safetensors "${fixture_tensors[@]}"
case_ 2 "nometa.safetensors: __metadata__ has no 'constants' entry" -- replay nometa.safetensors
# Recorded with store_stream=1 yet without new_stream: half the check would be missing.
META="{\"constants\":\"$constants_text\",$(variant 1)}" tensors half.safetensors "${fixture_tensors[@]}"
case_ 2 "half.safetensors: no tensor 'new_stream', although __metadata__ 'variant' says store_stream=1" -- replay half.safetensors
META="{\"constants\":\"$constants_text\",$(variant 0)}" tensors extra.safetensors "${fixture_tensors[@]}" "new_stream:F32:[1,$H]"
case_ 2 "extra.safetensors: tensor 'new_stream' recorded, although __metadata__ 'variant' says store_stream=0" -- replay extra.safetensors
case_ 2 "--report 'sound.safetensors': is the input sound.safetensors of this run" -- replay sound.safetensors --report sound.safetensors
ln -s sound.safetensors link.json
case_ 2 "--report 'link.json': is the input sound.safetensors" -- replay nometa.safetensors sound.safetensors --report link.json
echo "== constants (emulate --generate 1)"
gen() { case_ 2 "$1" -- emulate --constants "$2" --generate 1 --output out.safetensors; }
cfg() { printf '%s' "$2" > "$1"; }
gen "missing.json: cannot open" missing.json
cfg empty.json ''; gen "empty.json: not valid JSON" empty.json
cfg notjson.json '{"post_eps": 1e-8,'; gen "notjson.json: not valid JSON" notjson.json
cfg array.json '[1, 2]'; gen "array.json: expected one JSON object of constants, got [1,2] (array)" array.json
base='"post_eps":1e-8,"post_gain_center":null,"pre_eps":1e-5,"pre_gain_center":1.0,"pre_weight_dtype":"bf16"'
cfg unknown.json "{$base,\"post_epsilon\":1}"; gen "unknown.json: unknown field 'post_epsilon'" unknown.json
cfg dupkey.json "{$base,\"post_eps\":1e-8}"; gen "dupkey.json: field 'post_eps' appears more than once" dupkey.json
cfg negeps.json "{${base/1e-8/-1}}"; gen "negeps.json: field 'post_eps': expected a finite number >= 0, got -1" negeps.json
cfg streps.json "{${base/1e-8/\"tiny\"}}"; gen "streps.json: field 'post_eps': expected a finite number >= 0, got \"tiny\" (string)" streps.json
cfg bigeps.json "{${base/1e-8/1e400}}"; gen "bigeps.json: field 'post_eps': expected a finite number" bigeps.json
cfg floateps.json "{${base/1e-8/1e39}}"; gen "floateps.json: field 'post_eps': expected a finite number >= 0 that stays finite as float" floateps.json
cfg nogain.json '{"post_eps":1e-8,"pre_eps":1e-5,"pre_gain_center":1.0,"pre_weight_dtype":"bf16"}'
gen "nogain.json: field 'post_gain_center' is missing" nogain.json
cfg dtypenull.json "{$base,\"post_weight_dtype\":\"bf16\"}"; gen "dtypenull.json: field 'post_weight_dtype': a weight dtype for a norm without a weight" dtypenull.json
cfg fp8.json "{${base/\"bf16\"/\"fp8\"}}"; gen "fp8.json: field 'pre_weight_dtype'" fp8.json
cfg scale.json "{$base,\"post_input_scale\":true}"; gen "scale.json: field 'post_input_scale'" scale.json
cfg fma.json "{$base,\"pre_fma_squares\":1}"; gen "fma.json: field 'pre_fma_squares': expected true or false, got 1 (number)" fma.json
cfg deeparrays.json "{\"post_eps\":$deep_constants"; gen "deeparrays.json: JSON nested deeper than 16 levels in field 'post_eps'" deeparrays.json
cfg deepobjects.json "{\"post_eps\":$(printf '{"a":%.0s' {1..100000})"; gen "deepobjects.json: JSON nested deeper than 16 levels" deepobjects.json
cfg nested.json "{${base/1e-8/[[[1]]]}}"; gen "nested.json: field 'post_eps': expected a finite number >= 0, got an array of size 1 (array)" nested.json
cfg longkey.json "{$base,\"$(head -c 500000 /dev/zero | tr '\0' 'k')\":1}"; gen "longkey.json: unknown field 'kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk... (500000 bytes)'" longkey.json
head -c 2000000 /dev/zero | tr '\0' ' ' > big.json; gen "big.json: is 2000000 bytes, more than the limit of 1 MiB" big.json
gen "/dev/zero: is not a regular file" /dev/zero
gen "/dev/urandom: is not a regular file" /dev/urandom
mkdir adir.json; gen "adir.json: is a directory" adir.json

echo "== command line"
case_ 2 "--output 'good.safetensors': is the input good.safetensors of this run" -- emulate --constants attn.json --inputs good.safetensors --output good.safetensors
case_ 2 "--output 'attn.json': is the input attn.json of this run" -- emulate --constants attn.json --generate 1 --output attn.json
ln -s good.safetensors link.safetensors
case_ 2 "--output 'link.safetensors': is the input good.safetensors" -- emulate --constants attn.json --inputs good.safetensors --output link.safetensors
case_ 2 "--output './out.safetensors': is the input out.safetensors" -- emulate --constants attn.json --inputs out.safetensors --output ./out.safetensors
case_ 2 "--output: an empty path" -- emulate --constants attn.json --generate 1 --output ''
case_ 2 "--output 'adir.json': names a directory" -- emulate --constants attn.json --generate 1 --output adir.json
case_ 2 "--output 'nodir/o.safetensors': its directory does not exist" -- emulate --constants attn.json --generate 1 --output nodir/o.safetensors
case_ 2 "--seed" -- emulate --constants attn.json --generate 1 --seed -1 --output out.safetensors
case_ 2 "--seed" -- emulate --constants attn.json --generate 1 --seed 18446744073709551616 --output out.safetensors
case_ 2 "--seed" -- emulate --constants attn.json --generate 1 --seed 0x10 --output out.safetensors
case_ 2 "--inputs excludes --seed" -- emulate --constants attn.json --inputs good.safetensors --seed 3 --output out.safetensors
case_ 2 "--inputs excludes --stream-dtype" -- emulate --constants attn.json --inputs good.safetensors --stream-dtype bf16 --output out.safetensors
case_ 2 "--generate" -- emulate --constants attn.json --generate 0 --output out.safetensors
case_ 2 "--generate" -- emulate --constants attn.json --generate 2000000 --output out.safetensors
if [ "$(awk '/MemTotal/ {print $2}' /proc/meminfo)" -lt $((190 * 1024 * 1024)) ]; then
  case_ 2 "--generate 1048576: needs about" -- emulate --constants attn.json --generate 1048576 --output out.safetensors
else
  echo "skipped: --generate 1048576 fits in this machine's memory"; cases=$((cases + 1)) skipped=1
fi
case_ 2 "--threads" -- emulate --constants attn.json --generate 1 --threads -1 --output out.safetensors
case_ 2 "--max-mismatches" -- replay "$fixture" --max-mismatches -1
case_ 2 "--report 'attn.json': is the input attn.json" -- --constants attn.json --rows 0 --report attn.json
case_ 2 "--junit 'r.json': is also the output of --report" -- --constants attn.json --rows 0 --report r.json --junit r.json
case_ 2 "--fixtures 'nowhere': not a directory" -- --constants attn.json --rows 0 --fixtures nowhere
case_ 2 "--fixtures 'nowhere': not a directory" -- self-test --constants attn.json --rows 0 --fixtures nowhere
case_ 2 "--seed" -- --constants attn.json --rows 0 --seed -1
case_ 2 "--rows" -- --constants attn.json --rows -1
case_ 2 "--seed" -- self-test --constants attn.json --seed 18446744073709551616

echo "$((cases - failures - ${skipped:-0})) passed, $failures failed, ${skipped:-0} skipped, of $cases cases"
[ "$failures" -eq 0 ]
