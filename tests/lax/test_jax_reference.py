"""lax functions against JAX's recorded results (tests/lax/jax_cases.py, recorded by
tests/data/make_lax_reference.py into tests/data/lax_jax_reference.json)."""
from __future__ import annotations

import json
import pathlib
from types import SimpleNamespace

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from tests.lax.jax_cases import cases

REFERENCE = json.loads(
    (pathlib.Path(__file__).parents[1] / "data" / "lax_jax_reference.json").read_text())
CASES = cases(SimpleNamespace(jax=numbax, jnp=jnp, lax=lax))
# Cases whose JAX result is rounded differently on purpose (tolerance per case).
TOLERANCE = {"dot_value_F16_F16_F16": 2e-3}


def _compare(got, want, name: str) -> None:
    if isinstance(want, str):  # printed forms: trailing spaces of lines are not compared
        strip = lambda text: "\n".join(line.rstrip() for line in text.splitlines())  # noqa
        assert strip(got) == strip(want), name
    elif isinstance(want, list):
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            _compare(g, w, name)
    else:
        got = np.asarray(got)
        assert got.dtype.name == want["dtype"] and list(got.shape) == want["shape"], (
            name, got.dtype, got.shape, want["dtype"], want["shape"])
        expected = np.asarray(want["value"], dtype=object)
        if got.dtype.kind == "f":
            expected = np.asarray([float(v) for v in np.ravel(expected)]).reshape(got.shape)
            rtol = TOLERANCE.get(name, 2e-7 if got.dtype == np.float32 else 1e-14)
            np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol, err_msg=name)
        else:
            np.testing.assert_array_equal(got, np.asarray(want["value"], got.dtype), name)


@pytest.mark.parametrize("name", sorted(n for n in REFERENCE if n != "jax_version"))
def test_matches_jax(name):
    want = REFERENCE[name]
    if isinstance(want, dict) and "raises" in want:
        with pytest.raises(Exception) as info:
            CASES[name]()
        assert want["raises"] in [c.__name__ for c in type(info.value).__mro__], name
        return
    _compare(CASES[name](), want, name)
