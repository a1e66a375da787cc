"""boundary_verify: the DSpark residual boundary's bit-exact emulator and the gate's cases, for pytest.

Arrays are numpy. BF16 and FP16 tensors are uint16 (or int16) bit views; a torch CPU tensor passes as
``t.view(torch.int16).numpy()``. F32 tensors are float32 (or uint32/int32 bits). Nothing is converted
by value, so NaN payloads and the sign of zero arrive as they are. ``constants`` is a dict (the
constants JSON) or a path to a constants file. Bad inputs raise ValueError naming the tensor.
"""
from . import _native

InputError = _native.InputError


def emulate(constants, *, branch=None, partials=None, stream, alpha, beta, post_weight=None, pre_weight=None,
            store_stream=True, threads=0):
    """The contract's boundary on m rows: ``{"out": uint16 [m, 8192] (BF16 bits), "new_stream": float32
    [m, 8192]}`` (new_stream only with store_stream). Give ``branch`` BF16 [m, 8192] or ``partials``
    BF16 [R, m, 8192]; ``stream`` float32 or BF16 bits [m, 8192]; ``alpha``, ``beta`` float32 [8192];
    the weights the constants give, in their dtype. threads: host threads, 0 for every core."""
    return _native.emulate(constants, branch=branch, partials=partials, stream=stream, alpha=alpha, beta=beta,
                           post_weight=post_weight, pre_weight=pre_weight, store_stream=store_stream,
                           threads=threads)


def cases(constants, suite="edge", seed=1, *, level=1, rows=4096, ranks=0, store_stream=True):
    """The gate's cases of one suite family ("edge", "fuzz", "operand-special", "edge-constants",
    "partials" with ranks 1..8, or "all"), each a dict: ``name`` (export's file stem), ``suite``,
    ``constants`` (a dict: an edge-constants case has its own), ``store_stream``, ``stream_dtype``
    and ``inputs``, the arrays ``emulate`` takes by name."""
    yield from _native.cases(constants, suite, seed, level, rows, ranks, store_stream)


def assert_bitwise_equal(actual, expected):
    """Raises AssertionError unless every bit is equal (-0.0 is not +0.0, NaN payloads count): the
    count of differing elements and the first one's row, column, both bit patterns, ulp distance and
    value classes. 16-bit arrays are read as BF16. Dicts (as emulate returns) are compared key by key
    for every key of ``expected``."""
    if isinstance(expected, dict):
        missing = [name for name in expected if name not in actual]
        if missing:
            raise AssertionError(f"actual has no {', '.join(missing)} (expected has {', '.join(expected)})")
        pairs = [(actual[name], expected[name], name) for name in expected]
    else:
        pairs = [(actual, expected, "array")]
    for a, e, name in pairs:
        difference = _native.first_difference(a, e, name)
        if difference is not None:
            raise AssertionError(difference)
