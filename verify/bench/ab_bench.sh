#!/usr/bin/env bash
# Two or more builds' kernels timed in one device call, alternately (A B A B ...), so that their difference
# is measured on the same GPU, clocks and neighbours, never across calls. Two steps:
#
#   here:     bash verify/bench/ab_bench.sh export REV DIR
#             REV's tracked files into DIR (a new folder; under .ab/, which git ignores, it can be
#             carried to the device), without the captured fixtures the bench does not read
#   device:   bash verify/bench/ab_bench.sh run DIR_A DIR_B[,DIR_C...] OUTDIR [ROUNDS] -- BENCH_ARGS...
#             builds boundary_gpu_bench in each tree (. is the working tree), runs it ROUNDS times
#             (default 2) each, alternating, with BENCH_ARGS (e.g. --rows 1024,8192 --ranks 8), each
#             run's JSON and log packed into OUTDIR/runs.tar.gz (a1.json, a1.log, b1.json, ...),
#             then compare_bench.py's table of A against each other tree, and last each tree's
#             dispatched rows against A (the end of the output, which a device call returns).
#             Up to four trees after A, comma separated (sides b, c, d, e; OUTDIR/compare.json,
#             compare_c.json, ...): every lead of one device call judged against one build of A,
#             in the same alternation, at no more builds of A and its runs
#
# For example, main against the working tree: `bash verify/bench/ab_bench.sh export main .ab/main`
# here, then with the device tool, from the repository root, carrying .debs (verify/device.sh's
# dependencies) and .ab: run(command="bash verify/bench/ab_bench.sh run .ab/main . $OUT -- --rows
# 1024,8192 --ranks 8", carry=[".debs", ".ab"]). Each bench run gets at most AB_RUN_TIMEOUT seconds
# (default 240; a run of 5 m with --ranks 8 takes 30 to 40 s on an H100): a kernel that hangs
# then ends the comparison instead of holding the device call to its limit. Exit codes: 0
# compared, 1 a build or a bench run failed or timed out, 2 usage or input. The builds go to
# AB_BUILD_DIR/ab-build-SIDE (default /tmp).
set -uo pipefail
usage() { sed -n '2,/^set /p' "$0" | grep '^#' >&2; exit 2; }
[ $# -ge 1 ] || usage
here=$(cd "$(dirname "$0")/../.." && pwd)

case $1 in
  export)
    [ $# -eq 3 ] || usage
    rev=$2 dir=$3
    [ ! -e "$dir" ] || { echo "ab_bench: $dir exists: not overwritten" >&2; exit 2; }
    mkdir -p "$dir" || exit 2
    git -C "$here" archive "$rev" | tar -x -C "$dir" --exclude='fixtures/boundary/*' || { rm -rf "$dir"; echo "ab_bench: cannot export $rev" >&2; exit 2; }
    echo "ab_bench: $rev ($(git -C "$here" rev-parse --short "$rev")) in $dir"
    ;;
  run)
    [ $# -ge 4 ] || usage
    a=$2 list=$3 out=$4
    IFS=, read -r -a others <<< "$list"
    shift 4
    rounds=2
    if [ $# -ge 1 ] && [ "$1" != "--" ]; then rounds=$1; shift; fi
    [ $# -ge 1 ] && [ "$1" = "--" ] && shift
    case $rounds in ''|*[!0-9]*|0) echo "ab_bench: ROUNDS must be a positive count, not '$rounds'" >&2; exit 2;; esac
    limit=${AB_RUN_TIMEOUT:-240}
    case $limit in ''|*[!0-9]*|0) echo "ab_bench: AB_RUN_TIMEOUT must be a positive number of seconds, not '$limit'" >&2; exit 2;; esac
    [ ${#others[@]} -ge 1 ] && [ ${#others[@]} -le 4 ] || { echo "ab_bench: DIR_B is one to four trees, comma separated, not '$list'" >&2; exit 2; }
    trees=("$a" "${others[@]}") sides=(a b c d e)
    for d in "${trees[@]}"; do
      [ -n "$d" ] || { echo "ab_bench: an empty tree name in '$list'" >&2; exit 2; }
      [ -f "$d/CMakeLists.txt" ] || { echo "ab_bench: $d is not a source tree" >&2; exit 2; }
    done
    builds=${AB_BUILD_DIR:-/tmp}
    mkdir -p "$out" "$builds" /tmp/deps || exit 2
    if [ -d "$here/.debs" ]; then for f in "$here"/.debs/*.deb; do dpkg -x "$f" /tmp/deps; done; fi
    jobs=$(( ($(nproc) + ${#trees[@]} - 1) / ${#trees[@]} ))
    build() {  # build TREE DIR: the bench alone, the cores shared (every tree builds at once)
      cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=/tmp/deps/usr \
        -DBOUNDARY_PYTHON=OFF -DBOUNDARY_TESTS=OFF > "$2.log" 2>&1 &&
        cmake --build "$2" --target boundary_gpu_bench -j "$jobs" >> "$2.log" 2>&1
    }
    pids=()
    for i in "${!trees[@]}"; do build "${trees[$i]}" "$builds/ab-build-${sides[$i]}" & pids+=($!); done
    failed=0
    for i in "${!trees[@]}"; do
      wait "${pids[$i]}" || { echo "ab_bench: building ${sides[$i]^^} (${trees[$i]}) failed:" >&2; tail -20 "$builds/ab-build-${sides[$i]}.log" >&2; failed=1; }
    done
    [ $failed -eq 0 ] || exit 1
    for r in $(seq 1 "$rounds"); do
      for i in "${!trees[@]}"; do
        side=${sides[$i]}
        start=$SECONDS
        timeout "$limit" "$builds/ab-build-$side/verify/bench/boundary_gpu_bench" "$@" --json "$out/$side$r.json" > "$out/$side$r.log" 2>&1
        rc=$?
        echo "ab_bench: $side round $r: exit $rc, $((SECONDS - start)) s"
        [ $rc -ne 124 ] || echo "ab_bench: $side round $r timed out after $limit s (AB_RUN_TIMEOUT): a kernel that hangs?" >&2
        [ $rc -eq 0 ] || { tail -5 "$out/$side$r.log" >&2; exit 1; }
      done
    done
    summary=""
    for i in $(seq 1 $(( ${#trees[@]} - 1 ))); do
      side=${sides[$i]} json=$out/compare.json
      [ "$side" = b ] || json=$out/compare_$side.json
      echo "ab_bench: A (${trees[0]}) against ${side^^} (${trees[$i]})"
      table=$(python3 "$here/verify/bench/compare_bench.py" --a "$out"/a[0-9]*.json --b "$out/$side"[0-9]*.json --json "$json") || exit 2
      echo "$table"
      summary+=$'\n'"A against ${side^^} (${trees[$i]}):"$'\n'"$(grep -F 'dispatched' <<< "$table")"
    done
    # Last, so that the end of the output (all a device call may show) holds every tree's figures
    # as the dispatch gives them; the runs' files packed into one (the device tool returns few files).
    echo "ab_bench: the dispatched rows, each tree against A:$summary"
    (
      cd "$out" || exit 1
      runs=()
      for side in "${sides[@]:0:${#trees[@]}}"; do runs+=("$side"[0-9]*.json "$side"[0-9]*.log); done
      tar czf runs.tar.gz "${runs[@]}" && rm -f "${runs[@]}"
    ) || exit 1
    ;;
  *) usage ;;
esac
