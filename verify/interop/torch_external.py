"""The plain PyTorch boundary (torch_boundary.py) on CUDA as an external implementation: it reads case
files of `boundary-verify export` and writes `out` and, when the case stores the stream, `new_stream`,
as `check` and the gate's `--implementation` read them. What the gate reports for it is what a
bitwise gate says of code that sums in another order.

    # one case per process, as the gate's --implementation runs it:
    boundary-verify --constants C --implementation 'python3 verify/interop/torch_external.py --impl eager {inputs} {output}'
    # every case of an export in one process (torch starts once), then check:
    python3 verify/interop/torch_external.py --impl compile --cases CASES --outputs OUTPUTS

--impl eager runs torch_boundary.boundary as written; compile runs torch.compile of it (dynamic
shapes: one compilation for every row count).
"""
import argparse
import json
import os
import sys

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_boundary  # noqa: E402  (the boundary itself; this file only moves tensors)


def run_case(inputs_path, output_path, fn):
    with safe_open(inputs_path, "pt") as f:
        metadata = f.metadata()
    constants = json.loads(metadata["constants"])
    store_stream = metadata["store_stream"] == "true"
    t = {name: tensor.cuda() for name, tensor in load_file(inputs_path).items()}
    branch = torch_boundary.all_reduce(t["partials"]) if "partials" in t else t["branch"]
    out, new_stream = fn(branch, t["stream"], t["alpha"], t["beta"], t.get("post_weight"), t.get("pre_weight"), constants)
    outputs = {"out": out.contiguous().cpu()}
    if store_stream:
        outputs["new_stream"] = new_stream.float().contiguous().cpu()
    save_file(outputs, output_path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", choices=("eager", "compile"), default="eager")
    parser.add_argument("--cases", help="a directory written by boundary-verify export (with --outputs)")
    parser.add_argument("--outputs", help="the directory to write <case>.safetensors into (created)")
    parser.add_argument("inputs", nargs="?", help="one case file (the gate's {inputs})")
    parser.add_argument("output", nargs="?", help="its outputs file (the gate's {output})")
    args = parser.parse_args()
    fn = torch_boundary.boundary
    if args.impl == "compile":
        fn = torch.compile(torch_boundary.boundary, dynamic=True)
    if args.cases:
        if not args.outputs or args.inputs:
            parser.error("--cases goes with --outputs, without INPUTS OUTPUT")
        os.makedirs(args.outputs, exist_ok=True)
        with open(os.path.join(args.cases, "manifest.json")) as f:
            manifest = json.load(f)
        for case in manifest["cases"]:
            run_case(os.path.join(args.cases, case["file"]), os.path.join(args.outputs, case["file"]), fn)
        print(f"torch {args.impl}: {len(manifest['cases'])} cases written to {args.outputs}")
    elif args.inputs and args.output:
        run_case(args.inputs, args.output, fn)
    else:
        parser.error("give INPUTS OUTPUT, or --cases DIR --outputs DIR")


if __name__ == "__main__":
    main()
