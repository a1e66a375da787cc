"""compare_bench.py: boundary_gpu_bench's JSON of two builds, A and B, run alternately in one device
call (verify/bench/ab_bench.sh), as one table per m: each timing's medians, A's runs then B's, and
B / A of the two sides' means.

    python3 verify/bench/compare_bench.py --a A1.json [A2.json ...] --b B1.json [B2.json ...] [--json OUT]

Only figures from the same device and the same method compare: every file must name the same GPU,
launches per graph, replays and gates, and hold the same m (else exit 2, naming the file and the
field). A timing one side lacks (an older bench) is shown as "-". The runs of one side are listed
apart so that their spread, the noise, is seen beside the difference. Exit 0 however B compares
(a slower B is a result); 2 on unreadable or mismatched input.
"""
import argparse
import json
import os
import statistics
import sys

# (JSON key, what the row says) for rows and all_reduce_rows: every timing worth an A/B.
ROW_TIMINGS = (("fused_f32", "fused F32, dispatched"), ("fused_bf16", "fused BF16, dispatched"),
               ("cta_f32", "cta F32"), ("cluster_f32", "cluster F32"),
               ("cluster_balanced_f32", "cluster balanced F32"), ("pair_f32", "pair F32"),
               ("quad_f32", "quad F32"), ("eager_f32", "eager chain F32"),
               ("floor_sm_copy", "SM copy of its bytes, grid-stride"),
               ("floor_sm_copy_dynamic", "SM copy of its bytes, chunks"),
               ("floor_traffic", "its traffic, cluster grid"))
ALL_REDUCE_TIMINGS = (("fused", "all-reduce fused, dispatched"), ("all_reduce_then_draft", "all-reduce chain"),
                      ("cluster", "all-reduce cluster"), ("pair", "all-reduce pair"), ("quad", "all-reduce quad"),
                      ("floor_traffic", "all-reduce traffic, cluster grid"))
SAME = (("device", "name"), ("method", "launches_per_graph"), ("method", "replays"), ("method", "gates"))


class InputProblem(Exception):
    pass


def load(path):
    try:
        with open(path) as f:
            bench = json.load(f)
    except (OSError, ValueError) as e:
        raise InputProblem(f"{path}: not a readable boundary_gpu_bench JSON ({e})")
    if not isinstance(bench, dict) or not isinstance(bench.get("rows"), list):
        raise InputProblem(f"{path}: no 'rows' list: not boundary_gpu_bench's JSON")
    return bench


def field(bench, path, section, key):
    value = bench.get(section, {}).get(key) if isinstance(bench.get(section), dict) else None
    if section == "method" and key == "gates" and value is None:
        value = "auto"  # JSON written before --gates: the dispatcher's
    if value is None:
        raise InputProblem(f"{path}: no '{section}.{key}'")
    return value


def median_us(record, key):
    t = record.get(key)
    return t["median_us"] if isinstance(t, dict) and "median_us" in t else None


def by_m(bench, section):
    return {r["m"]: r for r in bench.get(section, [])}


def check_same(files):
    first_path, first = files[0]
    want = {s: field(first, first_path, *s) for s in SAME}
    ms = sorted(by_m(first, "rows"))
    for path, bench in files[1:]:
        for s in SAME:
            got = field(bench, path, *s)
            if got != want[s]:
                raise InputProblem(f"{path}: '{s[0]}.{s[1]}' is {got!r}, {first_path} has {want[s]!r}: "
                                   "only runs of the same device and method compare")
        if sorted(by_m(bench, "rows")) != ms:
            raise InputProblem(f"{path}: rows m = {sorted(by_m(bench, 'rows'))}, {first_path} has m = {ms}")
    return want, ms


def compare(a_files, b_files):
    want, ms = check_same(a_files + b_files)
    lines = []
    for section, timings in (("rows", ROW_TIMINGS), ("all_reduce_rows", ALL_REDUCE_TIMINGS)):
        for m in ms:
            a_rows = [by_m(b, section).get(m) for _, b in a_files]
            b_rows = [by_m(b, section).get(m) for _, b in b_files]
            if all(r is None for r in a_rows + b_rows):
                continue
            for key, what in timings:
                a = [median_us(r, key) for r in a_rows if r is not None]
                b = [median_us(r, key) for r in b_rows if r is not None]
                a, b = [x for x in a if x is not None], [x for x in b if x is not None]
                if not a and not b:
                    continue
                ratio = statistics.mean(b) / statistics.mean(a) if a and b else None
                lines.append({"m": m, "timing": what, "key": f"{section}.{key}", "a_us": a, "b_us": b,
                              "b_over_a": ratio})
    return {"device": want[("device", "name")], "gates": want[("method", "gates")], "lines": lines}


def table(result):
    def runs(xs):
        return " ".join(f"{x:.2f}" for x in xs) if xs else "-"
    out = [f"{result['device']}, gates {result['gates']}: us per boundary (medians), A's runs | B's runs | B / A of their means",
           "| m | timing | A | B | B / A |", "| ---: | --- | ---: | ---: | ---: |"]
    for r in result["lines"]:
        ratio = "-" if r["b_over_a"] is None else f"{r['b_over_a']:.3f}"
        out.append(f"| {r['m']} | {r['timing']} | {runs(r['a_us'])} | {runs(r['b_us'])} | {ratio} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", nargs="+", required=True, help="build A's bench JSON, one per run")
    ap.add_argument("--b", nargs="+", required=True, help="build B's bench JSON, one per run")
    ap.add_argument("--json", help="also write the comparison as JSON here")
    args = ap.parse_args()
    try:
        if args.json and os.path.exists(args.json) and any(os.path.samefile(args.json, p)
                                                           for p in args.a + args.b if os.path.exists(p)):
            raise InputProblem(f"--json {args.json} is one of the inputs: not overwritten")
        result = compare([(p, load(p)) for p in args.a], [(p, load(p)) for p in args.b])
    except InputProblem as e:
        print(f"compare_bench: {e}", file=sys.stderr)
        return 2
    print(table(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
