"""jnp.ufunc objects (add, multiply, ..., frompyfunc) and their reduce/accumulate/at/reduceat/
outer methods against numpy's ufuncs."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError

X = np.array([[1, 2, 3], [4, 5, 6]])
F = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -2.0]])
B = np.array([[True, False, True], [True, True, False]])
NAMES = ["add", "multiply", "subtract", "maximum", "minimum", "bitwise_and", "bitwise_or",
         "bitwise_xor", "logical_and", "logical_or", "logical_xor", "logaddexp", "logaddexp2"]


def _close(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-13)


def _data(name):
    if name.startswith("logical"):
        return B
    if name.startswith("bitwise"):
        return X
    return F


@pytest.mark.parametrize("name", NAMES)
def test_ufunc_methods_match_numpy(name):
    ours, theirs = getattr(jnp, name), getattr(np, name)
    assert isinstance(ours, jnp.ufunc) and repr(ours) == f"<jnp.ufunc '{name}'>"
    assert (ours.nin, ours.nout) == (theirs.nin, theirs.nout)
    x = _data(name)
    _close(ours(x, x[::-1]), theirs(x, x[::-1]))
    _close(ours.outer(x[0], x[1]), theirs.outer(x[0], x[1]))
    if name != "subtract":  # numpy's subtract.reduce is valid too, but JAX's has no identity
        for axis in (0, 1, None):
            _close(ours.reduce(x, axis=axis), theirs.reduce(x, axis=axis))
        _close(ours.reduce(x, axis=1, keepdims=True), theirs.reduce(x, axis=1, keepdims=True))
    for axis in (0, 1):
        _close(ours.accumulate(x, axis=axis), theirs.accumulate(x, axis=axis))
    idx = np.array([0, 3, 1])
    _close(ours.reduceat(x.ravel(), idx), theirs.reduceat(x.ravel(), idx))
    got = ours.at(x.ravel(), np.array([1, 1, 4]), x.ravel()[:3], inplace=False)
    want = x.ravel().copy()
    theirs.at(want, np.array([1, 1, 4]), x.ravel()[:3])
    _close(got, want)


def test_identities_and_where():
    assert jnp.add.identity == 0 and jnp.multiply.identity == 1 and jnp.maximum.identity is None
    assert jnp.logical_and.identity is True and jnp.logaddexp.identity == -np.inf
    mask = F > 0
    _close(jnp.add.reduce(F, axis=1, where=mask), np.add.reduce(F, axis=1, where=mask))
    _close(jnp.minimum.reduce(F, axis=0, where=mask, initial=9.0),
           np.minimum.reduce(F, axis=0, where=mask, initial=9.0))
    _close(jnp.multiply.reduce(F, initial=2.0), np.multiply.reduce(F, axis=0, initial=2.0))
    _close(jnp.logaddexp.reduce(F, axis=None), np.logaddexp.reduce(F.ravel()))
    _close(jnp.negative.at(np.arange(4), np.array([1, 3]), inplace=False), [0, -1, 2, -3])


def test_frompyfunc_ufunc():
    f = jnp.frompyfunc(lambda a, b: a * b + 1, 2, 1, identity=1)
    assert isinstance(f, jnp.ufunc) and f.identity == 1
    _close(f(X, 2), X * 2 + 1)
    _close(f.reduce(np.array([1, 2, 3])), 16)  # ((1 * 1 + 1) * 2 + 1) * 3 + 1 from identity
    no_identity = jnp.frompyfunc(lambda a, b: a * b + 1, 2, 1)
    _close(no_identity.reduce(np.array([1, 2, 3])), 10)  # (1 * 2 + 1) * 3 + 1
    _close(f.accumulate(np.array([1, 2, 3])), [1, 3, 10])
    _close(f.outer(np.arange(2), np.arange(3)), np.outer(np.arange(2), np.arange(3)) + 1)
    # repeated indices apply in turn, as numpy's unbuffered ufunc.at
    _close(f.at(np.zeros(3, int), np.array([0, 0, 2]), 3, inplace=False), [4, 0, 1])
    g = jnp.frompyfunc(lambda a, b: a - b, 2, 1)
    _close(g.reduceat(np.arange(8), np.array([0, 4, 1, 5])),
           np.subtract.reduceat(np.arange(8), np.array([0, 4, 1, 5])))
    _close(g.reduce(F, axis=(0, 1)), np.subtract.reduce(F.ravel()))


def test_ufuncs_under_transforms():
    f = numbax.jit(lambda x: jnp.maximum.accumulate(x, axis=1) + jnp.add.reduce(x))
    _close(f(F), np.maximum.accumulate(F, axis=1) + np.add.reduce(F))
    g = numbax.grad(lambda x: jnp.logaddexp.reduce(x, axis=None))(F)
    _close(g, np.exp(F - np.logaddexp.reduce(F.ravel())))
    h = numbax.jit(jnp.frompyfunc(lambda a, b: jnp.where(a > b, a - b, 2 * b), 2, 1).accumulate)
    _close(h(np.array([1.0, 3.0, 2.0, 5.0])), [1.0, 6.0, 4.0, 10.0])
    _close(numbax.vmap(jnp.multiply.reduce)(F), F.prod(axis=1))


def test_ufunc_bad_inputs():
    with pytest.raises(NumbaxValueError, match="inplace=False"):
        jnp.add.at(X, 0, 1)
    with pytest.raises(NumbaxValueError, match="out is not supported"):
        jnp.add(X, X, out=X)
    with pytest.raises(NumbaxTypeError, match="got 1 arguments, expected 2"):
        jnp.add(X)
    with pytest.raises(NumbaxValueError, match="only binary"):
        jnp.negative.reduce(X)
    with pytest.raises(NumbaxValueError, match="needs initial"):
        jnp.maximum.reduce(F, where=F > 0)
    with pytest.raises(NumbaxTypeError, match="expected bool"):
        jnp.add.reduce(F, where=np.ones(3))
    with pytest.raises(NumbaxValueError, match="no identity"):
        jnp.frompyfunc(lambda a, b: a - b, 2, 1).reduce(np.zeros(0))
    with pytest.raises(NumbaxValueError, match="expected one int"):
        jnp.add.accumulate(X, axis=None)
    with pytest.raises(NumbaxValueError, match="1-d integers"):
        jnp.add.reduceat(X, np.array([0.5]))
    with pytest.raises(NumbaxTypeError, match="callable"):
        jnp.ufunc(3, 2, 1)
    with pytest.raises(NumbaxTypeError, match="integers or booleans"):
        jnp.bitwise_or.reduce(F)
