"""The Python package against hardware truth (the committed fixtures captured on the H200), against
the CLI (export's case files, emulate's outputs), and its assertion against hand-made differences."""
import glob
import json
import os
import subprocess

import numpy as np
import pytest

import boundary_verify as bv
from numpy_safetensors import load

SOURCE = os.environ["BOUNDARY_SOURCE_DIR"]
CLI = os.environ["BOUNDARY_VERIFY"]
FFN = os.path.join(SOURCE, "fixtures/constants/muse-spark-post-ffn.json")
FIXTURES = sorted(glob.glob(os.path.join(SOURCE, "fixtures/boundary/*.safetensors")))
INPUTS = ("branch", "partials", "stream", "alpha", "beta", "post_weight", "pre_weight")


@pytest.mark.parametrize("path", FIXTURES, ids=os.path.basename)
def test_emulate_reproduces_the_h200_fixtures(path):
    tensors, metadata = load(path)
    store = "new_stream" in tensors
    got = bv.emulate(json.loads(metadata["constants"]), **{k: v for k, v in tensors.items() if k in INPUTS},
                     store_stream=store, threads=2)
    bv.assert_bitwise_equal(got, {k: tensors[k] for k in ("out", "new_stream") if k in tensors})
    assert ("new_stream" in got) == store


def test_fixtures_are_there():
    assert len(FIXTURES) >= 24


def a_fixture():
    tensors, metadata = load(os.path.join(SOURCE, "fixtures/boundary/post-ffn-wbf16-sf32-stored.safetensors"))
    return tensors, json.loads(metadata["constants"])


def test_assert_bitwise_equal_names_the_first_difference_and_counts_them():
    tensors, _ = a_fixture()
    out = tensors["out"].copy()
    out[1, 7] ^= 1
    out[1, 9] ^= 0x8000
    before, after = f"0x{tensors['out'][1, 7]:04X}", f"0x{out[1, 7]:04X}"
    with pytest.raises(AssertionError) as e:
        bv.assert_bitwise_equal({"out": out}, {"out": tensors["out"]})
    message = str(e.value)
    assert message.startswith("out: 2 of 16384 BF16 elements differ; the first at row 1, column 7")
    assert f"actual {after}" in message and f"expected {before}" in message and "1 ulp apart" in message


def test_signed_zeros_and_nan_payloads_are_different_bits():
    plus, minus = np.array([0.0], np.float32), np.array([-0.0], np.float32)
    with pytest.raises(AssertionError, match=r"actual 0x80000000 \(-zero\), expected 0x00000000 \(\+zero\)"):
        bv.assert_bitwise_equal(minus, plus)
    quiet, payload = np.array([0x7FC00000], np.uint32).view(np.float32), np.array([0x7FC00001], np.uint32).view(np.float32)
    with pytest.raises(AssertionError, match="NaN involved"):
        bv.assert_bitwise_equal(payload, quiet)
    bv.assert_bitwise_equal(payload.copy(), payload)
    with pytest.raises(AssertionError, match=r"actual is F32 \[2\], expected F32 \[1\]"):
        bv.assert_bitwise_equal(np.zeros(2, np.float32), plus)
    with pytest.raises(AssertionError, match="actual has no new_stream"):
        bv.assert_bitwise_equal({"out": plus}, {"out": plus, "new_stream": plus})


def test_bad_inputs_are_value_errors_naming_the_tensor():
    tensors, constants = a_fixture()
    inputs = {k: v for k, v in tensors.items() if k in INPUTS}
    with pytest.raises(ValueError, match="'branch' has shape"):
        bv.emulate(constants, **{**inputs, "branch": inputs["branch"][:, :100]})
    with pytest.raises(ValueError, match="stream: numpy dtype float64"):
        bv.emulate(constants, **{**inputs, "stream": inputs["stream"].astype(np.float64)})
    with pytest.raises(ValueError, match="post_eps"):
        bv.emulate({**constants, "post_eps": -1.0}, **inputs)
    with pytest.raises(ValueError, match="'pre_weight'"):
        bv.emulate(constants, **{k: v for k, v in inputs.items() if k != "pre_weight"})
    assert bv.emulate(FFN, **inputs)["out"].dtype == np.uint16  # a path works as the constants too


# Every family but edge-constants (the edge suite under seven other constants: slow to make, and
# the CLI test checks it); fuzz and partials small.
FAMILIES = ("edge", "fuzz", "operand-special", "partials")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Per family: cases() and the directory `boundary-verify export` writes with the same options."""
    made = {}
    for family in FAMILIES:
        directory = tmp_path_factory.mktemp(family)
        subprocess.run([CLI, "export", "--constants", FFN, "--dir", str(directory / "cases"), "--suite", family,
                        "--seed", "3", "--rows", "4", "--ranks", "3"], check=True, capture_output=True)
        made[family] = (list(bv.cases(FFN, family, seed=3, rows=4, ranks=3)), directory)
    return made


@pytest.mark.parametrize("family", FAMILIES)
def test_cases_are_exports_case_files(exported, family):
    """cases() gives the bits export writes, under export's file names, with its metadata."""
    made, directory = exported[family]
    assert len(made) == len(list((directory / "cases").glob("*.safetensors"))) > 0
    for case in made:
        tensors, metadata = load(directory / "cases" / (case["name"] + ".safetensors"))
        assert case["constants"] == json.loads(metadata["constants"])
        assert case["suite"] == metadata["suite"] and case["store_stream"] == (metadata["store_stream"] == "true")
        assert sorted(case["inputs"]) == sorted(tensors)
        for name, array in case["inputs"].items():
            assert array.dtype == tensors[name].dtype and array.tobytes() == tensors[name].tobytes(), name
    if family == "partials":
        assert made[0]["inputs"]["partials"].shape[0] == 3


@pytest.mark.parametrize("family", FAMILIES)
def test_emulate_agrees_with_the_cli(exported, family, tmp_path):
    """A family's first case through the package and through `boundary-verify emulate`."""
    made, directory = exported[family]
    case = made[0]
    got = bv.emulate(case["constants"], **case["inputs"], store_stream=case["store_stream"])
    subprocess.run([CLI, "emulate", "--inputs", str(directory / "cases" / (case["name"] + ".safetensors")),
                    "--output", str(tmp_path / "out.safetensors")], check=True, capture_output=True)
    expected, _ = load(tmp_path / "out.safetensors")
    bv.assert_bitwise_equal(got, expected)


def test_unknown_family_is_a_value_error():
    with pytest.raises(ValueError, match="unknown suite family 'nope'"):
        next(bv.cases(FFN, "nope"))
    with pytest.raises(ValueError, match="give ranks 1..8"):
        next(bv.cases(FFN, "partials"))
