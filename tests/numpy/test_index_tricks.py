"""jnp's index helpers (r_, c_, mgrid, ogrid, ix_, *_indices, ravel/unravel) against numpy."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import ConcretizationTypeError, NumbaxTypeError, NumbaxValueError

A = np.arange(6).reshape(2, 3)


def _same(got, want):
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_allclose(got, want)


R_KEYS = [np.s_[0:3, 5, [1, 2]], np.s_["0,2,1", [1, 2], [3, 4]], np.s_["1,2", A, A],
          np.s_["-1", A, A], np.s_["r", 1:3], np.s_["c", 1:3], np.s_[0:1:5j],
          np.s_["0,3,-1", A[0], [1, 2, 3]], np.s_["0,3,0", A[0], [1, 2, 3]],
          np.s_["1,3,1", A, A], np.s_[1.5, A[0]], np.s_[-1:1:0.5, 4]]


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # numpy's np.matrix
@pytest.mark.parametrize("key", R_KEYS, ids=str)
def test_r_and_c_match_numpy(key):
    for ours, theirs in ((jnp.r_, np.r_), (jnp.c_, np.c_)):
        try:
            want = np.asarray(theirs[key])
        except ValueError:
            with pytest.raises(ValueError):
                ours[key]
            continue
        _same(ours[key], want)


def test_mgrid_ogrid_s_index_exp():
    _same(jnp.mgrid[0:3, 0:1:3j], np.mgrid[0:3, 0:1:3j])
    _same(jnp.mgrid[-1:2:0.5], np.mgrid[-1:2:0.5])
    _same(jnp.ogrid[0:2, 1:4], np.ogrid[0:2, 1:4])
    _same(jnp.mgrid[0:4, 1:3, 2:3], np.mgrid[0:4, 1:3, 2:3])
    assert jnp.s_[1:2, ::3] == np.s_[1:2, ::3] and jnp.index_exp[1] == np.index_exp[1]


def test_ix_and_diag_tri_mask_indices_match_numpy():
    _same(jnp.ix_(np.array([0, 1]), np.array([2, 4, 5])), np.ix_([0, 1], np.array([2, 4, 5])))
    _same(jnp.ix_(np.array([True, False, True]), np.array([1])), np.ix_([True, False, True], [1]))
    _same(jnp.diag_indices(3, 3), np.diag_indices(3, 3))
    _same(jnp.diag_indices_from(np.zeros((4, 4))), np.diag_indices_from(np.zeros((4, 4))))
    for n, k, m in [(3, 0, None), (4, 1, 2), (3, -1, 5), (0, 0, None), (4, 7, None)]:
        _same(jnp.tril_indices(n, k, m), np.tril_indices(n, k, m))
        _same(jnp.triu_indices(n, k, m), np.triu_indices(n, k, m))
    x = np.zeros((3, 5))
    _same(jnp.tril_indices_from(x, 1), np.tril_indices_from(x, 1))
    _same(jnp.triu_indices_from(x, -1), np.triu_indices_from(x, -1))
    _same(jnp.mask_indices(3, jnp.triu, 1), np.mask_indices(3, np.triu, 1))
    rows, cols = jnp.mask_indices(3, jnp.triu, 1, size=5)
    _same((rows, cols), (np.array([0, 0, 1, 0, 0]), np.array([1, 2, 2, 0, 0])))


@pytest.mark.parametrize("order", ["C", "F"])
def test_ravel_and_unravel_match_numpy(order):
    dims = (2, 3, 4)
    idx = (np.array([1, 0, 1]), np.array([2, 1, 0]), np.array([0, 3, 1]))
    _same(jnp.ravel_multi_index(idx, dims, order=order),
          np.ravel_multi_index(idx, dims, order=order))
    wild = (np.array([5, -1]), np.array([7, 2]), np.array([-6, 4]))
    for mode in ("clip", "wrap"):
        _same(jnp.ravel_multi_index(wild, dims, mode=mode, order=order),
              np.ravel_multi_index(wild, dims, mode=mode, order=order))
    flat = np.array([0, 5, 23, 17])
    _same(jnp.unravel_index(flat, dims), np.unravel_index(flat, dims))
    # JAX: -size <= i < 0 counts from the end; further out clamps to the first/last element.
    _same(jnp.unravel_index(np.array([-1, -24, -25, 24, 100]), dims),
          tuple(np.array(c) for c in zip(*[np.unravel_index(i, dims)
                                             for i in (23, 0, 0, 23, 23)])))


def test_index_tricks_trace():
    f = numbax.jit(lambda i, j: jnp.ravel_multi_index((i, j), (3, 4), mode="wrap"))
    _same(f(np.array([1, 4]), np.array([-1, 2])), np.array([7, 6]))
    g = numbax.vmap(lambda i: jnp.stack(jnp.unravel_index(i, (3, 4))))
    _same(g(np.array([0, 7, 11])), np.array([[0, 0], [1, 3], [2, 3]]))


def test_index_tricks_bad_inputs():
    with pytest.raises(NumbaxValueError, match="directive"):
        jnp.r_["x,y", 1]
    with pytest.raises(NumbaxValueError, match="first"):
        jnp.r_[1, "0"]
    with pytest.raises(NumbaxValueError, match="1-d"):
        jnp.ix_(A)
    with pytest.raises(NumbaxTypeError, match="float64"):
        jnp.ix_(np.array([0.5]))
    with pytest.raises(NumbaxValueError, match="equal length"):
        jnp.diag_indices_from(np.zeros((2, 3)))
    with pytest.raises(NumbaxValueError, match=">= 0"):
        jnp.tril_indices(-1)
    with pytest.raises(NumbaxValueError, match="2-d"):
        jnp.triu_indices_from(np.zeros(3))
    with pytest.raises(NumbaxTypeError, match="callable"):
        jnp.mask_indices(3, 4)
    with pytest.raises(NumbaxValueError, match="outside dims"):
        jnp.ravel_multi_index((np.array([3]), np.array([0])), (3, 4))
    with pytest.raises(NumbaxValueError, match="mode"):
        jnp.ravel_multi_index((0, 0), (3, 4), mode="bogus")
    with pytest.raises(NumbaxValueError, match="one index array per dimension"):
        jnp.ravel_multi_index((0,), (3, 4))
    with pytest.raises(NumbaxTypeError, match="float64"):
        jnp.unravel_index(np.array([1.0]), (3,))
    with pytest.raises(ConcretizationTypeError):
        numbax.jit(lambda i: jnp.ravel_multi_index((i, i), (3, 4)))(np.array([1]))
