"""jnp's set operations against numpy, and their size=/fill_value= forms (JAX's padding rules)
under jit and vmap."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import ConcretizationTypeError, NumbaxTypeError, NumbaxValueError

RNG = np.random.default_rng(5)
INTS = RNG.integers(0, 6, size=(4, 5))
FLOATS = np.array([2.5, np.nan, 1.0, 2.5, np.nan, -1.0, 1.0])
ROWS = np.array([[1, 2], [1, 2], [0, 5], [3, 1], [0, 5]])


def _same(got, want):
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_array_equal(got, want)


def _pad(a, size, fill):
    return np.concatenate([a[:size], np.full(max(size - len(a), 0), fill, a.dtype)])


@pytest.mark.parametrize("x,axis,equal_nan", [(INTS, None, True), (FLOATS, None, True),
                                              (FLOATS, None, False), (ROWS, 0, True),
                                              (ROWS.T, 1, True), (np.zeros(0), None, True)])
def test_unique_matches_numpy(x, axis, equal_nan):
    flags = dict(return_index=True, return_inverse=True, return_counts=True)
    _same(jnp.unique(x, axis=axis, equal_nan=equal_nan, **flags),
          np.unique(x, axis=axis, equal_nan=equal_nan, **flags))
    _same(jnp.unique(x, axis=axis, equal_nan=equal_nan),
          np.unique(x, axis=axis, equal_nan=equal_nan))


def test_array_api_unique_forms_match_numpy():
    for ours, theirs in [(jnp.unique_all, np.unique_all), (jnp.unique_counts, np.unique_counts),
                         (jnp.unique_inverse, np.unique_inverse)]:
        got, want = ours(FLOATS), theirs(FLOATS)
        assert got._fields == want._fields
        _same(tuple(got), tuple(want))
    _same(jnp.unique_values(INTS), np.sort(np.unique_values(INTS)))  # numpy 2.4: unsorted


def test_unique_size_pads_as_jax():
    x = np.array([3, 1, 3, 2, 1])
    values, index, inverse, counts = np.unique(x, True, True, True)
    for size in (2, 3, 6):
        got = jnp.unique(x, True, True, True, size=size)
        _same(got, (_pad(values, size, values[0]), _pad(index, size, index[0]), inverse,
                    _pad(counts, size, 0)))
    _same(jnp.unique(x, size=5, fill_value=-1), _pad(values, 5, -1))
    f = numbax.jit(lambda x: jnp.unique_counts(x, size=4))
    _same(tuple(f(x)), (_pad(values, 4, 1), _pad(counts, 4, 0)))
    rows = numbax.vmap(lambda r: jnp.unique(r, size=5, fill_value=-1))(INTS)
    _same(rows, np.stack([_pad(np.unique(r), 5, -1) for r in INTS]))


@pytest.mark.parametrize("method", ["auto", "compare_all", "sort", "binary_search"])
def test_isin_matches_numpy(method):
    test = np.array([4, 1, 9, 1])
    for invert in (False, True):
        _same(jnp.isin(INTS, test, invert=invert, method=method),
              np.isin(INTS, test, invert=invert))
    _same(jnp.isin(FLOATS, np.array([np.nan, 1.0]), method=method), np.isin(FLOATS, [np.nan, 1.0]))
    _same(jnp.isin(INTS, np.array([]), method=method), np.isin(INTS, []))


A1 = np.array([4, 1, 2, 3, 2, 7, 7])
A2 = np.array([[5, 3], [2, 7]])


def test_set_algebra_matches_numpy():
    _same(jnp.union1d(A1, A2), np.union1d(A1, A2))
    _same(jnp.setxor1d(A1, A2), np.setxor1d(A1, A2))
    _same(jnp.setdiff1d(A1, A2), np.setdiff1d(A1, A2))
    _same(jnp.intersect1d(A1, A2), np.intersect1d(A1, A2))
    _same(jnp.intersect1d(A1, A2, return_indices=True),
          np.intersect1d(A1, A2, return_indices=True))
    u1, u2 = np.array([4, 1, 2, 3]), np.array([5, 3, 2, 7])
    _same(jnp.setdiff1d(u1, u2, assume_unique=True), np.setdiff1d(u1, u2, assume_unique=True))
    _same(jnp.setxor1d(u1, u2, assume_unique=True), np.setxor1d(u1, u2, assume_unique=True))
    _same(jnp.intersect1d(u1, u2, assume_unique=True, return_indices=True),
          np.intersect1d(u1, u2, assume_unique=True, return_indices=True))
    _same(jnp.union1d(FLOATS, np.array([0.5])), np.union1d(FLOATS, [0.5]))
    _same(jnp.intersect1d(A1, np.array([])), np.intersect1d(A1, []))


def test_set_algebra_size_under_jit():
    f = numbax.jit(lambda a, b: (jnp.union1d(a, b, size=9), jnp.setxor1d(a, b, size=5),
                                 jnp.setdiff1d(a, b, size=3),
                                 jnp.intersect1d(a, b, return_indices=True, size=4)))
    union, xor, diff, (inter, i1, i2) = f(A1, A2)
    want_union = np.union1d(A1, A2)
    _same(union, _pad(want_union, 9, want_union[0]))
    want_xor = np.setxor1d(A1, A2)
    _same(xor, _pad(want_xor, 5, want_xor[0]))
    _same(diff, _pad(np.setdiff1d(A1, A2), 3, 0))
    v, j1, j2 = np.intersect1d(A1, A2, return_indices=True)
    _same((inter, i1, i2), (_pad(v, 4, v[0]), _pad(j1, 4, A1.size), _pad(j2, 4, A2.size)))


def test_nonzero_traces_with_size():
    x = np.array([[0, 1, 0], [2, 0, 3]])
    got = numbax.jit(lambda x: jnp.nonzero(x, size=4, fill_value=-1))(x)
    _same(got, tuple(_pad(c, 4, -1) for c in np.nonzero(x)))
    _same(numbax.jit(lambda x: jnp.argwhere(x, size=2))(x), np.argwhere(x)[:2])
    _same(numbax.vmap(lambda r: jnp.flatnonzero(r, size=2))(x),
          np.stack([_pad(np.flatnonzero(r), 2, 0) for r in x]))
    _same(numbax.jit(lambda c: jnp.where(c, size=3)[0])(np.array([0, 1, 1, 1, 1])),
          np.array([1, 2, 3]))


def test_setops_bad_inputs():
    for fn in (jnp.unique, jnp.unique_values, lambda x: jnp.union1d(x, x),
               lambda x: jnp.setdiff1d(x, x), lambda x: jnp.intersect1d(x, x),
               lambda x: jnp.setxor1d(x, x)):
        with pytest.raises(ConcretizationTypeError):
            numbax.jit(fn)(A1)
    with pytest.raises(NumbaxValueError, match="fill_value"):
        jnp.unique(np.zeros(0), size=2)
    with pytest.raises(NumbaxValueError, match="size is -1"):
        jnp.unique(A1, size=-1)
    with pytest.raises(NumbaxValueError, match="method"):
        jnp.isin(A1, A2, method="hash")
    with pytest.raises(NumbaxTypeError, match="not numeric"):
        jnp.isin(np.array(["a"]), A2)
    with pytest.raises(NumbaxTypeError, match="not numeric"):
        jnp.unique(np.array(["a", "b"]))


@pytest.mark.parametrize("name", ["intersect1d", "setxor1d", "setdiff1d", "union1d"])
@pytest.mark.parametrize("assume_unique", [False, True])
def test_nan_across_the_two_arrays_is_not_shared(name, assume_unique):
    # numpy dedupes NaNs within each array but compares across them with ==: a NaN of ar1
    # and one of ar2 never match, so intersect1d drops them and setxor1d keeps both.
    a = np.array([3.0, np.nan, 1.0, 2.0] if assume_unique else [3.0, 1.0, np.nan, 2.0, np.nan])
    b = np.array([2.0, 5.0, np.nan])
    kw = {} if name == "union1d" else {"assume_unique": assume_unique}
    want = getattr(np, name)(a, b, **kw)
    _same(getattr(jnp, name)(a, b, **kw), want)
    if name in ("intersect1d", "setxor1d"):
        got = numbax.jit(lambda x, y: getattr(jnp, name)(x, y, size=want.size + 1,
                                                         fill_value=-7.0, **kw))(a, b)
        _same(got, np.append(want, -7.0))
