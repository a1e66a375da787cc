"""combine_bench.py: boundary_gpu_bench's JSON and torch_peer.py's JSON, from one device run, as one
JSON and one table, with the targets that need both sides (fused against torch.compile).

    python3 verify/bench/combine_bench.py GPU_BENCH.json TORCH_PEER.json [--json OUT.json]

Every "% of SM copy" is of the faster of the bench's two 2 GiB SM copies (grid-stride, and chunks
handed out at run time), and "SM copy of its bytes" is the faster of its two per-m copies: SMs stream
at different rates, and a statically divided copy waits for the slowest. With a BF16 stream the copy
of its bytes reads the BF16 stream and writes the F32 new_stream, as the boundary does (absent from
JSON written before it: shown as "-").

Exit code 0 whatever the targets say (a missed target is a result); 2 if an input is missing a row.
"""
import argparse
import json
import sys

COMPILE_RATIO_ROWS = (1, 8, 32, 132)  # fused <= 0.8 x torch.compile (20-boundary graph)
COMPILE_RATIO = 0.8
LATENCY_ROWS_UP_TO = 32               # fused <= 2.0 us per boundary
LATENCY_US = 2.0
COPY_ROWS = (1024, 8192)              # fused >= 92% of the SM copy bandwidth
COPY_SHARE = 0.92
AR_CHAIN_RATIO = 0.85                 # fused all-reduce <= 0.85 x its chain, every m
AR_COPY_ROWS = 8192                   # ... and >= 90% of the SM copy there
AR_COPY_SHARE = 0.90
DIVISIONS = (("", "grid-stride"), ("_dynamic", "chunks at run time"))  # key suffix, how the copy divides its work


def faster_copy(record, key, median_us):
    """The faster of record[key] (grid-stride) and record[key + "_dynamic"] (chunks handed out at run
    time; absent from JSON written before it), as (its division, it); a tie keeps the grid-stride."""
    copies = [(name, record[key + suffix]) for suffix, name in DIVISIONS if key + suffix in record]
    return min(copies, key=lambda c: median_us(c[1]))


