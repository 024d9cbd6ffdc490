"""jnp.searchsorted's binary search (lax/sort.py searchsorted_p; compiled: runtime/search.py):
every method, side, dtype and layout against numpy's searchsorted, NaN last and signed zeros
equal; vmap over the table (a search per row) and over the values; interp on top of it."""
import numba
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxValueError

POOL = numba.config.NUMBA_NUM_THREADS


def _table_and_values(dtype, n, shape, rng):
    if np.dtype(dtype).kind == "f":
        a = np.sort(rng.integers(-20, 20, n).astype(dtype))  # duplicates
        a[rng.integers(0, n, max(1, n // 8))] = 0.0
        a = np.sort(a)
        a[-max(1, n // 10):] = np.nan  # NaNs sort last
        a[0] = -np.inf
        v = rng.integers(-22, 22, shape).astype(dtype) + (rng.random(shape) < 0.3) * 0.5
        flat = v.reshape(-1)
        specials = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf], dtype)
        picks = rng.choice(flat.size, flat.size // 8, replace=False)
        flat[picks] = specials[rng.integers(0, 5, picks.size)]
        return a, v
    info = np.iinfo(dtype)
    a = np.sort(rng.integers(max(info.min, -50), min(info.max, 50), n).astype(dtype))
    return a, rng.integers(max(info.min, -60), min(info.max, 60), shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.int64])
@pytest.mark.parametrize("n,shape", [(1, (5000,)), (2, (70, 80)), (37, (3,)), (1000, (9000,)),
                                     (5001, (64, 130))])
def test_searchsorted_matches_numpy_on_every_side_and_method(dtype, n, shape):
    rng = np.random.default_rng(n)
    a, v = _table_and_values(dtype, n, shape, rng)
    for side in ("left", "right"):
        want = np.searchsorted(a, v, side=side)
        for method in ("scan", "scan_unrolled", "sort", "compare_all"):
            f = numbax.jit(lambda a, v, side=side, method=method: jnp.searchsorted(
                a, v, side=side, method=method))
            for threads in sorted({1, POOL}):
                with numbax.config.override("cpu_threads", threads):
                    got = np.asarray(f(a, v))
                assert got.dtype == np.int32
                np.testing.assert_array_equal(got, want, err_msg=f"{side} {method}")
        np.testing.assert_array_equal(np.asarray(jnp.searchsorted(a, v, side=side)), want)


def test_searchsorted_takes_a_sorter_and_refuses_unknown_methods():
    rng = np.random.default_rng(3)
    a = rng.standard_normal(3000)
    v = rng.standard_normal(6000)
    order = np.argsort(a)
    got = numbax.jit(lambda a, v, s: jnp.searchsorted(a, v, sorter=s))(a, v, order)
    np.testing.assert_array_equal(np.asarray(got), np.searchsorted(a, v, sorter=order))
    with pytest.raises(NumbaxValueError, match="method 'binary'"):
        jnp.searchsorted(a, v, method="binary")


def test_vmap_over_tables_searches_each_row_and_over_values_shares_one_table():
    rng = np.random.default_rng(4)
    tables = np.sort(rng.uniform(0, 10, (300, 200)), axis=1).astype(np.float32)
    values = rng.uniform(-1, 11, (300, 400)).astype(np.float32)
    for side in ("left", "right"):
        rows = numbax.jit(numbax.vmap(lambda a, v, side=side: jnp.searchsorted(a, v, side)))
        got = np.asarray(rows(tables, values))
        want = np.stack([np.searchsorted(t, w, side=side) for t, w in zip(tables, values)])
        np.testing.assert_array_equal(got, want)
        shared = numbax.jit(numbax.vmap(lambda v, side=side: jnp.searchsorted(
            tables[0], v, side), in_axes=1, out_axes=1))
        np.testing.assert_array_equal(np.asarray(shared(values)),
                                      np.searchsorted(tables[0], values, side=side))
    # a table batched, the values not (broadcast to every row)
    one = numbax.vmap(lambda a: jnp.searchsorted(a, values[0]))(tables)
    np.testing.assert_array_equal(
        np.asarray(one), np.stack([np.searchsorted(t, values[0]) for t in tables]))


def test_complex_values_keep_numpys_lexicographic_order():
    a = np.sort_complex(np.array([1 + 2j, 1 - 1j, -3 + 0j, 2 + 0j, 1 + 2j]))
    v = np.array([1 + 0j, 1 + 2j, 5 - 1j, -4 + 9j])
    for side in ("left", "right"):
        np.testing.assert_array_equal(
            np.asarray(numbax.jit(lambda a, v, side=side: jnp.searchsorted(a, v, side))(a, v)),
            np.searchsorted(a, v, side=side))


def test_vmapped_interp_matches_numpy_row_by_row():
    rng = np.random.default_rng(5)
    xp = np.sort(rng.uniform(0, 10, (256, 200)), axis=1)
    fp = rng.standard_normal((256, 200))
    x = rng.uniform(-1, 11, (256, 500))
    got = np.asarray(numbax.jit(numbax.vmap(jnp.interp))(x, xp, fp))
    want = np.stack([np.interp(a, b, c) for a, b, c in zip(x, xp, fp)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16])
@pytest.mark.parametrize("n", [1, 3, 101, 128, 129])
def test_small_tables_counted_give_numpys_positions(dtype, n):
    """Tables up to search.COUNT_MAX entries are counted rather than searched (NaN entries
    never before a number, NaN values after the numbers or after every entry): one table
    for many values, and a table per row under vmap, against numpy's search."""
    rng = np.random.default_rng(n)
    a, v = _table_and_values(dtype, n, (20000,), rng)
    for side in ("left", "right"):
        got = numbax.jit(lambda a, v, side=side: jnp.searchsorted(a, v, side=side))(a, v)
        np.testing.assert_array_equal(np.asarray(got), np.searchsorted(a, v, side=side))
    tables = np.stack([_table_and_values(dtype, n, (1,), rng)[0] for _ in range(40)])
    values = v.reshape(40, 500)
    for side in ("left", "right"):
        rows = numbax.jit(numbax.vmap(lambda a, v, side=side: jnp.searchsorted(a, v, side)))
        want = np.stack([np.searchsorted(t, w, side=side) for t, w in zip(tables, values)])
        np.testing.assert_array_equal(np.asarray(rows(tables, values)), want)


def test_histogram_of_many_values_matches_numpy():
    """histogram searches its edges (a small table: counted)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal(200000).astype(np.float32)
    x[::997] = 4.0  # on the last edge: counted in the last bin
    got, edges = numbax.jit(lambda x: jnp.histogram(x, bins=100, range=(-4, 4)))(x)
    np.testing.assert_allclose(np.asarray(edges), np.linspace(-4, 4, 101), rtol=1e-6)
    want, _ = np.histogram(x, bins=np.asarray(edges))
    np.testing.assert_array_equal(np.asarray(got), want)
