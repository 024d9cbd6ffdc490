"""sort, sort_key_val, top_k, take_along_axis: vs numpy, derivatives, vmap vs a loop."""
import numpy as np
import pytest

import numbax
from numbax import lax
from numbax._src.lax import along_axis
from numbax.errors import NumbaxValueError

RNG = np.random.default_rng(2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("shape,dim", [((7,), -1), ((3, 4), 0), ((3, 4), 1), ((2, 3, 5), 1)])
def test_sort_eager(dtype, shape, dim):
    x = RNG.integers(-5, 5, size=shape).astype(dtype)
    out = lax.sort(x, dimension=dim)
    assert out.dtype == dtype
    np.testing.assert_array_equal(np.asarray(out), np.sort(x, axis=dim))


def test_sort_nans_last():
    x = np.array([3.0, np.nan, -1.0, np.inf, np.nan, 0.0])
    np.testing.assert_array_equal(np.asarray(lax.sort(x)), np.sort(x))


def test_multi_operand_lexicographic_and_stable():
    k1 = np.array([1, 0, 1, 0, 1, 0])
    k2 = np.array([2.0, 2.0, 1.0, np.nan, 2.0, 0.0])
    v = np.arange(6.0)
    a, b, c = lax.sort((k1, k2, v), num_keys=2)
    perm = np.lexsort((k2, k1))
    np.testing.assert_array_equal(np.asarray(c), v[perm])
    np.testing.assert_array_equal(np.asarray(a), k1[perm])
    keys, vals = lax.sort_key_val(np.array([2, 1, 2, 1]), np.array([0.0, 1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(np.asarray(vals), [1.0, 3.0, 0.0, 2.0])


@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 4), 0), ((3, 4), 1)])
def test_sort_derivatives(shape, dim):
    x = RNG.permutation(int(np.prod(shape))).reshape(shape) * 0.5  # distinct keys
    v = RNG.normal(size=shape)
    f = lambda x: lax.sort(x, dimension=dim)  # noqa: E731
    out, t = numbax.jvp(f, (x,), (v,))
    eps = 1e-6
    fd = (np.asarray(f(x + eps * v)) - np.asarray(f(x - eps * v))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(t), fd, rtol=1e-6)
    u = RNG.normal(size=shape)
    (ct,) = numbax.vjp(f, x)[1](u)
    np.testing.assert_allclose(np.vdot(np.asarray(ct), v), np.vdot(u, np.asarray(t)))


def test_sort_key_val_derivative_of_values():
    keys = np.array([3.0, 1.0, 2.0])
    vals = RNG.normal(size=3)
    f = lambda k, v: lax.sort_key_val(k, v)[1]  # noqa: E731
    _, t = numbax.jvp(f, (keys, vals), (np.zeros(3), np.array([10.0, 20.0, 30.0])))
    np.testing.assert_array_equal(np.asarray(t), [20.0, 30.0, 10.0])
    ck, cv = numbax.vjp(f, keys, vals)[1](np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(np.asarray(cv), [3.0, 1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(ck), np.zeros(3))


@pytest.mark.parametrize("in_axis", [0, 1])
def test_sort_vmap(in_axis):
    x, y = RNG.normal(size=(4, 5, 6)), RNG.normal(size=(4, 5, 6))
    f = lambda x, y: lax.sort((x, y), dimension=0)  # noqa: E731
    a, b = numbax.vmap(f, in_axes=(in_axis, None))(x, y[:, 0] if in_axis == 1 else y[0])
    for i in range(x.shape[in_axis]):
        xi = np.take(x, i, in_axis)
        yi = y[:, 0] if in_axis == 1 else y[0]
        perm = np.argsort(xi, axis=0, kind="stable")
        np.testing.assert_array_equal(np.asarray(a[i]), np.take_along_axis(xi, perm, 0))
        np.testing.assert_array_equal(np.asarray(b[i]), np.take_along_axis(yi, perm, 0))


def test_sort_grad_under_vmap():
    x = RNG.normal(size=(3, 5))
    w = np.arange(5.0)
    g = numbax.vmap(numbax.grad(lambda x: lax.reduce_sum(lax.sort(x) * w, (0,))))(x)
    expected = np.stack([w[np.argsort(np.argsort(r))] for r in x])
    np.testing.assert_allclose(np.asarray(g), expected)


def test_top_k():
    x = np.array([[1.0, 5.0, 3.0, 5.0, 2.0], [0.0, -1.0, 4.0, 2.0, 9.0]])
    vals, idx = lax.top_k(x, 3)
    np.testing.assert_array_equal(np.asarray(vals), [[5.0, 5.0, 3.0], [9.0, 4.0, 2.0]])
    np.testing.assert_array_equal(np.asarray(idx), [[1, 3, 2], [4, 2, 3]])
    (ct,) = numbax.vjp(lambda x: lax.top_k(x, 2)[0], x)[1](np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(np.asarray(ct), [[0, 1, 0, 2, 0], [0, 0, 4, 0, 3]])


def test_take_along_axis_transpose_consistency():
    x = RNG.normal(size=(3, 4))
    idx = RNG.integers(0, 3, size=(5, 4))
    f = lambda x: along_axis.take_along_axis(x, idx, 0)  # noqa: E731
    np.testing.assert_array_equal(np.asarray(f(x)), np.take_along_axis(x, idx, 0))
    v, u = RNG.normal(size=(3, 4)), RNG.normal(size=(5, 4))
    _, t = numbax.jvp(f, (x,), (v,))
    (ct,) = numbax.vjp(f, x)[1](u)
    np.testing.assert_allclose(np.vdot(np.asarray(ct), v), np.vdot(u, np.asarray(t)))
    g = lambda x, i: along_axis.take_along_axis(x, i, 0)  # noqa: E731
    out = numbax.vmap(g, in_axes=(1, 1), out_axes=1)(x, idx)
    np.testing.assert_array_equal(np.asarray(out), np.take_along_axis(x, idx, 0))
    out = numbax.vmap(g, in_axes=(1, None), out_axes=1)(x, idx[:, 0])
    np.testing.assert_array_equal(np.asarray(out), x[idx[:, 0], :])


def test_sort_bad_inputs():
    with pytest.raises(NumbaxValueError, match=r"dimension 2 is out of bounds.*\(3, 4\)"):
        lax.sort(np.ones((3, 4)), dimension=2)
    with pytest.raises(NumbaxValueError, match=r"operand 1 has shape \(4,\)"):
        lax.sort((np.ones(3), np.ones(4)))
    with pytest.raises(NumbaxValueError, match="num_keys is 3"):
        lax.sort((np.ones(3), np.ones(3)), num_keys=3)
    with pytest.raises(NumbaxValueError, match=r"top_k.*k=6"):
        lax.top_k(np.ones(5), 6)
