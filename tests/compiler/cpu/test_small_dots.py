"""Batched products of small matrices (passes.expand_small_dots): the CPU backend writes a
dot_general with batch dimensions, contracting at most SMALL_DOT_K elements, as the sum over
the contracted elements of products of the operands' elements there (index maps), one fused
loop over the batch. Numbers against numpy's einsum in float64 and, bit for bit, against the
same sum in float32 written in numpy; larger products stay products."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler import passes

RNG = np.random.default_rng(3)


def _f32(*shape):
    return RNG.normal(size=shape).astype(np.float32)


CASES = {
    "einsum_matvec": (lambda m, v: jnp.einsum("nij,nj->ni", m, v), "nij,nj->ni",
                      [(5000, 3, 3), (5000, 3)]),
    "vmap_matvec": (numbax.vmap(lambda m, v: m @ v), "nij,nj->ni", [(4001, 4, 3), (4001, 3)]),
    "vmap_matmat": (numbax.vmap(lambda a, b: a @ b), "nik,nkj->nij",
                    [(3000, 3, 2), (3000, 2, 4)]),
    "vmap_vecmat": (numbax.vmap(lambda v, m: v @ m), "ni,nij->nj", [(3000, 4), (3000, 4, 4)]),
    # batch axes not leading, two of them, and a contraction over two axes (2 x 3)
    "batch_in_the_middle": (lambda a, b: lax.dot_general(a, b, (((0, 3), (3, 1)),
                                                              ((1, 2), (0, 2)))),
                            "kbcl,blckm->bcm", [(2, 50, 7, 3), (50, 3, 7, 2, 4)]),
    # per-example inner products (no free axes)
    "rowwise_dot": (lambda a, b: jnp.einsum("ni,ni->n", a, b), "ni,ni->n",
                    [(10_000, 16), (10_000, 16)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_small_batched_products_give_numpys_numbers(name):
    f, spec, shapes = CASES[name]
    args = [_f32(*s) for s in shapes]
    got = np.asarray(numbax.jit(f)(*args))
    want = np.einsum(spec, *(a.astype(np.float64) for a in args))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
    assert _product_left(f, *args) is False


def _product_left(f, *args) -> bool:
    """Whether the compiled program still holds a dot_general (its fused kernels' jaxpr
    comments name every equation they compute)."""
    return "dot_general" in numbax.jit(f).lower(*args).as_text()


def test_products_are_added_in_order_in_the_operands_dtype():
    """out[n, i, j] = ((a[n, i, 0] b[n, 0, j] + a[n, i, 1] b[n, 1, j]) + ...) in float32, as
    a GEMM adds: the same bits as that sum written in numpy."""
    a, b = _f32(2000, 3, 5), _f32(2000, 5, 2)
    got = np.asarray(numbax.jit(numbax.vmap(lambda a, b: a @ b))(a, b))
    want = a[:, :, 0, None] * b[:, None, 0, :]
    for c in range(1, 5):
        want = want + a[:, :, c, None] * b[:, None, c, :]
    assert want.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_integer_and_float64_products_and_their_gradients():
    m = RNG.integers(-9, 9, size=(2000, 3, 3)).astype(np.int32)
    v = RNG.integers(-9, 9, size=(2000, 3)).astype(np.int32)
    got = np.asarray(numbax.jit(lambda m, v: jnp.einsum("nij,nj->ni", m, v))(m, v))
    np.testing.assert_array_equal(got, np.einsum("nij,nj->ni", m, v))
    m64, v64 = RNG.normal(size=(500, 3, 3)), RNG.normal(size=(500, 3))

    def loss(m, v):
        return jnp.sum(jnp.sin(numbax.vmap(lambda a, b: a @ b)(m, v)))
    gm, gv = numbax.jit(numbax.grad(loss, argnums=(0, 1)))(m64, v64)
    c = np.cos(np.einsum("nij,nj->ni", m64, v64))
    np.testing.assert_allclose(np.asarray(gm), c[:, :, None] * v64[:, None, :], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gv), np.einsum("ni,nij->nj", c, m64), rtol=1e-12)


def test_longer_contractions_and_unbatched_products_stay_products():
    """Contracting SMALL_DOT_K + 1 elements, or no batch axis: a GEMM as before."""
    k = passes.SMALL_DOT_K + 1
    a, b = _f32(200, 2, k), _f32(200, k)
    f = numbax.vmap(lambda m, v: m @ v)
    assert _product_left(f, a, b)
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(a, b)),
                               np.einsum("nij,nj->ni", a.astype(np.float64), b), rtol=2e-5,
                               atol=2e-5)
    assert _product_left(lambda m, v: m @ v, _f32(3, 3), _f32(3, 1000))


@pytest.mark.parametrize("shapes", [[(1, 1, 0), (1, 0)], [(5, 3, 0), (5, 0)]])
def test_products_contracting_no_element_are_zeros(shapes):
    """A batched product over an empty contracted axis is zeros (it raised an IndexError:
    a sum of no terms; found by the fuzz soak)."""
    a, b = _f32(*shapes[0]), _f32(*shapes[1])
    got = numbax.jit(numbax.vmap(lambda m, v: m @ v))(a, b)
    np.testing.assert_array_equal(np.asarray(got), np.einsum("nij,nj->ni", a, b))


def test_operands_whose_axes_come_in_another_order_stay_products():
    """x's free axis before its batch axis: an index map cannot read it in the output's order
    (a GEMM as before), with numpy's numbers."""
    x, y = _f32(3, 400, 2), _f32(400, 2, 4)

    def f(x, y):
        return lax.dot_general(x, y, (((2,), (1,)), ((1,), (0,))))
    assert _product_left(f, x, y)
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(x, y)),
                               np.einsum("inc,ncj->nij", x.astype(np.float64), y),
                               rtol=2e-6, atol=2e-6)


