"""A safetensors reader in numpy alone (the tests run where the safetensors package is not
installed): tensors as bit views, BF16 and F16 as uint16, F32 as float32."""
import json
import struct

import numpy as np

_DTYPES = {"BF16": np.uint16, "F16": np.uint16, "F32": np.float32}


def load(path):
    """(tensors, metadata) of a safetensors file."""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        tensors[name] = np.frombuffer(data[8 + n + begin:8 + n + end], dtype=_DTYPES[t["dtype"]]).reshape(t["shape"])
    return tensors, metadata
