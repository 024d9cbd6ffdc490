"""float16 under jit on the CPU (compiler/narrow_floats.py): computed in float32 and rounded to
float16 once per operation, so compiled results are eager's (numpy's) bit for bit, checked on
every float16 value for unary operations and on random pairs for binary ones (issue 21 item
17); the primitives it does not rewrite run numpy's float16 loops between kernels."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler import narrow_floats, scalar_helpers

ALL = np.arange(65536, dtype=np.uint16).view(np.float16)  # every float16, nan and inf too
RNG = np.random.default_rng(0)


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    keep = ~np.isnan(want)
    np.testing.assert_array_equal(got[keep].view(np.uint8), want[keep].view(np.uint8))


def _eager_and_jit(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*[jnp.asarray(a) for a in args]), numbax.jit(fn)(*args)


@pytest.mark.parametrize("fn", [
    jnp.abs, jnp.negative, jnp.sqrt, jnp.floor, jnp.round, jnp.sign, jnp.square,
    lambda a: a * 3 + 1, lambda a: a.astype(np.float32) * 2, lambda a: a.astype(np.int32),
    lambda a: (a.astype(np.float32) / 7).astype(np.float16),
    lambda a: (a.astype(np.float64) / 7).astype(np.float16),
    lambda a: a.astype(np.int64).astype(np.float16) * 3,
], ids=["abs", "neg", "sqrt", "floor", "round", "sign", "square", "affine", "to-f32",
        "to-i32", "from-f32", "from-f64", "from-int"])
def test_every_float16_value(fn):
    _same_bits(*_eager_and_jit(fn, ALL)[::-1])


@pytest.mark.parametrize("fn", [
    jnp.add, jnp.subtract, jnp.multiply, jnp.true_divide, jnp.maximum, jnp.fmod, jnp.less,
    jnp.floor_divide, jnp.remainder, lambda x, y: jnp.where(x > y, x, y * 2)],
    ids=["add", "sub", "mul", "div", "max", "fmod", "less", "floor_divide", "remainder",
         "where"])
def test_random_float16_pairs(fn):
    a, b = ALL[RNG.integers(0, 65536, 50_000)], ALL[RNG.integers(0, 65536, 50_000)]
    _same_bits(*_eager_and_jit(fn, a, b)[::-1])


@pytest.mark.parametrize("fn", [
    lambda v: jnp.max(v, axis=1), lambda v: jnp.sum(v, axis=1),
    lambda v: lax.fori_loop(0, 3, lambda i, c: c * np.float16(1.5) - v, v),
    lambda v: lax.scan(lambda c, r: (c + r, c * r), v[0], v)[1],
    lambda v: lax.cond(v[0, 0] > 0, lambda: v * 2, lambda: v / 3),
    lambda v: lax.while_loop(lambda c: c[0] < 3,
                             lambda c: (c[0] + 1, c[1] * np.float16(0.7) + 1), (0, v))[1],
], ids=["max", "sum", "fori", "scan", "cond", "while"])
def test_reductions_and_control_flow(fn):
    x = ALL[RNG.integers(0, 65536, 400)].reshape(20, 20)
    _same_bits(*_eager_and_jit(fn, x)[::-1])


def test_arithmetic_compiles_into_one_kernel():
    """A chain of float16 arithmetic is one float32 loop with a rounding after each step; only
    the exact boundary conversions run numpy."""
    text = numbax.jit(lambda a: (a * 2 + 1) / 3).lower(ALL[:8]).as_text()
    # each element loop (the serial variant's; the prange variant and the native pool's task
    # call it on chunks) rounds after each of the three steps
    loops = len(re.findall(r"\n    for i0 in ", text))
    assert loops and text.count("sc.round_to_float16(") == 3 * loops


def test_round_to_float16_helper_is_numpys_cast():
    halves = ALL[np.isfinite(ALL)].astype(np.float64)
    mids = (halves[:-1] + halves[1:]) / 2
    x = np.concatenate([halves, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                        RNG.normal(size=2000) * 3e4, [65519.99, 65520.0, 1e300, np.inf, np.nan]])
    x = x[RNG.permutation(len(x))[:4000]]
    got = np.array([scalar_helpers.round_to_float16(v) for v in x])  # plain Python (as CUDA's
    with np.errstate(over="ignore"):  # simulator runs it); compiled in test_every_float16_value
        want = x.astype(np.float16).astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(want)], want[~np.isnan(want)])
    assert narrow_floats.widen is not None