def test_unbatched_small_products_in_a_loop_body_are_sums_of_products():
    """In a scan body a 2 x 2 filter's products are the same sums of products (no BLAS or
    GEMM-task call per step), with numpy's numbers; a product of 8 x 8 x 8 stays one."""
    F = np.array([[1.0, 0.1], [0.0, 1.0]], np.float32)
    H = np.array([[1.0, 0.5]], np.float32)
    ys = _f32(50)

    def step(carry, y):
        m, P = carry
        m, P = F @ m, F @ P @ F.T + 0.01
        gain = P @ H.T / (H @ P @ H.T + 0.5)
        m = m + (gain * (y - H @ m)).reshape(2)
        return (m, P - gain @ H @ P), m.sum()

    def run(ys):
        return lax.scan(step, (jnp.zeros(2, jnp.float32), jnp.eye(2, dtype=jnp.float32)), ys)

    m, P, out = np.zeros(2, np.float32), np.eye(2, dtype=np.float32), []
    for y in ys:
        m, P = F @ m, F @ P @ F.T + np.float32(0.01)
        gain = P @ H.T / (H @ P @ H.T + np.float32(0.5))
        m = m + (gain * (y - H @ m)).reshape(2)
        P = P - gain @ H @ P
        out.append(m.sum())
    (got_m, got_p), got = numbax.jit(run)(ys)
    np.testing.assert_allclose(np.asarray(got), out, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got_p), P, rtol=2e-5, atol=1e-6)
    body = numbax.jit(run).lower(ys).as_text()
    assert "np.dot(" not in body and "loop_block(" not in body
    big = numbax.jit(lambda a: lax.fori_loop(0, 3, lambda i, x: x @ a / 8.0, a))
    assert "np.dot(" in big.lower(_f32(8, 8)).as_text() or \
        "loop_block(" in big.lower(_f32(8, 8)).as_text()
