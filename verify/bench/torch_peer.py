"""torch_peer.py: the peer of boundary_gpu_bench, timed the same way on the same GPU.

The boundary written as plain PyTorch (verify/interop/torch_boundary.py), eager and
`torch.compile`d, with the benchmark's constants, shapes and dtypes: FP32 and BF16 stream, stored;
and the all-reduce boundary's peer (R partials summed in rank order in FP32, then the boundary).
Like the benchmark: CUDA graphs of N boundaries (20, and 1), replayed, the median of the replays'
per-boundary times; one buffer set (L2-resident, as in decode) for m < 1024, sets rotated from HBM
above. torch.compile is asked for one static specialization per shape (dynamic=False), the fastest
kernels it makes; its compile time is reported, not timed.

    python3 verify/bench/torch_peer.py --constants C.json [--rows 1,8,32,132,1024,8192] [--ranks 8]
                                        [--launches 20] [--json F]
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "verify", "interop"))
import torch_boundary  # noqa: E402

H = 8192
ROTATE_FROM_ROWS = 1024  # as boundary_gpu_bench: smaller batches stay L2-resident
L2_MULTIPLE = 4.0        # rotated sets: one replay touches this many L2 capacities


def make_operands(constants, gen):
    dev = "cuda"
    q = (torch.randn(H, generator=gen, device=dev) * 0.5).to(torch.bfloat16).float()
    u = q / 0.3
    beta = torch.sigmoid(u)
    alpha = torch.sqrt(torch.clamp(torch.sigmoid(-u) * (1 + beta), min=1e-3))
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
    weights = {}
    for side in ("post", "pre"):
        if constants.get(f"{side}_gain_center") is None:
            weights[side] = None
        else:
            w = torch.randn(H, generator=gen, device=dev) * 0.05
            weights[side] = w.to(dtypes[constants[f"{side}_weight_dtype"]])
    return alpha.contiguous(), beta.contiguous(), weights["post"], weights["pre"]


def buffer_sets(m, set_bytes, l2_bytes):
    if m < ROTATE_FROM_ROWS:
        return 1
    return max(2, min(64, math.ceil(L2_MULTIPLE * l2_bytes / set_bytes)))


def make_sets(m, stream_dtype, ranks, n, gen):
    sets = []
    for _ in range(n):
        stream = torch.randn(m, H, generator=gen, device="cuda").to(stream_dtype)
        if ranks:
            branch = (torch.randn(ranks, m, H, generator=gen, device="cuda")).to(torch.bfloat16)
        else:
            branch = torch.randn(m, H, generator=gen, device="cuda").to(torch.bfloat16)
        sets.append((branch, stream))
    return sets


def time_graph(fn, sets, launches, replays=50, warmup=5):
    """Per-boundary microseconds: a graph of `launches` calls over the rotated sets, replayed."""
    launches = (launches + len(sets) - 1) // len(sets) * len(sets)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(3):  # warm-up outside the capture: compilation, autotuning, allocations
            fn(*sets[i % len(sets)])
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(launches):
            fn(*sets[i % len(sets)])
    for _ in range(warmup):
        graph.replay()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
    for r in range(replays):
        starts[r].record()
        graph.replay()
        stops[r].record()
    torch.cuda.synchronize()
    per = [1000.0 * s.elapsed_time(e) / launches for s, e in zip(starts, stops)]
    del graph
    return {"median_us": statistics.median(per), "min_us": min(per), "launches_per_graph": launches}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--constants", required=True)
    ap.add_argument("--rows", default="1,8,32,132,1024,8192")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--launches", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    with open(args.constants) as f:
        constants = json.load(f)
    torch._dynamo.config.cache_size_limit = 256  # one specialization per shape, never a fallback
    torch.backends.cuda.matmul.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    gen = torch.Generator(device="cuda").manual_seed(1)
    alpha, beta, post_w, pre_w = make_operands(constants, gen)

    def plain(branch, stream):
        return torch_boundary.boundary(branch, stream, alpha, beta, post_w, pre_w, constants)

    def plain_all_reduce(partials, stream):
        return torch_boundary.all_reduce_boundary(partials, stream, alpha, beta, post_w, pre_w, constants)

    compiled = torch.compile(plain, dynamic=False)
    compiled_all_reduce = torch.compile(plain_all_reduce, dynamic=False)
    result = {"device": props.name, "torch": torch.__version__, "constants": args.constants,
              "method": {"launches_per_graph": args.launches, "rotate_from_rows": ROTATE_FROM_ROWS,
                         "compile": "torch.compile(dynamic=False), default mode"},
              "rows": []}
    for m in [int(x) for x in args.rows.split(",")]:
        row = {"m": m}
        for name, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
            set_bytes = m * H * (2 + dtype.itemsize + 4 + 2)
            sets = make_sets(m, dtype, 0, buffer_sets(m, set_bytes, props.L2_cache_size), gen)
            t0 = time.time()
            compiled(*sets[0])
            torch.cuda.synchronize()
            row[f"compile_seconds_{name}"] = time.time() - t0
            row[f"compile_{name}"] = time_graph(compiled, sets, args.launches)
            row[f"eager_{name}"] = time_graph(plain, sets, args.launches)
            if name == "f32":
                row["compile_f32_one_per_graph"] = time_graph(compiled, sets, 1)
            del sets
        if args.ranks:
            set_bytes = m * H * (2 * args.ranks + 4 + 4 + 2)
            sets = make_sets(m, torch.float32, args.ranks, buffer_sets(m, set_bytes, props.L2_cache_size), gen)
            row["all_reduce_ranks"] = args.ranks
            row["all_reduce_compile_f32"] = time_graph(compiled_all_reduce, sets, args.launches)
            row["all_reduce_eager_f32"] = time_graph(plain_all_reduce, sets, args.launches)
            del sets
        torch.cuda.empty_cache()
        result["rows"].append(row)
        print(f"m = {m}: compile f32 {row['compile_f32']['median_us']:.2f} us, bf16 {row['compile_bf16']['median_us']:.2f} us,"
              f" eager f32 {row['eager_f32']['median_us']:.2f} us"
              + (f", all-reduce compile {row['all_reduce_compile_f32']['median_us']:.2f} us" if args.ranks else ""),
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
