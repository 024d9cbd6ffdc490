"""Arrays stored into blocks of others inside compiled loops (a scan's rows of ys, a body's
dynamic_update_slice) as loop nests copying element by element (cpu/flow_loops.block_store),
not Numba's array-into-slice assignment, whose formatted shape error took seconds to compile.
Truth: the same steps in numpy, with lax's clamping of update starts written out."""
from __future__ import annotations

import re

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax

from .kernel_text import modules

RNG = np.random.default_rng(11)
F32 = np.float32


def _flow_kernel(text: str) -> str:
    return next(m for m in modules(text) if "def kernel(a" in m and "for v" in m)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_rows_of_any_rank_and_layout_against_a_python_loop(reverse):
    def step(c, x):
        c = c * 0.5 + x
        return c, (c.T, c.sum(), c[:, :2] * 2.0)  # a transposed view, a scalar, a slice

    xs = RNG.normal(size=(7, 3, 4)).astype(F32)
    c0 = RNG.normal(size=(3, 4)).astype(F32)
    f = numbax.jit(lambda c, xs: lax.scan(step, c, xs, reverse=reverse))
    carry, (rows_t, sums, halves) = f(c0, xs)
    c, want = c0, {}
    for t in (range(6, -1, -1) if reverse else range(7)):
        c = c * F32(0.5) + xs[t]
        want[t] = (c.T, c.sum(dtype=F32), c[:, :2] * F32(2))
    np.testing.assert_allclose(np.asarray(carry), c, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(rows_t), np.stack([want[t][0] for t in range(7)]),
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(sums), [want[t][1] for t in range(7)], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(halves), np.stack([want[t][2] for t in range(7)]),
                               rtol=1e-6)
    text = f.lower(c0, xs).as_text()
    assert re.search(r"^\s+v\d+\[v\d+, v\d+, v\d+\] = v\d+\[v\d+, v\d+\]", _flow_kernel(text),
                     re.M), "a 3-D ys row is not stored element by element"


def _clamped_update(x, block, starts):
    """lax.dynamic_update_slice: a negative start counts from the end once, then every start
    is clamped so the block fits."""
    starts = [min(max(s + n if s < 0 else s, 0), n - k)
              for s, n, k in zip(starts, x.shape, block.shape)]
    x = x.copy()
    x[tuple(slice(s, s + k) for s, k in zip(starts, block.shape))] = block
    return x


def test_updates_at_clamped_traced_starts_against_numpy():
    block = RNG.normal(size=(2, 3)).astype(F32)

    def body(i, x):  # starts run from -3 (from the end) past the end (clamped to n - k)
        return lax.dynamic_update_slice(x, block * i.astype(F32), (i - 3, 2 * i - 1))

    f = numbax.jit(lambda x: lax.fori_loop(0, 9, body, x))
    x0 = RNG.normal(size=(6, 8)).astype(F32)
    want = x0
    for i in range(9):
        want = _clamped_update(want, block * F32(i), (i - 3, 2 * i - 1))
    np.testing.assert_array_equal(np.asarray(f(x0)), want)
    kernel = _flow_kernel(f.lower(x0).as_text())
    assert not re.search(r"\[[^\]\n]*:[^\]\n]*\] = ", kernel), "a slice assignment in the loop"


def test_a_full_width_update_and_a_row_update_of_a_3d_carry():
    def body(i, x):
        row = jnp.full((1, 4, 5), i, F32)
        return lax.dynamic_update_index_in_dim(x, row, i % 3, 0)

    f = numbax.jit(lambda x: lax.fori_loop(0, 5, body, x))
    x0 = np.zeros((3, 4, 5), F32)
    want = x0.copy()
    for i in range(5):
        want[i % 3] = i
    np.testing.assert_array_equal(np.asarray(f(x0)), want)
