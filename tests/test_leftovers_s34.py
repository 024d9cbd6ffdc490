"""numbax against JAX's recorded answers (tests/data/leftovers_s34_jax_reference.json, made by
make_leftovers_s34_reference.py from the cases in leftovers_s34_cases.py): the printed jaxpr
layout, typed key arrays as pytree leaves, numpy functions on key arrays (supported, or the
error class JAX raises), histogram / bincount / angle / convert_element_type dtypes, and
jnp.asarray / jnp.array of traced values."""
import builtins
import json
import pathlib
import sys

import pytest

import numbax

sys.path.insert(0, str(pathlib.Path(__file__).parent / "data"))
import json_compare  # noqa: E402
import leftovers_s34_cases as cases  # noqa: E402

REF = json.loads((pathlib.Path(__file__).parent / "data" /
                  "leftovers_s34_jax_reference.json").read_text())

# Where numbax differs from JAX on purpose or by a primitive it does not have, each with why.
KNOWN: dict = {}  # (none now: promotion follows JAX's lattice, x64 histogram weights too)


def _close(got, want) -> bool:
    return json_compare.close(got, want, rtol=1e-3)


def _params():
    out = []
    for key in sorted(k for k in REF if "/" in k):
        for name in sorted(REF[key]):
            marks = ([pytest.mark.xfail(strict=True, reason=KNOWN[(key, name)])]
                     if (key, name) in KNOWN else [])
            out.append(pytest.param(key, name, marks=marks, id=f"{key}:{name}"))
    return out


@pytest.mark.parametrize("key,name", _params())
def test_matches_jax(key, name):
    group, mode = key.split("/")
    want = REF[key][name]
    prev = numbax.config.jax_enable_x64
    numbax.config.update("jax_enable_x64", mode == "x64")
    try:
        fn = cases.GROUPS[group](numbax)[name]
        if isinstance(want, dict) and set(want) == {"error"}:
            with pytest.raises(getattr(builtins, want["error"])) as info:
                fn()
            assert "numbax" in str(info.value)  # our message, naming the function
            return
        got = json.loads(json.dumps(fn()))
    finally:
        numbax.config.update("jax_enable_x64", prev)
    if isinstance(want, str):
        assert got == want, f"numbax:\n{got}\njax:\n{want}"
    else:
        assert _close(got, want), f"numbax: {got}\njax:    {want}"


def test_reference_covers_every_case():
    for group in cases.GROUPS:
        assert f"{group}/x32" in REF
        assert set(REF[f"{group}/x32"]) == set(cases.GROUPS[group](numbax))
