"""Interop check, run where Python, torch and safetensors exist (the device machine):
every fixture loads with safetensors.torch.load_file, with the dtypes and shapes the README names,
and a file written here from Python replays through the CLI.

    python3 verify/interop/load_fixtures.py BOUNDARY_VERIFY FIXTURE...
"""
import json
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file
from safetensors import safe_open

EXPECTED = {"branch": torch.bfloat16, "partials": torch.bfloat16, "stream": None, "alpha": torch.float32, "beta": torch.float32,
            "out": torch.bfloat16, "new_stream": torch.float32}


def check(path):
    tensors = load_file(path)
    with safe_open(path, "pt") as f:
        meta = f.metadata()
    json.loads(meta["constants"])
    # An all-reduce fixture holds rank partials [R, m, 8192] instead of the branch [m, 8192].
    m = tensors["branch"].shape[0] if "branch" in tensors else tensors["partials"].shape[1]
    for name, dtype in EXPECTED.items():
        if name not in tensors:
            continue
        t = tensors[name]
        assert dtype is None or t.dtype == dtype, (path, name, t.dtype)
        assert t.shape[-1] == 8192, (path, name, t.shape)
    assert tensors["out"].shape == (m, 8192)
    return tensors, meta


def main():
    binary, fixtures = sys.argv[1], sys.argv[2:]
    for path in fixtures:
        check(path)
        print(f"loaded {path}")
    # A fixture written from Python: the first one's tensors and metadata, saved by safetensors.
    tensors, meta = check(fixtures[0])
    with tempfile.TemporaryDirectory() as d:
        written = f"{d}/from_python.safetensors"
        save_file(tensors, written, metadata=meta)
        with open(f"{d}/constants.json", "w") as f:
            f.write(meta["constants"])
        out = subprocess.run([binary, "emulate", "--constants", f"{d}/constants.json", "--inputs", written,
                              "--output", f"{d}/emulated.safetensors"], capture_output=True)
        print(out.stdout.decode(), out.stderr.decode())
        assert out.returncode == 0, out.returncode
        emulated = load_file(f"{d}/emulated.safetensors")
        assert torch.equal(emulated["out"].view(torch.int16), tensors["out"].view(torch.int16)), "out differs"
        print(f"a fixture written by Python ({written}) emulates to the hardware's bits")
    print(f"{len(fixtures)} fixtures loaded with safetensors.torch.load_file: OK")


if __name__ == "__main__":
    main()
