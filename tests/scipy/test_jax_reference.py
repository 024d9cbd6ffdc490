"""numbax.scipy.special / numbax.scipy.stats / numbax.lax special functions against JAX 0.10.2's
recorded outputs (tests/data/make_scipy_reference.py): values, nan/inf conventions, custom
derivatives."""
import json
import pathlib

import numpy as np
import pytest

import numbax
import numbax.scipy.special  # noqa: F401
import numbax.scipy.stats  # noqa: F401

DATA = json.loads((pathlib.Path(__file__).parents[1] / "data" /
                   "scipy_jax_reference.json").read_text())
CASES = DATA["cases"]

# Where JAX's own approximation is coarser than numbax's (checked against scipy/mpmath in
# test_special.py / test_stats.py), compare to this relative tolerance instead.
LOOSE = {
    "scipy.special.owens_t": 1e-6,  # JAX: a fixed 13-point quadrature
    "scipy.stats.poisson.entropy": 1e-6,  # JAX: a shorter asymptotic series
    "scipy.special.bernoulli": 1e-5,  # JAX: a truncated series; numbax: exact rationals
    "scipy.special.log_ndtr": 1e-9,  # JAX: log(ndtr(x)) for 0 < x <= 8; numbax: log1p
    "scipy.stats.betabinom.logpmf": 1e-5,  # JAX's betaln is off by ~1e-6 at small arguments
    "scipy.stats.betabinom.pmf": 1e-5,
}


def _resolve(path):
    obj = numbax
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _decode(x):
    if isinstance(x, dict):
        return np.asarray(x["re"]) + 1j * np.asarray(x["im"])
    return np.asarray(x)


def _ids():
    seen = {}
    out = []
    for case in CASES:
        key = case["fn"] + (f"-grad{case['grad']}" if case["grad"] is not None else "")
        seen[key] = seen.get(key, 0) + 1
        out.append(f"{key}-{seen[key]}")
    return out


@pytest.mark.parametrize("case", CASES, ids=_ids())
def test_matches_jax(case):
    f = _resolve(case["fn"])
    args = [_decode(a) if isinstance(a, (list, dict)) else a for a in case["args"]]
    kwargs = {k: np.asarray(v) if isinstance(v, list) else v
              for k, v in case["kwargs"].items()}
    if case["grad"] is not None:
        outs = numbax.vmap(numbax.grad(lambda *a: f(*a, **kwargs), argnums=case["grad"]))(
            *[np.asarray(a, float) for a in args])
    else:
        outs = f(*args, **kwargs)
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    assert len(outs) == len(case["out"])
    rtol = LOOSE.get(case["fn"], 1e-10)
    for got, want in zip(outs, case["out"]):
        got, want = np.asarray(got), _decode(want)
        assert got.shape == want.shape, (got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-300, equal_nan=True)
