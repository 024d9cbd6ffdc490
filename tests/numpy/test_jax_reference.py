"""compat-numpy functions against JAX 0.10.2's recorded outputs (tests/data), for the
behaviours where JAX, not numpy, is the truth."""
import json
import pathlib
import sys

import numpy as np
import pytest

import numbax.numpy as jnp
from numbax import ops

DATA = pathlib.Path(__file__).parents[1] / "data"
sys.path.insert(0, str(DATA))
from numpy_compat_cases import CASES  # noqa: E402

REFERENCE = json.loads((DATA / "numpy_compat_jax_reference.json").read_text())["cases"]


def _decode(leaf):
    def restore(d):
        if isinstance(d, list):
            return [restore(v) for v in d]
        return {"nan": np.nan, "inf": np.inf, "-inf": -np.inf}.get(d, d) \
            if isinstance(d, str) else d

    data = restore(leaf["data"])
    if leaf["dtype"].startswith("complex"):
        data = np.asarray(data[0]) + 1j * np.asarray(data[1])
    return np.asarray(data, dtype=leaf["dtype"]).reshape(leaf["shape"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax(name):
    got = CASES[name](jnp, ops)
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = [_decode(leaf) for leaf in REFERENCE[name]]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-300, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)
