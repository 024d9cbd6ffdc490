"""lax.top_k on large inputs: the compiled rows kernel (runtime/top_k.py, a heap a row) and the
eager call (compiled when large) against a Python sort of each row: NaN first, then larger
values, the lower index first among equals (-0.0 and +0.0 tie), on any thread count and axis."""
import math

import numba
import numpy as np
import pytest

import numbax
from numbax import lax
from numbax._src.compiler.cpu.runtime import top_k as top_k_rows

POOL = numba.config.NUMBA_NUM_THREADS


def _python_top_k(x: np.ndarray, k: int, axis: int):
    """[values, indices] by sorting each row's indices with Python's sort on a rank key."""
    moved = np.moveaxis(x, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    idx = np.empty((rows.shape[0], k), np.int64)
    for r, row in enumerate(rows.tolist()):
        def rank(j, row=row):
            v = row[j]
            nan = isinstance(v, float) and math.isnan(v)
            return (0 if nan else 1, 0 if nan else -v, j)
        idx[r] = sorted(range(len(row)), key=rank)[:k]
    vals = np.take_along_axis(rows, idx, axis=1)
    shape = (*moved.shape[:-1], k)
    return [np.moveaxis(a.reshape(shape), -1, axis) for a in (vals, idx)]


def _rows_with_ties(dtype, shape, rng):
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    x = rng.integers(-6, 6, shape).astype(dtype)  # many equal values
    if np.dtype(dtype).kind == "f":
        flat = x.reshape(-1)
        picks = rng.choice(flat.size, size=flat.size // 10, replace=False)
        specials = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf], dtype)
        flat[picks] = specials[rng.integers(0, len(specials), picks.size)]
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int32, np.uint16,
                                   np.int64, np.bool_])
def test_top_k_of_rows_with_ties_nans_and_signed_zeros_matches_a_python_sort(dtype):
    rng = np.random.default_rng(11)
    x = _rows_with_ties(dtype, (64, 257), rng)
    f = numbax.jit(lambda x: lax.top_k(x, 9))
    assert "kc.top_k(" in f.lower(x).as_text()
    want_vals, want_idx = _python_top_k(x, 9, 1)
    for threads in sorted({1, 2, POOL}):
        with numbax.config.override("cpu_threads", threads):
            vals, idx = (np.asarray(a) for a in f(x))
        assert vals.dtype == x.dtype and idx.dtype == np.int32
        np.testing.assert_array_equal(idx, want_idx)
        np.testing.assert_array_equal(vals, want_vals)  # (NaN == NaN here)
        if dtype in (np.float32, np.float64):  # -0.0 stays -0.0
            np.testing.assert_array_equal(np.signbit(vals), np.signbit(want_vals))
    eager_vals, eager_idx = lax.top_k(x, 9)
    np.testing.assert_array_equal(np.asarray(eager_idx), want_idx)


@pytest.mark.parametrize("k", [1, 3, 40])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_top_k_along_every_axis_and_k_up_to_the_whole_row(k, axis):
    rng = np.random.default_rng(12)
    x = rng.standard_normal((40, 50, 60)).astype(np.float32)
    x[3, 4, :] = 1.5  # a row of equal values
    f = numbax.jit(lambda x: lax.top_k(x, k, axis=axis))
    vals, idx = (np.asarray(a) for a in f(x))
    want_vals, want_idx = _python_top_k(x, k, axis)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(vals, want_vals)
    whole = x.shape[axis]
    v_all, i_all = (np.asarray(a) for a in numbax.jit(lambda x: lax.top_k(x, whole, axis=axis))(x))
    np.testing.assert_array_equal(v_all, -np.sort(-x, axis=axis))  # the whole row, sorted
    np.testing.assert_array_equal(np.sort(i_all, axis=axis),
                                  np.broadcast_to(np.expand_dims(np.arange(whole), [
                                      d for d in range(3) if d != axis]), x.shape))


def test_ascending_rows_the_heaps_worst_case_and_the_gradient():
    # every element makes the cut in an ascending row; the derivative goes to the chosen ones
    x = np.tile(np.arange(3000, dtype=np.float64), (8, 1))
    f = numbax.jit(lambda x: lax.top_k(x, 100))
    vals, idx = (np.asarray(a) for a in f(x))
    np.testing.assert_array_equal(idx, np.tile(np.arange(2999, 2899, -1), (8, 1)))
    np.testing.assert_array_equal(vals, idx.astype(np.float64))
    g = np.asarray(numbax.jit(numbax.grad(lambda x: lax.top_k(x, 100)[0].sum()))(x))
    want = np.zeros_like(x)
    want[:, 2900:] = 1.0
    np.testing.assert_array_equal(g, want)


def test_small_inputs_and_k_zero_take_the_eager_rule():
    x = np.arange(12.0).reshape(3, 4)
    assert top_k_rows.along_axis(x, 2, 1) is None  # under MIN_SIZE
    big = np.ones((64, 100))
    assert top_k_rows.along_axis(big, 0, 1) is None
    vals, idx = (np.asarray(a) for a in numbax.jit(lambda x: lax.top_k(x, 0))(big))
    assert vals.shape == idx.shape == (64, 0)


def test_approx_max_k_is_the_exact_top_k_and_approx_min_k_the_exact_bottom_k():
    rng = np.random.default_rng(13)
    x = _rows_with_ties(np.float32, (50, 300), rng)
    f = numbax.jit(lambda x: lax.approx_max_k(x, 7))
    assert "kc.top_k(" in f.lower(x).as_text()
    vals, idx = (np.asarray(a) for a in f(x))
    want_vals, want_idx = _python_top_k(x, 7, 1)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(vals, want_vals)
    y = rng.standard_normal((40, 200))
    low_vals, low_idx = (np.asarray(a) for a in numbax.jit(
        lambda y: lax.approx_min_k(y, 5, reduction_dimension=0))(y))
    np.testing.assert_array_equal(low_idx, np.argsort(y, axis=0, kind="stable")[:5])
    np.testing.assert_array_equal(low_vals, np.sort(y, axis=0)[:5])
