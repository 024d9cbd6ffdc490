"""jnp.choose/compress/extract/piecewise/partition/argpartition/sort_complex against numpy
(and JAX's documented orderings), with size= under jit, vmap and grad."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import ConcretizationTypeError, NumbaxTypeError, NumbaxValueError

RNG = np.random.default_rng(3)
M = RNG.integers(0, 20, size=(4, 6))


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_array_equal(got, want)


def test_choose_matches_numpy():
    a = np.array([[0, 2, 1], [1, 0, 2]])
    choices = [np.arange(3), 10 + np.arange(3), np.full((2, 3), 7)]
    _same(jnp.choose(a, choices), np.choose(a, choices))
    wild = np.array([[0, 5, -1], [3, 1, 2]])
    for mode in ("wrap", "clip"):
        _same(jnp.choose(wild, choices, mode=mode), np.choose(wild, choices, mode=mode))


def test_compress_and_extract_match_numpy():
    cond = np.array([True, False, True, True])
    for axis in (0, 1, None):
        _same(jnp.compress(cond, M, axis=axis), np.compress(cond, M, axis=axis))
    _same(jnp.compress(np.array([True, False, True, True, False, False, False]), M, axis=1),
          np.compress([True, False, True, True, False, False, False], M, axis=1))
    _same(jnp.extract(M % 3 == 0, M), np.extract(M % 3 == 0, M))
    f = numbax.jit(lambda c, m: jnp.compress(c, m, axis=1, size=5, fill_value=-1))
    c6 = np.array([True, False, True, True, False, True])
    want = np.full((4, 5), -1)
    want[:, :4] = np.compress(c6, M, axis=1)
    _same(f(c6, M), want)
    e = numbax.jit(lambda m: jnp.extract(m > 10, m, size=30))(M)
    want = np.zeros(30, M.dtype)
    kept = np.extract(M > 10, M)
    want[:kept.size] = kept
    _same(e, want)


def test_piecewise_matches_numpy():
    x = np.linspace(-2.0, 2.0, 9)
    conds = [x < 0, x > 1]
    funcs = [lambda v: -v, lambda v: v ** 2, lambda v: 0.5]
    _same(jnp.piecewise(x, conds, funcs), np.piecewise(x, conds, funcs))
    _same(jnp.piecewise(x, conds, funcs[:2]), np.piecewise(x, conds, funcs[:2]))
    _same(jnp.piecewise(x, x > 0, [1.0, -1.0]), np.piecewise(x, x > 0, [1.0, -1.0]))
    xi = np.arange(-3, 4)
    _same(jnp.piecewise(xi, [xi < 0, xi >= 0], [lambda v: v * 2, 7]),
          np.piecewise(xi, [xi < 0, xi >= 0], [lambda v: v * 2, 7]))
    g = numbax.grad(lambda x: jnp.piecewise(x, [x < 0], [lambda v: v ** 2, jnp.sin]).sum())(x)
    np.testing.assert_allclose(g, np.where(x < 0, 2 * x, np.cos(x)))


@pytest.mark.parametrize("kth", [0, 2, 3, -1])
@pytest.mark.parametrize("axis", [1, -1, 0])
def test_partition_properties_and_jax_order(kth, axis):
    n = M.shape[axis]
    k = kth % n
    part = np.asarray(jnp.partition(M, kth, axis=axis))
    srt = np.sort(M, axis=axis)
    moved, s = np.moveaxis(part, axis, -1), np.moveaxis(srt, axis, -1)
    np.testing.assert_array_equal(moved[..., :k + 1], s[..., :k + 1])  # JAX: ascending
    np.testing.assert_array_equal(moved[..., k + 1:], s[..., k + 1:][..., ::-1])  # descending
    idx = np.asarray(jnp.argpartition(M, kth, axis=axis))
    taken = np.moveaxis(np.take_along_axis(M, idx, axis=axis), axis, -1)
    np.testing.assert_array_equal(taken[..., k], s[..., k])
    assert (taken[..., :k] <= taken[..., k:k + 1]).all()
    assert (taken[..., k + 1:] >= taken[..., k:k + 1]).all()
    rest = np.moveaxis(idx, axis, -1)[..., k + 1:]
    assert (np.diff(rest, axis=-1) > 0).all()  # JAX: the rest in increasing index order
    np.testing.assert_array_equal(np.sort(np.moveaxis(idx, axis, -1), -1),
                                  np.broadcast_to(np.arange(n), s.shape))


def test_sort_complex_matches_numpy():
    z = np.array([1 + 2j, 1 - 1j, 0 + 5j, -3 + 0j, 1 + 2j])
    _same(jnp.sort_complex(z), np.sort_complex(z))
    _same(jnp.sort_complex(np.array([3, 1, 2])), np.sort_complex(np.array([3, 1, 2])))
    zz = RNG.integers(0, 3, size=(3, 4)) + 1j * RNG.integers(0, 3, size=(3, 4))
    _same(jnp.sort_complex(zz), np.sort_complex(zz))


def test_selection_bad_inputs():
    with pytest.raises(NumbaxValueError, match="outside"):
        jnp.choose(np.array([0, 3]), [np.arange(2), np.arange(2)])
    with pytest.raises(ConcretizationTypeError):
        numbax.jit(lambda a: jnp.choose(a, [np.arange(2), np.arange(2)]))(np.array([0, 1]))
    with pytest.raises(NumbaxValueError, match="mode is 'bogus'"):
        jnp.choose(np.array([0]), [np.arange(1)], mode="bogus")
    with pytest.raises(NumbaxTypeError, match="integer indices"):
        jnp.choose(np.array([0.5]), [np.arange(1)])
    with pytest.raises(NumbaxValueError, match="1-d"):
        jnp.compress(np.ones((2, 2), bool), M)
    with pytest.raises(NumbaxValueError, match="True ones past"):
        jnp.compress(np.ones(7, bool), M, axis=1)
    with pytest.raises(ConcretizationTypeError):
        numbax.jit(lambda c: jnp.compress(c, M, axis=1))(np.ones(6, bool))
    with pytest.raises(NumbaxValueError, match="funclist has 3"):
        jnp.piecewise(np.ones(3), [np.ones(3, bool)], [1, 2, 3])
    with pytest.raises(NumbaxValueError, match="kth 7"):
        jnp.partition(M, 7)
    with pytest.raises(NumbaxTypeError, match="complex"):
        jnp.argpartition(np.array([1j]), 0)
    with pytest.raises(ConcretizationTypeError):
        numbax.jit(lambda k: jnp.partition(M, k))(1)
