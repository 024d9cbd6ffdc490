"""A program's small matrix-vector products (lowerings/dot.py `_small_matvec`): the driver calls
`matvec.small`'s loops straight, for either operand order, a contraction over either axis of
the matrix, transposed and strided matrices and vectors, float32 and float64; a matrix over
TOP_LEVEL_LOOP_ELEMENTS still goes to `library.dot`. Numbers against numpy in float64."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cpu.runtime import matvec

RNG = np.random.default_rng(11)

FORMS = {
    "a @ v": (lambda a, v: a @ v, lambda a, v: a @ v, (569, 30), (30,)),
    "v @ a": (lambda v, a: v @ a, lambda v, a: v @ a, (40,), (40, 70)),
    "a.T @ v": (lambda a, v: a.T @ v, lambda a, v: a.T @ v, (50, 20), (50,)),
    "v @ a.T": (lambda v, a: jnp.dot(v, a.T), lambda v, a: v @ a.T, (33,), (17, 33)),
    "dot_general over axis 0": (
        lambda a, v: lax.dot_general(a, v, (((0,), (0,)), ((), ()))),
        lambda a, v: a.T @ v, (64, 9), (64,)),
    "strided matrix and vector": (lambda a, v: a[:, ::2] @ v[::3],
                                  lambda a, v: a[:, ::2] @ v[::3], (31, 40), (60,)),
    "largest that loops": (lambda a, v: a @ v, lambda a, v: a @ v, (256, 256), (256,)),
    "one over": (lambda a, v: a @ v, lambda a, v: a @ v, (257, 256), (256,)),
    "empty contraction": (lambda a, v: a @ v, lambda a, v: a @ v, (7, 0), (0,)),
    "no rows": (lambda v, a: v @ a, lambda v, a: v @ a, (5,), (5, 0)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(FORMS))
def test_small_matrix_vector_products_give_numpys_numbers(name, dtype):
    f, reference, x_shape, y_shape = FORMS[name]
    x = RNG.normal(size=x_shape).astype(dtype)
    y = RNG.normal(size=y_shape).astype(dtype)
    got = numbax.jit(f)(x, y)
    want = reference(x.astype(np.float64), y.astype(np.float64))
    assert got.dtype == dtype and got.shape == want.shape
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("name, loops", [("a @ v", True), ("v @ a.T", True),
                                         ("largest that loops", True), ("one over", False)])
def test_only_small_matrices_take_the_loops(name, loops):
    f, _, x_shape, y_shape = FORMS[name]
    x, y = np.ones(x_shape, np.float32), np.ones(y_shape, np.float32)
    text = numbax.jit(f).lower(x, y).as_text()
    assert ("mv.top(" in text) is loops
    assert ("lw.dot(" in text) is not loops
    matrix = x_shape if len(x_shape) == 2 else y_shape
    assert (matrix[0] * matrix[1] <= matvec.TOP_LEVEL_LOOP_ELEMENTS) is loops


def test_other_products_keep_their_route():
    """Integer, complex and matrix-matrix products are not matrix-vector loops."""
    for x, y in [(np.ones((4, 3), np.int32), np.ones(3, np.int32)),
                 (np.ones((4, 3), np.complex64), np.ones(3, np.complex64)),
                 (np.ones((4, 3), np.float32), np.ones((3, 2), np.float32))]:
        text = numbax.jit(lambda a, b: a @ b).lower(x, y).as_text()
        assert "mv.top(" not in text
        np.testing.assert_array_equal(np.asarray(numbax.jit(lambda a, b: a @ b)(x, y)), x @ y)


def test_logistic_regression_gradient_matches_its_closed_form():
    """The per-example gradient program these loops were made for, against its closed form
    (sigmoid(x.w) - y) x."""
    x = RNG.normal(size=(569, 30))
    y = RNG.integers(0, 2, 569) * 1.0
    w = RNG.normal(size=30) * 0.1

    def loss(w, x, y):
        z = jnp.dot(x, w)
        return jnp.log(1 + jnp.exp(-z)) * y + jnp.log(1 + jnp.exp(z)) * (1 - y)

    got = numbax.jit(numbax.vmap(numbax.grad(loss), in_axes=(None, 0, 0)))(w, x, y)
    sigmoid = 1 / (1 + np.exp(-(x @ w)))
    np.testing.assert_allclose(np.asarray(got), (sigmoid - y)[:, None] * x, rtol=1e-10,
                               atol=1e-12)


def test_products_go_to_blas_while_the_helper_compiles_the_loops(monkeypatch):
    """A fresh install: `small` for each dtype goes to the compile helper (a C-contiguous and a
    transposed matrix), and the products go to np.dot on one BLAS thread meanwhile; once
    ready, the loops."""
    from numbax._src.compiler.cpu.runtime import blas, compile_ahead

    asked, ready, via_dot = [], {"now": False}, []

    def runtime_ready(function, arguments, holder=None):
        asked.append((function, arguments()))
        return ready["now"]

    real_call = blas.numpy_blas_call
    monkeypatch.setattr(matvec, "_small_ready", {})
    monkeypatch.setattr(matvec, "_small_requests", {})
    monkeypatch.setattr(compile_ahead, "runtime_ready", runtime_ready)
    monkeypatch.setattr(blas, "numpy_blas_call", lambda fn, n, *a: (
        via_dot.append((fn, n)), real_call(fn, n, *a))[1])
    s = RNG.normal(size=(50, 20))
    v = RNG.normal(size=20)
    for dtype in (np.float64, np.float32):
        got = matvec.top(s.astype(dtype), v.astype(dtype))
        np.testing.assert_allclose(got, s @ v, rtol=1e-5)
        got = matvec.top(s.T.astype(dtype).T, v.astype(dtype))  # a transposed matrix
        np.testing.assert_allclose(got, s @ v, rtol=1e-5)
    assert via_dot == [(np.dot, 1)] * 4
    assert {(a[0].dtype, a[0].flags.c_contiguous) for _, a in asked} == {
        (np.dtype(d), c) for d in (np.float64, np.float32) for c in (True, False)}
    assert all(f is matvec.small and a[1].ndim == 1 for f, a in asked)
    ready["now"] = True
    np.testing.assert_allclose(matvec.top(s, v), s @ v, rtol=1e-12)
    np.testing.assert_allclose(matvec.top(s.T.copy().T, v), s @ v, rtol=1e-12)
    assert via_dot == [(np.dot, 1)] * 4  # the loops now
