"""Reductions and cumulative ops: eager vs numpy, jvp/vjp vs finite differences, vmap vs loops."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax.errors import NumbaxTypeError, NumbaxValueError

RNG = np.random.default_rng(0)
SHAPES_AXES = [((5,), (0,)), ((3, 4), (0,)), ((3, 4), (1,)), ((2, 3, 4), (0, 2)),
               ((2, 3, 4), (1,)), ((2, 3), ())]


def _data(shape, dtype):
    if np.dtype(dtype).kind == "i":
        return RNG.integers(-3, 4, size=shape).astype(dtype)
    return (RNG.uniform(0.5, 1.5, size=shape) * RNG.choice([-1, 1], size=shape)).astype(dtype)


def _fd_jvp(f, x, v, eps=1e-6):
    return (np.asarray(f(x + eps * v)) - np.asarray(f(x - eps * v))) / (2 * eps)


def _check_derivatives(f, x, rtol=1e-6):
    """jvp vs central differences, and <vjp(u), v> == <u, jvp(v)>."""
    v = RNG.normal(size=x.shape)
    out, t = numbax.jvp(f, (x,), (v,))
    np.testing.assert_allclose(np.asarray(t), _fd_jvp(f, x, v), rtol=rtol, atol=1e-7)
    u = RNG.normal(size=np.shape(out))
    (ct,) = numbax.vjp(f, x)[1](u)
    np.testing.assert_allclose(np.vdot(np.asarray(ct), v), np.vdot(u, np.asarray(t)),
                               rtol=1e-10, atol=1e-10)


def _hessian(f, x):
    """Second derivatives by nested jvp (independent of jacfwd/jacrev)."""
    n = x.size
    eye = np.eye(n).reshape(n, *x.shape)
    return np.array([[float(numbax.jvp(lambda y, j=j: numbax.jvp(f, (y,), (eye[j],))[1],
                                       (x,), (eye[i],))[1]) for j in range(n)]
                     for i in range(n)])


REDUCERS = {"reduce_sum": (lax.reduce_sum, np.sum), "reduce_max": (lax.reduce_max, np.max),
            "reduce_min": (lax.reduce_min, np.min), "reduce_prod": (lax.reduce_prod, np.prod)}


@pytest.mark.parametrize("name", list(REDUCERS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("shape,axes", SHAPES_AXES)
def test_reduce_eager(name, dtype, shape, axes):
    fn, ref = REDUCERS[name]
    x = _data(shape, dtype)
    out = fn(x, axes)
    assert out.dtype == dtype
    np.testing.assert_allclose(np.asarray(out), ref(x, axis=axes).astype(dtype), rtol=1e-6)


@pytest.mark.parametrize("name", list(REDUCERS))
@pytest.mark.parametrize("shape,axes", SHAPES_AXES)
def test_reduce_derivatives(name, shape, axes):
    fn, _ = REDUCERS[name]
    _check_derivatives(lambda x: fn(x, axes), _data(shape, np.float64))


def test_reduce_prod_derivatives_with_zeros():
    x = np.array([[1.5, 0.0, 2.0, -3.0], [0.0, 2.0, 0.0, 4.0], [1.0, 2.0, 3.0, 4.0]])
    _check_derivatives(lambda x: lax.reduce_prod(x, (1,)), x)
    grad = numbax.vjp(lambda x: lax.reduce_prod(x, (1,)), x)[1](np.ones(3))[0]
    expected = np.array([[0.0, -9.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [24.0, 12.0, 8.0, 6.0]])
    np.testing.assert_allclose(np.asarray(grad), expected)


@pytest.mark.parametrize("x", [np.array([1.5, 0.0, 3.0, 0.5]), np.array([1.5, 2.0, 3.0, 0.5]),
                               np.array([0.0, 2.0, 0.0, 0.5])])
def test_reduce_prod_hessian(x):
    expected = np.array([[0.0 if i == j else np.prod(np.delete(x, [i, j]))
                          for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(_hessian(lambda y: lax.reduce_prod(y, (0,)), x), expected)


def test_reduce_max_tie_jvp_averages():
    x = np.array([1.0, 3.0, 3.0])
    _, t = numbax.jvp(lambda x: lax.reduce_max(x, (0,)), (x,), (np.array([1.0, 2.0, 4.0]),))
    assert float(t) == 3.0


def test_reduce_sum_transpose_is_broadcast():
    x = RNG.normal(size=(2, 3, 4))
    u = RNG.normal(size=(3,))
    (ct,) = numbax.vjp(lambda x: lax.reduce_sum(x, (0, 2)), x)[1](u)
    np.testing.assert_allclose(np.asarray(ct), np.broadcast_to(u[None, :, None], x.shape))


@pytest.mark.parametrize("name", [*REDUCERS, "reduce_and", "reduce_or"])
@pytest.mark.parametrize("in_axis", [0, 1])
def test_reduce_vmap(name, in_axis):
    fn = {**{k: v[0] for k, v in REDUCERS.items()}, "reduce_and": lax.reduce_and,
          "reduce_or": lax.reduce_or}[name]
    x = _data((3, 4, 5), np.int32 if name in ("reduce_and", "reduce_or") else np.float64)
    out = numbax.vmap(lambda x: fn(x, (1,)), in_axes=in_axis)(x)
    loop = np.stack([np.asarray(fn(np.take(x, i, in_axis), (1,)))
                     for i in range(x.shape[in_axis])])
    np.testing.assert_array_equal(np.asarray(out), loop)


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.uint8])
@pytest.mark.parametrize("shape,axes", SHAPES_AXES)
def test_reduce_and_or(dtype, shape, axes):
    x = RNG.integers(0, 256, size=shape).astype(dtype)
    if dtype == np.bool_:
        ref_and, ref_or = np.all(x, axis=axes), np.any(x, axis=axes)
    else:
        ref_and, ref_or = np.bitwise_and.reduce(x, axis=axes), np.bitwise_or.reduce(x, axis=axes)
    np.testing.assert_array_equal(np.asarray(lax.reduce_and(x, axes)), ref_and)
    np.testing.assert_array_equal(np.asarray(lax.reduce_or(x, axes)), ref_or)
    assert lax.reduce_and(x, axes).dtype == dtype


def test_reduce_and_rejects_floats():
    with pytest.raises(NumbaxTypeError, match="reduce_and.*float64"):
        lax.reduce_and(np.ones(3), (0,))


@pytest.mark.parametrize("fn", [lax.reduce_sum, lax.reduce_max, lax.reduce_prod, lax.reduce_or])
def test_reduce_axis_out_of_bounds(fn):
    with pytest.raises(NumbaxValueError, match=r"axis 2 is out of bounds.*\(3, 4\)"):
        fn(np.ones((3, 4), np.int32), (2,))


# ----------------------------------------------------------------------------- argmax/argmin


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("shape,axis", [((7,), 0), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), 1)])
def test_argmax_argmin(dtype, shape, axis):
    x = RNG.integers(0, 3, size=shape).astype(dtype)  # many ties: first occurrence wins
    for fn, ref in ((lax.argmax, np.argmax), (lax.argmin, np.argmin)):
        out = fn(x, axis, np.int32)
        assert out.dtype == np.int32
        np.testing.assert_array_equal(np.asarray(out), ref(x, axis=axis))


def test_argmax_nan_first_wins():
    x = np.array([[1.0, np.nan, 5.0, np.nan], [2.0, 1.0, 3.0, 0.0]])
    np.testing.assert_array_equal(np.asarray(lax.argmax(x, 1, np.int32)), [1, 2])
    np.testing.assert_array_equal(np.asarray(lax.argmin(x, 1, np.int32)), [1, 3])


@pytest.mark.parametrize("in_axis", [0, 1])
def test_argmax_vmap_and_zero_tangent(in_axis):
    x = RNG.normal(size=(3, 4, 5))
    out = numbax.vmap(lambda x: lax.argmax(x, 1, np.int32), in_axes=in_axis)(x)
    loop = np.stack([np.argmax(np.take(x, i, in_axis), axis=1) for i in range(x.shape[in_axis])])
    np.testing.assert_array_equal(np.asarray(out), loop)
    _, t = numbax.jvp(lambda x: lax.argmax(x, 0, np.int32), (x,), (x,))
    assert not np.any(np.asarray(t, dtype=np.float64)) if np.asarray(t).dtype.kind == "f" \
        else np.asarray(t).shape == (4, 5)


def test_argmax_bad_inputs():
    with pytest.raises(NumbaxValueError, match=r"argmax: axis 3 is out of bounds.*\(3, 4\)"):
        lax.argmax(np.ones((3, 4)), 3, np.int32)
    with pytest.raises(NumbaxTypeError, match="index_dtype.*float32"):
        lax.argmin(np.ones((3, 4)), 0, np.float32)


# ----------------------------------------------------------------------------- cumulative ops

CUMULATIVE = {"cumsum": (lax.cumsum, np.cumsum), "cumprod": (lax.cumprod, np.cumprod),
              "cummax": (lax.cummax, np.maximum.accumulate),
              "cummin": (lax.cummin, np.minimum.accumulate)}


def _cum_ref(ref, x, axis, reverse):
    if reverse:
        return np.flip(ref(np.flip(x, axis), axis=axis), axis)
    return ref(x, axis=axis)


@pytest.mark.parametrize("name", list(CUMULATIVE))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("shape,axis", [((6,), 0), ((3, 4), 0), ((3, 4), 1), ((2, 3, 5), -1)])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_eager(name, dtype, shape, axis, reverse):
    fn, ref = CUMULATIVE[name]
    x = _data(shape, dtype)
    out = fn(x, axis=axis, reverse=reverse)
    assert out.dtype == dtype
    np.testing.assert_allclose(np.asarray(out), _cum_ref(ref, x, axis, reverse).astype(dtype),
                               rtol=1e-6)


@pytest.mark.parametrize("name", list(CUMULATIVE))
@pytest.mark.parametrize("shape,axis", [((7,), 0), ((3, 4), 0), ((2, 3, 5), 2)])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_derivatives(name, shape, axis, reverse):
    fn, _ = CUMULATIVE[name]
    x = RNG.permutation(np.prod(shape)).reshape(shape) * 0.1 + 0.3  # no ties
    _check_derivatives(lambda x: fn(x, axis=axis, reverse=reverse), x)


def test_cumprod_derivatives_with_zeros():
    x = np.array([1.5, 0.0, 2.0, -3.0, 0.0, 0.7])
    _check_derivatives(lambda x: lax.cumprod(x), x)
    _check_derivatives(lambda x: lax.cumprod(x, reverse=True), x)
    jac = np.stack([np.asarray(numbax.jvp(lax.cumprod, (x,), (e,))[1]) for e in np.eye(6)], -1)
    expected = np.array([[np.prod(np.delete(x[:i + 1], k)) if k <= i else 0.0
                          for k in range(6)] for i in range(6)])
    np.testing.assert_allclose(jac, expected)


def test_cummax_jvp_follows_running_argmax():
    x = np.array([1.0, 3.0, 2.0, 5.0, 4.0])
    jac = np.stack([np.asarray(numbax.jvp(lax.cummax, (x,), (e,))[1]) for e in np.eye(5)], -1)
    expected = np.zeros((5, 5))
    for i in range(5):
        expected[i, np.argmax(x[:i + 1])] = 1.0
    np.testing.assert_array_equal(jac, expected)


def _lexicographic_running(z, larger):
    """A Python loop: the running max (`larger`) or min of complex values by real part, then
    imaginary part, and the index each prefix's winner came from (the first of ties)."""
    out, src = [], []
    for i, v in enumerate(z):
        key = (v.real, v.imag)
        if not out or (key > (out[-1].real, out[-1].imag) if larger
                       else key < (out[-1].real, out[-1].imag)):
            out.append(v)
            src.append(i)
        else:
            out.append(out[-1])
            src.append(src[-1])
    return np.array(out), src


