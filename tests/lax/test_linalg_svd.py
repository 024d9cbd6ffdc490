"""linalg_svd.py: svd on complex inputs, subsets and algorithms; qdwh vs scipy.linalg.polar."""
import numpy as np
import pytest
import scipy.linalg

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.lax import linalg as ll
from numbax.test_util import check_grads

RNG = np.random.default_rng(14)


def cnormal(*shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3)])
def test_svd_complex_matches_numpy(shape, dtype):
    a = cnormal(*shape, dtype=dtype)
    u, s, vh = (np.asarray(o) for o in ll.svd(a, full_matrices=False))
    assert s.dtype == np.finfo(dtype).dtype and u.dtype == dtype
    tol = 1e-4 if dtype == np.complex64 else 1e-12
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=tol, atol=tol)
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, atol=tol * 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("shape", [(40, 13), (13, 40), (9, 9)])
def test_one_matrix_goes_to_gesdd_as_jax_calls_it(shape, dtype):
    """One matrix: LAPACK's gesdd (scipy's, the library jax.jit's CPU call runs) with its
    optimal workspace on a column-major copy, so the bits are that routine's, vectors or not
    (measured: jax.jit's, bit for bit, in all four dtypes, where numpy's svd differs in
    single precision), and u s vt rebuilds the matrix."""
    import scipy.linalg as sl

    a = cnormal(*shape, dtype=dtype) if np.dtype(dtype).kind == "c" else \
        RNG.standard_normal(shape).astype(dtype)
    for full in (False, True):
        u, s, vh = (np.asarray(o) for o in ll.svd(a, full_matrices=full))
        want = sl.svd(a, full_matrices=full, lapack_driver="gesdd")
        for got, w in zip((u, s, vh), want, strict=True):
            assert got.dtype == w.dtype
            np.testing.assert_array_equal(got, w)
        k = min(shape)
        tol = 1e-4 if np.dtype(dtype).itemsize <= 8 and dtype != np.float64 else 1e-12
        np.testing.assert_allclose((u[:, :k] * s) @ vh[:k], a, atol=tol * 10)
    np.testing.assert_array_equal(np.asarray(ll.svd(a, compute_uv=False)),
                                  sl.svd(a, compute_uv=False, lapack_driver="gesdd"))


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_svd_complex_derivatives(shape):
    a = cnormal(*shape)
    check_grads(lambda x: ll.svd(x, compute_uv=False), (a,), order=2)

    def invariant(x):  # u_k vh_k and |u| carry no phase freedom
        u, s, vh = ll.svd(x, full_matrices=False)
        return jnp.einsum("...ik,...kj->...kij", u, vh), jnp.abs(u)

    check_grads(invariant, (a,), order=1)


def test_svd_subset_and_algorithm():
    a = RNG.standard_normal((5, 4))
    u, s, vh = ll.svd(a, full_matrices=False, subset_by_index=(1, 3))
    u_np, s_np, vh_np = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(np.asarray(s), s_np[1:3], atol=1e-12)
    assert np.shape(u) == (5, 2) and np.shape(vh) == (2, 4)
    np.testing.assert_allclose(np.abs(np.asarray(u)), np.abs(u_np[:, 1:3]), atol=1e-12)
    for alg in ll.SvdAlgorithm:
        np.testing.assert_allclose(np.asarray(ll.svd(a, compute_uv=False, algorithm=alg)),
                                   s_np, atol=1e-12)
    with pytest.raises(NumbaxValueError, match="full_matrices=False"):
        ll.svd(a, subset_by_index=(0, 2))
    with pytest.raises(NumbaxTypeError, match="algorithm has 'qr'"):
        ll.svd(a, algorithm="qr")


def test_svd_empty():
    u, s, vh = ll.svd(np.zeros((3, 0)))
    assert np.shape(u) == (3, 3) and np.shape(s) == (0,) and np.shape(vh) == (0, 0)


@pytest.mark.parametrize("shape", [(6, 4), (4, 4)])
@pytest.mark.parametrize("complex_", [False, True])
def test_qdwh_matches_scipy_polar(shape, complex_):
    a = cnormal(*shape) if complex_ else RNG.standard_normal(shape)
    u, h, iters, ok = ll.qdwh(a)
    u_s, h_s = scipy.linalg.polar(a)
    assert bool(ok) and 0 < int(iters) <= 10
    np.testing.assert_allclose(np.asarray(u), u_s, atol=1e-10)
    np.testing.assert_allclose(np.asarray(h), h_s, atol=1e-10)


def test_qdwh_float32_dynamic_shape_and_errors():
    a = RNG.standard_normal((5, 3)).astype(np.float32)
    u, h, _, ok = ll.qdwh(a)
    assert np.asarray(u).dtype == np.float32 and bool(ok)
    np.testing.assert_allclose(np.asarray(u) @ np.asarray(h), a, atol=1e-4)
    padded = np.zeros((7, 4))
    padded[:5, :3] = a
    u_p, h_p, _, _ = ll.qdwh(padded, dynamic_shape=(5, 3))
    np.testing.assert_allclose(np.asarray(u_p)[:5, :3], np.asarray(u), atol=1e-5)
    assert np.all(np.asarray(u_p)[5:] == 0) and np.all(np.asarray(h_p)[3:] == 0)
    jitted = numbax.jit(lambda x: ll.qdwh(x)[0])(a.astype(np.float64))
    np.testing.assert_allclose(np.asarray(jitted), scipy.linalg.polar(a)[0], atol=1e-5)
    with pytest.raises(NumbaxValueError, match=r"qdwh: x has shape \(3, 5\)"):
        ll.qdwh(np.ones((3, 5)))
