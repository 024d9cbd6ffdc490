"""JAX's extension tutorials (primitives, custom interpreters, custom derivatives) run on
numbax and compared with JAX's recorded outputs (tests/data/extending_jax_reference.json)."""
from __future__ import annotations

import json
import pathlib
from types import SimpleNamespace

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import core, lax
from numbax.extend import core as ecore
from numbax.interpreters import ad, batching
from tests.compat.extending_tutorials import TUTORIALS

REFERENCE = json.loads(
    (pathlib.Path(__file__).parents[1] / "data" / "extending_jax_reference.json").read_text())
MODULES = SimpleNamespace(jax=numbax, jnp=jnp, lax=lax, core=core, ecore=ecore, ad=ad,
                          batching=batching, has_lowering_fallback=True)


def _assert_same(got, want, where: str) -> None:
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), where
        for k in want:
            _assert_same(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, str):
        assert got == want, where
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (where, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            _assert_same(g, w, f"{where}[{i}]")
    else:
        np.testing.assert_allclose(float(got), float(want), rtol=1e-12, atol=1e-14,
                                   err_msg=where)


@pytest.mark.filterwarnings("ignore:jit. primitive multiply_add:RuntimeWarning")
@pytest.mark.parametrize("name", sorted(TUTORIALS))
def test_tutorial_matches_jax(name):
    got = TUTORIALS[name](MODULES)
    _assert_same(got, REFERENCE[name], name)