@pytest.mark.parametrize("larger", [True, False])
def test_complex_cummax_cummin_order_by_real_then_imaginary_part(larger):
    """As JAX: complex values compare by real part, then imaginary part; eager, jit, vmap,
    reverse and the derivative (the tangent of each prefix's winner)."""
    z = (np.array([1, 3, 0.5, 3, 3, -2, 3]) + 1j * np.array([2, -1, 5, 0, 0.5, 9, 0.5])) \
        .astype(np.complex64)
    fn = lax.cummax if larger else lax.cummin
    want, src = _lexicographic_running(z, larger)
    np.testing.assert_array_equal(np.asarray(fn(z)), want)
    np.testing.assert_array_equal(np.asarray(numbax.jit(fn)(z)), want)
    back, _ = _lexicographic_running(z[::-1], larger)
    np.testing.assert_array_equal(np.asarray(fn(z, reverse=True)), back[::-1])
    rows = np.stack([z, z[::-1]])
    np.testing.assert_array_equal(np.asarray(numbax.vmap(fn)(rows)[1]), back)
    # d/dz of sum(real(fn(z))): each element counts the prefixes it wins, and the last
    # prefix's tie (3+0.5j at 4 and 6) is split as JAX splits it (jax 0.10.2's output)
    grad = numbax.grad(lambda v: jnp.real(jnp.sum(fn(v))))(z)
    jax_grad = [1, 2, 0, 1, 2.5, 0, 0.5] if larger else [2, 0, 3, 0, 0, 2, 0]
    np.testing.assert_array_equal(np.asarray(grad), jax_grad)
    if not larger:  # no ties among the winners: the loop's counts are the truth too
        np.testing.assert_array_equal(jax_grad, np.bincount(src, minlength=len(z)))


