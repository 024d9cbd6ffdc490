"""numbax.numpy.linalg vs numpy.linalg: values, dtypes, batches, gradients, vmap, bad input."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError
from tests.lax._checks import check_ad

RNG = np.random.default_rng(2)
TOL = {np.float32: 2e-4, np.float64: 1e-10}
SQUARE = [(1, 1), (3, 3), (6, 6), (2, 4, 4), (2, 3, 3, 3)]


def well(shape, dtype=np.float64):
    return (RNG.standard_normal(shape) + 2 * shape[-1] * np.eye(shape[-1])).astype(dtype)


def spd(shape, dtype=np.float64):
    a = RNG.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def close(x, y, dtype=np.float64, scale=10):
    np.testing.assert_allclose(np.asarray(x), y, rtol=TOL[dtype] * scale,
                               atol=TOL[dtype] * scale)


# ----------------------------------------------------------------------------- values


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SQUARE)
def test_inv_det_slogdet(shape, dtype):
    a = well(shape, dtype)
    inv = jnp.linalg.inv(a)
    assert np.asarray(inv).dtype == dtype
    close(inv, np.linalg.inv(a), dtype)
    close(jnp.linalg.det(a), np.linalg.det(a), dtype, scale=100)
    sign, logdet = jnp.linalg.slogdet(a)
    sign_np, logdet_np = np.linalg.slogdet(a)
    np.testing.assert_array_equal(np.asarray(sign), sign_np)
    close(logdet, logdet_np, dtype)


@pytest.mark.filterwarnings("ignore:divide by zero encountered in log")
def test_det_sign_with_pivoting_and_singular():
    a = np.array([[0., 1., 0.], [0., 0., 1.], [1., 0., 0.]])  # a cyclic permutation: det 1
    assert float(jnp.linalg.det(a)) == pytest.approx(1.0)
    swap = np.array([[0., 1.], [1., 0.]])
    assert float(jnp.linalg.det(swap)) == pytest.approx(-1.0)
    sing = np.array([[1., 2.], [2., 4.]])
    assert float(jnp.linalg.det(sing)) == 0.0
    sign, logdet = jnp.linalg.slogdet(sing)
    assert float(sign) == 0.0 and float(logdet) == -np.inf


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_shape,b_shape", [((3, 3), (3,)), ((3, 3), (3, 2)),
                                             ((2, 4, 4), (4,)), ((2, 4, 4), (2, 4, 3)),
                                             ((2, 4, 4), (1, 4, 3)), ((4, 4), (5, 4, 2)),
                                             ((2, 4, 4), (4, 3))])
def test_solve(a_shape, b_shape, dtype):
    # numpy 2's rule (and JAX's since 0.5): b is a vector only when it is 1-d
    a = well(a_shape, dtype)
    b = RNG.standard_normal(b_shape).astype(dtype)
    x = jnp.linalg.solve(a, b)
    expected = np.linalg.solve(a, b)
    assert np.shape(x) == expected.shape and np.asarray(x).dtype == dtype
    close(x, expected, dtype)


def test_integer_input_promotes_to_float():
    a = np.array([[2, 1], [1, 3]])
    out = jnp.linalg.inv(a)
    assert np.asarray(out).dtype == np.float64
    close(out, np.linalg.inv(a))
    close(jnp.linalg.solve(a, np.array([1, 2])), np.linalg.solve(a, [1, 2]))
    close(jnp.linalg.det(a), np.linalg.det(a))
    close(jnp.linalg.cholesky(a), np.linalg.cholesky(a))
    close(jnp.linalg.norm(np.array([3, 4])), 5.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SQUARE)
def test_cholesky_eigh_eigvalsh(shape, dtype):
    a = spd(shape, dtype)
    close(jnp.linalg.cholesky(a), np.linalg.cholesky(a), dtype)
    close(jnp.linalg.cholesky(a, upper=True), np.swapaxes(np.linalg.cholesky(a), -1, -2), dtype)
    w, v = jnp.linalg.eigh(a)
    close(w, np.linalg.eigvalsh(a), dtype, scale=100)
    close(jnp.linalg.eigvalsh(a), np.linalg.eigvalsh(a), dtype, scale=100)
    v = np.asarray(v)
    close(v @ (np.asarray(w)[..., None] * np.swapaxes(v, -1, -2)), a, dtype, scale=1000)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (2, 4, 3)])
def test_svd_qr(shape, dtype):
    a = RNG.standard_normal(shape).astype(dtype)
    u, s, vh = jnp.linalg.svd(a)
    u_np, s_np, vh_np = np.linalg.svd(a)
    assert np.shape(u) == u_np.shape and np.shape(vh) == vh_np.shape
    close(s, s_np, dtype)
    close(jnp.linalg.svd(a, compute_uv=False), s_np, dtype)
    close(jnp.linalg.svdvals(a), s_np, dtype)
    for mode in ("reduced", "complete"):
        q, r = jnp.linalg.qr(a, mode=mode)
        q_np, r_np = np.linalg.qr(a, mode=mode)
        close(q, q_np, dtype)
        close(r, r_np, dtype)
    close(jnp.linalg.qr(a, mode="r"), np.linalg.qr(a, mode="r"), dtype)


@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (2, 4, 3)])
def test_pinv_matrix_rank(shape):
    a = RNG.standard_normal(shape)
    close(jnp.linalg.pinv(a), np.linalg.pinv(a))
    np.testing.assert_array_equal(np.asarray(jnp.linalg.matrix_rank(a)),
                                  np.linalg.matrix_rank(a))
    low = a[..., :, :1] @ a[..., :1, :]  # rank 1
    np.testing.assert_array_equal(np.asarray(jnp.linalg.matrix_rank(low)),
                                  np.linalg.matrix_rank(low))
    close(jnp.linalg.pinv(low), np.linalg.pinv(low), scale=1e4)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, -1, -2])
def test_matrix_power(n):
    a = well((2, 3, 3)) / 6
    close(jnp.linalg.matrix_power(a, n), np.linalg.matrix_power(a, n), scale=100)


def test_lstsq():
    a = RNG.standard_normal((6, 3))
    for b in (RNG.standard_normal(6), RNG.standard_normal((6, 2))):
        x, resid, rank, s = jnp.linalg.lstsq(a, b)
        x_np, resid_np, rank_np, s_np = np.linalg.lstsq(a, b)
        close(x, x_np)
        close(resid, resid_np)
        assert int(rank) == rank_np
        close(s, s_np)
    under = RNG.standard_normal((2, 4))
    b = RNG.standard_normal(2)
    close(jnp.linalg.lstsq(under, b)[0], np.linalg.lstsq(under, b)[0])


VECTOR_ORDS = [None, 1, 2, 3, 0.5, 0, np.inf, -np.inf]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@pytest.mark.parametrize("ord", VECTOR_ORDS)
def test_vector_norm(ord):
    x = RNG.standard_normal((3, 4))
    x[0, 0] = 0.0
    close(jnp.linalg.norm(x[0], ord), np.linalg.norm(x[0], ord))
    close(jnp.linalg.norm(x, ord, axis=1), np.linalg.norm(x, ord, axis=1))
    close(jnp.linalg.norm(x, ord, axis=0, keepdims=True),
          np.linalg.norm(x, ord, axis=0, keepdims=True))


@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_matrix_norm(ord):
    x = RNG.standard_normal((4, 3))
    close(jnp.linalg.norm(x, ord), np.linalg.norm(x, ord))
    xb = RNG.standard_normal((3, 2, 4))
    for axis in [(1, 2), (2, 0)]:
        close(jnp.linalg.norm(xb, ord, axis=axis), np.linalg.norm(xb, ord, axis=axis))
        close(jnp.linalg.norm(xb, ord, axis=axis, keepdims=True),
              np.linalg.norm(xb, ord, axis=axis, keepdims=True))


def test_norm_default_flattens_and_cond():
    x = RNG.standard_normal((2, 3, 4))
    close(jnp.linalg.norm(x), np.linalg.norm(x))
    close(jnp.linalg.norm(x, keepdims=True), np.linalg.norm(x, keepdims=True))
    a = well((3, 3))
    for p in (None, 2, -2, 1, np.inf, "fro"):
        close(jnp.linalg.cond(a, p), np.linalg.cond(a, p))


def test_multi_dot_trace_matrix_transpose():
    a, b, c = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    close(jnp.linalg.multi_dot([a, b, c]), np.linalg.multi_dot([a, b, c]))
    x = RNG.standard_normal((2, 3, 3))
    close(jnp.linalg.trace(x), np.trace(x, axis1=-2, axis2=-1))
    close(jnp.linalg.matrix_transpose(x), np.swapaxes(x, -1, -2))


# ----------------------------------------------------------------------------- derivatives


def test_det_grad_is_cofactor():
    a = well((4, 4))
    g = numbax.grad(jnp.linalg.det)(a)
    close(g, np.linalg.det(a) * np.linalg.inv(a).T)
    check_ad(jnp.linalg.det, a)


def test_slogdet_inv_solve_ad():
    a = well((4, 4))
    b = RNG.standard_normal((4, 2))
    check_ad(lambda x: jnp.linalg.slogdet(x)[1], a)
    check_ad(jnp.linalg.inv, a)
    check_ad(lambda x: jnp.linalg.solve(x, b), a)
    check_ad(lambda y: jnp.linalg.solve(a, y), b)
    g = numbax.grad(lambda x: jnp.linalg.slogdet(x)[1])(a)
    close(g, np.linalg.inv(a).T)


def test_cholesky_eigh_svd_ad():
    a = spd((4, 4))
    check_ad(jnp.linalg.cholesky, a)
    check_ad(jnp.linalg.eigvalsh, a)
    check_ad(lambda x: jnp.linalg.svd(x, compute_uv=False), RNG.standard_normal((4, 3)))
    # the nuclear and spectral norms differentiate through the svd
    x = RNG.standard_normal((4, 3))
    check_ad(lambda m: jnp.linalg.norm(m, "nuc"), x)
    check_ad(lambda m: jnp.linalg.norm(m, 2), x)


def test_qr_pinv_lstsq_matrix_power_ad():
    x = RNG.standard_normal((5, 3))
    check_ad(lambda m: jnp.linalg.qr(m)[1], x, rtol=1e-5, atol=1e-6)
    check_ad(jnp.linalg.pinv, x, rtol=1e-5, atol=1e-6)
    b = RNG.standard_normal(5)
    check_ad(lambda m: jnp.linalg.lstsq(m, b)[0], x, rtol=1e-5, atol=1e-6)
    check_ad(lambda m: jnp.linalg.matrix_power(m, 3), x[:3])
    check_ad(lambda m: jnp.linalg.matrix_power(m, -2), well((3, 3)))
    for ord in (None, 1, np.inf, 3):
        check_ad(lambda v, o=ord: jnp.linalg.norm(v, o), RNG.standard_normal(5))


def test_eigh_eigenvector_grad_sign_invariant():
    a = spd((4, 4))

    def f(x):  # v v^T for the largest eigenvalue: independent of the eigenvector's sign
        v = jnp.linalg.eigh(x)[1][:, -1]
        return jnp.outer(v, v)

    check_ad(f, a)


# ----------------------------------------------------------------------------- vmap, jit


def test_vmap_matches_loop():
    a = well((3, 4, 4))
    b = RNG.standard_normal((4, 3))
    for f in (jnp.linalg.det, jnp.linalg.inv, lambda m: jnp.linalg.slogdet(m)[1],
              lambda m: jnp.linalg.norm(m, 2), jnp.linalg.pinv):
        out = numbax.vmap(f)(a)
        close(out, np.stack([np.asarray(f(m)) for m in a]))
    out = numbax.vmap(jnp.linalg.solve, in_axes=(0, 1))(a, b)
    close(out, np.stack([np.linalg.solve(a[i], b[:, i]) for i in range(3)]))


def test_make_jaxpr_traces():
    text = str(numbax.make_jaxpr(jnp.linalg.solve)(well((3, 3)), np.ones(3)))
    assert "lu" in text and "triangular_solve" in text


# ----------------------------------------------------------------------------- bad input


def test_non_square_names_shape():
    for fn in (jnp.linalg.inv, jnp.linalg.det, jnp.linalg.slogdet, jnp.linalg.cholesky,
               jnp.linalg.eigh, jnp.linalg.eigvalsh, lambda m: jnp.linalg.matrix_power(m, 2)):
        with pytest.raises(NumbaxValueError, match=r"has shape \(2, 3\), expected square"):
            fn(np.ones((2, 3)))


def test_rank_too_low():
    for fn in (jnp.linalg.inv, jnp.linalg.svd, jnp.linalg.qr, jnp.linalg.pinv):
        with pytest.raises(NumbaxValueError, match=r"has shape \(3,\)"):
            fn(np.ones(3))


def test_solve_mismatch_names_both_shapes():
    with pytest.raises(NumbaxValueError, match=r"a has shape \(3, 3\) and b has shape \(4,\)"):
        jnp.linalg.solve(np.eye(3), np.ones(4))
    with pytest.raises(NumbaxValueError, match=r"a has shape \(2, 3, 3\) and b has shape "
                                              r"\(4, 3, 1\)"):
        jnp.linalg.solve(np.ones((2, 3, 3)), np.ones((4, 3, 1)))
    with pytest.raises(NumbaxValueError, match=r"a has shape \(4, 3\) and b has shape \(5,\)"):
        jnp.linalg.lstsq(np.ones((4, 3)), np.ones(5))


def test_bad_options():
    with pytest.raises(NumbaxValueError, match="mode"):
        jnp.linalg.qr(np.eye(2), mode="economic")
    with pytest.raises(NumbaxValueError, match="ord"):
        jnp.linalg.norm(np.eye(2), ord=3)
    with pytest.raises(NumbaxValueError, match="ord"):
        jnp.linalg.norm(np.ones(3), ord="fro")
    with pytest.raises(NumbaxTypeError, match="n has type float"):
        jnp.linalg.matrix_power(np.eye(2), 1.5)
    with pytest.raises(NumbaxValueError, match=r"b has shape \(2, 4\).*b\[\.\.\., None\]"):
        jnp.linalg.solve(np.ones((2, 4, 4)), np.ones((2, 4)))
    with pytest.raises(NumbaxValueError, match="UPLO"):
        jnp.linalg.eigh(np.eye(2), UPLO="X")


@pytest.mark.parametrize("name", ["linalg", "linalg_det", "linalg_norms"])
def test_doctests(name):
    import doctest
    import importlib

    module = importlib.import_module(f"numbax._src.numpy.{name}")
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