def fmt(value, spec):
    """value formatted by spec, or "-" where the input had no such figure."""
    return "-" if value is None else spec.format(value)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gpu_bench")
    ap.add_argument("torch_peer")
    ap.add_argument("--json")
    args = ap.parse_args()
    with open(args.gpu_bench) as f:
        bench = json.load(f)
    with open(args.torch_peer) as f:
        peer = json.load(f)
    copy_division, ceiling = faster_copy(bench, "sm_copy", lambda c: c["time"]["median_us"])
    copy = ceiling["gbps_median"]
    peer_rows = {r["m"]: r for r in peer["rows"]}
    ar_rows = {r["m"]: r for r in bench.get("all_reduce_rows", [])}
    rows, targets = [], []

    def target(name, m, measured, limit, passed):
        targets.append({"name": name, "m": m, "measured": measured, "limit": limit, "pass": bool(passed)})

    for b in bench["rows"]:
        m = b["m"]
        if m not in peer_rows:
            print(f"combine_bench: torch_peer has no row m = {m}", file=sys.stderr)
            return 2
        p = peer_rows[m]
        fused, fused_bf16 = b["fused_f32"]["median_us"], b["fused_bf16"]["median_us"]
        comp, comp_bf16 = p["compile_f32"]["median_us"], p["compile_bf16"]["median_us"]
        gbps = lambda us, key="min_bytes_f32": b[key] / (us * 1e3)  # noqa: E731
        its_division, its_copy = faster_copy(b, "floor_sm_copy", lambda t: t["median_us"])
        # An older bench has no placement: its cluster layout was placed spread.
        layout = b["layout"] + (" balanced" if b.get("placement") == "balanced" else "")
        row = {"m": m, "layout": layout, "fused_f32_us": fused, "fused_bf16_us": fused_bf16,
               "cta_f32_us": b["cta_f32"]["median_us"], "cluster_f32_us": b["cluster_f32"]["median_us"],
               "eager_chain_us": b["eager_f32"]["median_us"], "sm_copy_of_its_bytes_us": its_copy["median_us"],
               "sm_copy_of_its_bytes_division": its_division,
               "sm_copy_of_its_bytes_grid_stride_us": b["floor_sm_copy"]["median_us"],
               "compile_f32_us": comp, "compile_bf16_us": comp_bf16, "torch_eager_f32_us": p["eager_f32"]["median_us"],
               "compile_f32_one_per_graph_us": p["compile_f32_one_per_graph"]["median_us"],
               "fused_over_compile": fused / comp, "fused_over_sm_copy_of_its_bytes": fused / its_copy["median_us"], "fused_bf16_over_compile_bf16": fused_bf16 / comp_bf16,
               "fused_percent_of_sm_copy": 100 * gbps(fused) / copy,
               "compile_percent_of_sm_copy": 100 * gbps(comp) / copy,
               "fused_bf16_percent_of_sm_copy": 100 * gbps(fused_bf16, "min_bytes_bf16") / copy}
        if "floor_sm_copy_dynamic" in b:
            row["sm_copy_of_its_bytes_dynamic_us"] = b["floor_sm_copy_dynamic"]["median_us"]
        if "floor_sm_copy_bf16" in b:
            bf16_division, bf16_copy = faster_copy(b, "floor_sm_copy_bf16", lambda t: t["median_us"])
            row.update({"bf16_sm_copy_of_its_bytes_us": bf16_copy["median_us"],
                        "bf16_sm_copy_of_its_bytes_division": bf16_division,
                        "fused_bf16_over_sm_copy_of_its_bytes": fused_bf16 / bf16_copy["median_us"]})
        if m in ar_rows:
            a = ar_rows[m]
            ar_fused, ar_chain = a["fused"]["median_us"], a["all_reduce_then_draft"]["median_us"]
            ar_comp = p["all_reduce_compile_f32"]["median_us"]
            row.update({"all_reduce_ranks": a["ranks"], "all_reduce_fused_us": ar_fused, "all_reduce_chain_us": ar_chain,
                        "all_reduce_compile_us": ar_comp, "all_reduce_fused_over_chain": ar_fused / ar_chain,
                        "all_reduce_fused_over_compile": ar_fused / ar_comp,
                        "all_reduce_percent_of_sm_copy": 100 * a["min_bytes"] / (ar_fused * 1e3) / copy})
            target("all-reduce fused / chain", m, ar_fused / ar_chain, AR_CHAIN_RATIO, ar_fused / ar_chain <= AR_CHAIN_RATIO)
            if m == AR_COPY_ROWS:
                share = row["all_reduce_percent_of_sm_copy"] / 100
                target("all-reduce fused / SM copy bandwidth", m, share, AR_COPY_SHARE, share >= AR_COPY_SHARE)
        if m in COMPILE_RATIO_ROWS:
            target("fused / torch.compile", m, fused / comp, COMPILE_RATIO, fused / comp <= COMPILE_RATIO)
        if m <= LATENCY_ROWS_UP_TO:
            target("fused us per boundary", m, fused, LATENCY_US, fused <= LATENCY_US)
        if m in COPY_ROWS:
            share = row["fused_percent_of_sm_copy"] / 100
            target("fused / SM copy bandwidth", m, share, COPY_SHARE, share >= COPY_SHARE)
        rows.append(row)

    others = [f"{name} {bench['sm_copy' + suffix]['gbps_median']:.1f}" for suffix, name in DIVISIONS
              if name != copy_division and "sm_copy" + suffix in bench]
    print(f"\n{bench['device']['name']}: SM copy {copy:.1f} GB/s ({'; '.join([copy_division] + others)}),"
          f" cudaMemcpyAsync {bench['memcpy_copy']['gbps_median']:.1f} GB/s;"
          f" torch {peer['torch']}; medians of CUDA-graph replays, us per boundary"
          f" ({bench['method']['launches_per_graph']} per graph)")
    print("| m | layout | fused F32 | torch.compile F32 | fused / compile | fused BF16 | compile BF16 | eager chain |"
          " torch eager | % of SM copy (fused) | % of SM copy (compile) | SM copy of its bytes | its division |"
          " fused / that copy | BF16: % of SM copy (fused) | BF16: SM copy of its bytes | fused BF16 / that copy |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |"
          " ---: |")
    for r in rows:
        print(f"| {r['m']} | {r['layout']} | {r['fused_f32_us']:.2f} | {r['compile_f32_us']:.2f} | {r['fused_over_compile']:.2f}x |"
              f" {r['fused_bf16_us']:.2f} | {r['compile_bf16_us']:.2f} | {r['eager_chain_us']:.2f} | {r['torch_eager_f32_us']:.2f} |"
              f" {r['fused_percent_of_sm_copy']:.1f}% | {r['compile_percent_of_sm_copy']:.1f}% |"
              f" {r['sm_copy_of_its_bytes_us']:.2f} | {r['sm_copy_of_its_bytes_division']} |"
              f" {r['fused_over_sm_copy_of_its_bytes']:.2f}x | {r['fused_bf16_percent_of_sm_copy']:.1f}% |"
              f" {fmt(r.get('bf16_sm_copy_of_its_bytes_us'), '{:.2f}')} |"
              f" {fmt(r.get('fused_bf16_over_sm_copy_of_its_bytes'), '{:.2f}x')} |")
    print("% of SM copy: of the faster 2 GiB SM copy (named above); SM copy of its bytes: the faster of its"
          " grid-stride copy and its copy with chunks handed out at run time (its division; BF16: BF16 stream"
          " read, F32 new_stream written)")
    if any("all_reduce_fused_us" in r for r in rows):
        print("\nall-reduce boundary, R = %d (F32 stream stored)" % rows[0].get("all_reduce_ranks", 0))
        print("| m | fused | all-reduce + DraftBoundary | torch.compile | fused / chain | fused / compile | % of SM copy |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in rows:
            if "all_reduce_fused_us" in r:
                print(f"| {r['m']} | {r['all_reduce_fused_us']:.2f} | {r['all_reduce_chain_us']:.2f} | {r['all_reduce_compile_us']:.2f} |"
                      f" {r['all_reduce_fused_over_chain']:.2f}x | {r['all_reduce_fused_over_compile']:.2f}x |"
                      f" {r['all_reduce_percent_of_sm_copy']:.1f}% |")
    print()
    for t in targets:
        print(f"  {'PASS' if t['pass'] else 'MISS'} m = {t['m']:<5} {t['name']} = {t['measured']:.3f}"
              f" ({'at least' if 'copy' in t['name'] else 'limit'} {t['limit']})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu_bench": bench, "torch_peer": peer, "rows": rows, "targets": targets}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
