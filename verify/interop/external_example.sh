#!/usr/bin/env bash
# The worked example of checking an implementation the toolkit did not build (README: checking any
# implementation), on the GPU machine, for the post-FFN boundary. Reports and JUnit go to LOGS.
#   external_example.sh MODE BOUNDARY_VERIFY LOGS
# MODE
#   quick    this project's fused kernel as the gate's --implementation (`boundary-verify kernel`,
#            one process per case): must pass, exit 0; then the plain PyTorch boundary, eager, over
#            every case of an export in one process, judged by check: it sums in another order, so
#            check must exit 1 (exit 0 or 2 fails the step). About 40 s.
#   compile  torch.compile of the same boundary over the edge suites (export --suite edge), by check.
#   gate     the eager PyTorch boundary as the gate's --implementation: one Python process per case
#            (about 60 cases), the first mismatch shrunk with at most 20 reruns. Minutes.
set -u
mode=$1 bin=$2 logs=$3
ffn=fixtures/constants/muse-spark-post-ffn.json
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
torch_impl="python3 verify/interop/torch_external.py"
failed=0
expect() {  # expect CODE NAME COMMAND...: runs COMMAND, fails the step unless it exits CODE
  local code=$1 name=$2; shift 2
  "$@"
  local rc=$?
  echo "== $name: exit $rc (expected $code)"
  [ "$rc" -eq "$code" ] || failed=$((failed + 1))
}
torch_check() {  # torch_check IMPL EXPORT-OPTIONS...: export, the torch boundary in one process, check
  local impl=$1; shift
  "$bin" export --constants "$ffn" --dir "$work/cases-$impl" "$@" || { failed=$((failed + 1)); return; }
  $torch_impl --impl "$impl" --cases "$work/cases-$impl" --outputs "$work/out-$impl" || { failed=$((failed + 1)); return; }
  expect 1 "torch $impl: check" "$bin" check --constants "$ffn" --cases "$work/cases-$impl" --outputs "$work/out-$impl" \
    --report "$logs/external_torch_$impl.json" --junit "$logs/external_torch_$impl.xml"
}
case $mode in
  quick)
    expect 0 "fused kernel: gate --implementation" "$bin" --constants "$ffn" --rows 256 --quiet \
      --implementation "$bin kernel --inputs {inputs} --output {output}" \
      --report "$logs/external_fused.json" --junit "$logs/external_fused.xml"
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print("fused kernel:", r["counts"])' "$logs/external_fused.json"
    torch_check eager --rows 256
    ;;
  compile)
    torch_check compile --suite edge
    ;;
  gate)
    expect 1 "torch eager: gate --implementation" "$bin" --constants "$ffn" --rows 64 --shrink-calls 20 \
      --implementation "$torch_impl --impl eager {inputs} {output}" \
      --report "$logs/external_torch_gate.json" --junit "$logs/external_torch_gate.xml"
    ;;
  *) echo "MODE: quick, compile or gate" >&2; exit 2 ;;
esac
exit "$failed"