def test_cumsum_transpose_is_reverse_cumsum():
    u = RNG.normal(size=(3, 5))
    (ct,) = numbax.vjp(lambda x: lax.cumsum(x, axis=1), np.zeros((3, 5)))[1](u)
    np.testing.assert_allclose(np.asarray(ct), np.flip(np.cumsum(np.flip(u, 1), 1), 1))
    jaxpr = str(numbax.make_jaxpr(lambda u: numbax.vjp(lambda x: lax.cumsum(x, axis=1),
                                                       np.zeros((3, 5)))[1](u))(u))
    assert "cumsum[axis=1 reverse=True]" in jaxpr


@pytest.mark.parametrize("name", list(CUMULATIVE))
@pytest.mark.parametrize("in_axis", [0, 1])
def test_cumulative_vmap(name, in_axis):
    fn, _ = CUMULATIVE[name]
    x = _data((3, 4, 5), np.float64)
    out = numbax.vmap(lambda x: fn(x, axis=1, reverse=True), in_axes=in_axis)(x)
    loop = np.stack([np.asarray(fn(np.take(x, i, in_axis), axis=1, reverse=True))
                     for i in range(x.shape[in_axis])])
    np.testing.assert_allclose(np.asarray(out), loop)


def test_cumulative_grad_under_vmap():
    x = RNG.uniform(0.5, 1.5, size=(4, 5))
    g = numbax.vmap(numbax.grad(lambda x: lax.reduce_sum(lax.cumprod(x), (0,))))(x)
    for i in range(4):
        (ct,) = numbax.vjp(lambda v: lax.reduce_sum(lax.cumprod(v), (0,)), x[i])[1](
            np.array(1.0))
        np.testing.assert_allclose(np.asarray(g[i]), np.asarray(ct))


