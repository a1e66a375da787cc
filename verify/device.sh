#!/usr/bin/env bash
# The one script for the device machine (a GPU): builds everything, runs every test (CPU and
# GPU), the hardware checks and the benchmarks, and leaves the logs in $OUT (or the first
# argument). Called through the device tool from the repository root, carrying .debs:
#   bash verify/device.sh
# Each step's log is kept; a failing step does not stop the later ones, and the exit code is
# the number of failed steps (0: everything passed). SKIP="name ..." leaves those steps out (the
# device tool's calls are limited to 10 minutes: the 2^32 hardware checks need not rerun each time);
# ONLY="name ..." runs just those (configure and build always run), and the build makes only the
# programs they run (step_targets): a device call spent on the benchmark compiles no test.
# A name in SKIP or ONLY that is no step is refused before anything runs (exit 64), so that a typo
# never leaves a step out unnoticed.
# The benchmark's numbers land in $out/gpu_bench.json, torch.compile's in $out/torch_peer.json, and
# both side by side in $out/bench_combined.json (the table is in the bench_combined log).
set -uo pipefail
steps=(configure build cpu_tests gpu_tests replay_gpu capture_fixtures interop nan_probe emulator_vs_hardware
  emulator_bench gpu_bench torch_peer bench_combined gpu_bench_one_launch sass gate_post-ffn self_test_post-ffn
  gate_post-attention self_test_post-attention external_torch external_torch_compile external_torch_gate)
is_step() { local s; for s in "${steps[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
for name in ${SKIP:-} ${ONLY:-}; do
  is_step "$name" || { echo "device.sh: '$name' (SKIP or ONLY) is not a step; the steps: ${steps[*]}" >&2; exit 64; }
done
# The build targets a step runs: nothing where it runs Python on earlier steps' files; "all" for
# the tests (every program they build) and for any step not named here.
step_targets() {
  case $1 in
    configure | torch_peer | bench_combined) ;;
    replay_gpu | capture_fixtures | interop | gate_* | self_test_* | external_*) echo boundary-verify ;;
    nan_probe | emulator_vs_hardware) echo "boundary_$1" ;;
    emulator_bench) echo boundary_emulator_bench ;;
    gpu_bench | gpu_bench_one_launch) echo boundary_gpu_bench ;;
    sass) echo boundary_kernels ;;
    *) echo all ;;
  esac
}
out=${1:-${OUT:?set OUT or pass a log directory}}
logs=$out/logs  # one log per step; packed into $out/logs.tar.gz at the end (the device tool returns few files)
mkdir -p "$logs"
jobs=$(nproc)
failed=0
# The build: everything, unless ONLY is set and none of its steps runs the tests; then only the
# programs its steps run (nothing when they run none).
build=(cmake --build build-device -j "$jobs")
if [ -n "${ONLY:-}" ]; then
  declare -A wanted=()
  for name in $ONLY; do for t in $(step_targets "$name"); do wanted[$t]=1; done; done
  if [ ${#wanted[@]} -eq 0 ]; then
    build=(echo "nothing to build: the steps in ONLY run no program")
  elif [ -z "${wanted[all]:-}" ]; then
    build+=(--target $(printf '%s\n' "${!wanted[@]}" | LC_ALL=C sort))
  fi
fi
step() {  # step NAME COMMAND...: runs COMMAND, output to $out/NAME.log and the console
  local name=$1; shift
  is_step "$name" || { echo "device.sh: step $name is missing from steps=(...)" >&2; exit 64; }
  case " ${SKIP:-} " in *" $name "*) echo "== $name: skipped (SKIP)"; return;; esac
  if [ -n "${ONLY:-}" ] && [ "$name" != configure ] && [ "$name" != build ]; then
    case " $ONLY " in *" $name "*) ;; *) echo "== $name: skipped (not in ONLY)"; return;; esac
  fi
  echo "== $name: $*"
  local start=$SECONDS
  "$@" > "$logs/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$logs/$name.log"
  echo "== $name: exit $rc, $((SECONDS - start)) s"
  [ $rc -eq 0 ] || failed=$((failed + 1))
}

if [ -d .debs ]; then  # the header-only dependencies, carried as Debian packages
  for f in .debs/*.deb; do dpkg -x "$f" /tmp/deps; done
fi
nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.sm,clocks.mem --format=csv > "$logs/gpu.txt" 2>&1
cat "$logs/gpu.txt"

# The Python package is CI's (Debian's pybind11 and numpy); this machine's Python is PyTorch's.
step configure cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=/tmp/deps/usr -DBOUNDARY_PYTHON=OFF
step build "${build[@]}"
step cpu_tests ctest --test-dir build-device -L cpu --output-on-failure -j 8
step gpu_tests ctest --test-dir build-device -L gpu --output-on-failure -V
step replay_gpu build-device/verify/boundary-verify replay fixtures/boundary/*.safetensors --gpu --report "$logs/replay_report.json"
step capture_fixtures fixtures/capture.sh build-device/verify/boundary-verify "$out/fixtures"
step interop bash -c 'python3 verify/interop/load_fixtures.py "$0" "$1"/*.safetensors' build-device/verify/boundary-verify "$out/fixtures"
step nan_probe build-device/hardware/boundary_nan_probe
step emulator_vs_hardware build-device/hardware/boundary_emulator_vs_hardware
step emulator_bench build-device/reference/boundary_emulator_bench --rows 4000
step gpu_bench build-device/verify/bench/boundary_gpu_bench --json "$out/gpu_bench.json"
# The peer in the same run: the plain PyTorch boundary, eager and torch.compile'd, then one table.
step torch_peer python3 verify/bench/torch_peer.py --constants fixtures/constants/muse-spark-post-ffn.json \
  --json "$out/torch_peer.json"
step bench_combined python3 verify/bench/combine_bench.py "$out/gpu_bench.json" "$out/torch_peer.json" \
  --json "$out/bench_combined.json"
step gpu_bench_one_launch build-device/verify/bench/boundary_gpu_bench --launches 1 --rows 1,8,32,132
step sass bash -c 'cuobjdump -sass build-device/kernels/libboundary_kernels.a > "$0/kernels.sass" && verify/sass_summary.sh "$0/kernels.sass"' "$logs"
for boundary in post-ffn post-attention; do
  step "gate_$boundary" timeout 300 build-device/verify/boundary-verify --constants "fixtures/constants/muse-spark-$boundary.json" \
    --report "$logs/gate_$boundary.json" --junit "$logs/gate_$boundary.xml" --progress
  step "self_test_$boundary" timeout 300 build-device/verify/boundary-verify self-test --constants "fixtures/constants/muse-spark-$boundary.json"
done
# Checking an implementation the toolkit did not build: the fused kernel through the external path,
# the plain PyTorch boundary eager (quick, ~40 s), compiled, and as the gate's --implementation (minutes).
step external_torch bash verify/interop/external_example.sh quick build-device/verify/boundary-verify "$logs"
step external_torch_compile bash verify/interop/external_example.sh compile build-device/verify/boundary-verify "$logs"
step external_torch_gate timeout 500 bash verify/interop/external_example.sh gate build-device/verify/boundary-verify "$logs"
if [ -d "$out/fixtures" ]; then tar cf "$out/fixtures.tar" -C "$out" fixtures && rm -rf "$out/fixtures"; fi  # not there when capture_fixtures is skipped
tar czf "$out/logs.tar.gz" -C "$out" logs && rm -rf "$logs"
echo "failed steps: $failed"
exit "$failed"
