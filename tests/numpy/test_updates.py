"""jnp.insert/delete/place/put/put_along_axis/fill_diagonal against numpy's in-place versions."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import ConcretizationTypeError, NumbaxTypeError, NumbaxValueError

A = np.arange(12).reshape(3, 4)


def _same(got, want):
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_array_equal(got, want)


def _arr(x):
    """Lists as numpy arrays: jax.numpy (and numbax.numpy) refuse list arguments here."""
    return np.asarray(x) if isinstance(x, list) else x


@pytest.mark.parametrize("obj,vals,axis", [
    (1, 9, None), ([1, -1, 3], [7, 8, 9], None), (1, [[7], [8], [9]], 1),
    ([1], [[7], [8], [9]], 1), (slice(0, 4, 2), 5, 1), (2, [5, 6, 7, 8], 0),
    ([0, 0, 2], [1, 2, 3], None), (4, [[1], [2], [3]], 1), ([], [], None), (-3, 2.7, 0),
])
def test_insert_matches_numpy(obj, vals, axis):
    _same(jnp.insert(A, _arr(obj), _arr(vals), axis=axis), np.insert(A, obj, vals, axis=axis))


@pytest.mark.parametrize("obj,axis", [
    (1, None), ([0, 2], 1), (slice(1, None, 2), 0), (np.array([True, False, True]), 0),
    ([0, 0, 1], None), (-1, 1), ([], 0),
])
def test_delete_matches_numpy(obj, axis):
    _same(jnp.delete(A, _arr(obj), axis=axis), np.delete(A, obj, axis=axis))


def _np_inplace(fn, a, *args, **kwargs):
    a = np.array(a)
    fn(a, *args, **kwargs)
    return a


def test_place_put_put_along_axis_fill_diagonal_match_numpy():
    mask = A % 3 == 0
    _same(jnp.place(A, mask, np.array([70, 80]), inplace=False),
          _np_inplace(np.place, A, mask, [70, 80]))
    _same(jnp.put(A, [0, 5, -1], [9, 8, 7], inplace=False),
          _np_inplace(np.put, A, [0, 5, -1], [9, 8, 7]))
    for mode in ("clip", "wrap"):
        _same(jnp.put(A, [15, -20, 2], [1, 2], mode=mode, inplace=False),
              _np_inplace(np.put, A, [15, -20, 2], [1, 2], mode=mode))
    idx = np.argsort(A, axis=1)[:, :2]
    _same(jnp.put_along_axis(A, idx, -1, 1, inplace=False),
          _np_inplace(np.put_along_axis, A, idx, -1, 1))
    _same(jnp.put_along_axis(A, np.array([[2, 0, 1, 1]]), np.array([[5, 6, 7, 8]]), 0,
                             inplace=False),
          _np_inplace(np.put_along_axis, A, np.array([[2, 0, 1, 1]]),
                      np.array([[5, 6, 7, 8]]), 0))
    _same(jnp.put_along_axis(A, np.array([3, 11]), 0, None, inplace=False),
          _np_inplace(np.put_along_axis, A, np.array([3, 11]), 0, None))
    for shape, wrap in [((3, 4), False), ((7, 3), False), ((7, 3), True), ((3, 3, 3), False)]:
        z = np.zeros(shape, int)
        _same(jnp.fill_diagonal(z, [1, 2], wrap=wrap, inplace=False),
              _np_inplace(np.fill_diagonal, z, [1, 2], wrap=wrap))


def test_updates_trace_and_differentiate():
    f = numbax.jit(lambda a, m: jnp.place(a, m, jnp.array([1.0, 2.0]), inplace=False))
    x = np.zeros(5)
    m = np.array([True, False, True, True, False])
    _same(f(x, m), np.array([1.0, 0.0, 2.0, 1.0, 0.0]))
    g = numbax.grad(lambda v: jnp.insert(jnp.arange(3.0), 1, v).sum() * 2)
    np.testing.assert_allclose(g(np.array([1.0, 2.0])), [2.0, 2.0])
    h = numbax.grad(lambda a: (jnp.put(a, np.array([0, 2]), 0.0, inplace=False) * a).sum())
    np.testing.assert_allclose(h(np.arange(4.0)), [0.0, 2.0, 0.0, 6.0])
    out = numbax.vmap(lambda r: jnp.delete(r, np.array([0, 2])))(A.astype(float))
    _same(out, np.delete(A, [0, 2], axis=1).astype(float))


def test_updates_bad_inputs():
    for fn, args in [(jnp.place, (A, A > 2, 1)), (jnp.put, (A, 0, 1)),
                     (jnp.put_along_axis, (A, np.zeros((3, 1), int), 1, 1)),
                     (jnp.fill_diagonal, (A, 1))]:
        with pytest.raises(NumbaxValueError, match="inplace=False"):
            fn(*args)
    with pytest.raises(IndexError, match="out of bounds"):
        jnp.insert(A, 20, 1)
    with pytest.raises(IndexError, match="out of bounds"):
        jnp.delete(A, 12)
    with pytest.raises(NumbaxTypeError, match="float64"):
        jnp.insert(A, 1.5, 1)
    with pytest.raises(NumbaxValueError, match="broadcasts"):
        jnp.insert(A, 1, np.array([1, 2]), axis=0)
    with pytest.raises(ConcretizationTypeError):
        numbax.jit(lambda i: jnp.delete(A, i))(np.array([1]))
    with pytest.raises(NumbaxValueError, match="size"):
        jnp.place(A, np.array([True]), 1, inplace=False)
    with pytest.raises(NumbaxValueError, match="empty"):
        jnp.place(A, A > 2, np.array([], A.dtype), inplace=False)
    with pytest.raises(IndexError, match="out of bounds"):
        jnp.put(A, [12], 1, mode="raise", inplace=False)
    with pytest.raises(NumbaxValueError, match="mode"):
        jnp.put(A, [1], 1, mode="bogus", inplace=False)
    with pytest.raises(NumbaxValueError, match="dimensions"):
        jnp.put_along_axis(A, np.array([1]), 1, 1, inplace=False)
    with pytest.raises(NumbaxValueError, match="at least 2"):
        jnp.fill_diagonal(np.zeros(3), 1, inplace=False)
    with pytest.raises(NumbaxValueError, match="equal length"):
        jnp.fill_diagonal(np.zeros((2, 2, 3)), 1, inplace=False)