@pytest.mark.parametrize("fn", [lax.cumsum, lax.cumprod, lax.cummax, lax.cummin])
def test_cumulative_bad_inputs(fn):
    with pytest.raises(NumbaxValueError, match=r"axis 2 is out of bounds.*\(3, 4\)"):
        fn(np.ones((3, 4)), axis=2)
    with pytest.raises(NumbaxValueError, match="out of bounds"):
        fn(np.ones((3, 4)), axis=-3)


def test_general_reduce_under_transformations_and_bad_input():
    import numbax.numpy as jnp
    from numbax.test_util import check_grads

    x = np.random.default_rng(5).normal(size=(4, 5))
    prod = lambda v: lax.reduce(v, 1.0, lambda a, b: a * b, (1,))  # noqa: E731
    np.testing.assert_allclose(numbax.jit(prod)(x), x.prod(1))
    np.testing.assert_allclose(numbax.vmap(prod)(np.stack([x, 2 * x])),
                               np.stack([x.prod(1), (2 * x).prod(1)]))
    check_grads(prod, (x,), order=2, modes=("fwd", "rev"))
    pair = lambda a, b: (jnp.maximum(a[0], b[0]), jnp.where(a[0] >= b[0], a[1], b[1]))  # noqa
    best, where = numbax.jit(lambda v: lax.reduce((v, np.arange(20).reshape(4, 5)),
                                                  (-np.inf, 0), pair, (1,)))(x)
    np.testing.assert_allclose(best, x.max(1))
    np.testing.assert_array_equal(where, x.argmax(1) + 5 * np.arange(4))
    with pytest.raises(ValueError, match="same tree structure"):
        lax.reduce((x, x), 0.0, lax.add, (0,))
    with pytest.raises(ValueError, match="shape"):
        lax.reduce((x, x[:2]), (0.0, 0.0), lambda a, b: a, (0,))
    with pytest.raises(TypeError, match="dtype"):
        lax.reduce(x, np.float32(0), lambda a, b: a + b, (0,))
    with pytest.raises(ValueError, match="scalars"):
        lax.reduce(x, np.zeros(2), lambda a, b: a + b, (0,))
    with pytest.raises(ValueError, match="dimensions"):
        lax.reduce(x, 0.0, lax.add, (2,))
    with pytest.raises(ValueError, match="structure"):  # JAX 0.10.2's class
        lax.reduce(x, 0.0, lambda a, b: (a, b), (0,))
    with pytest.raises(TypeError, match="floating"):
        lax.cumlogsumexp(np.arange(3))
    with pytest.raises(TypeError):
        lax.reduce_xor(x, (0,))
