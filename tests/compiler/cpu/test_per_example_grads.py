"""Per-example gradients under jit (vmap of grad): against a Python loop of grads, and the
outer-product dot_general (no contraction, or one over size-1 axes) rewritten into one fused
loop (passes.expand_outer_dots)."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler import passes

RNG = np.random.default_rng(3)


def _logreg_loss(w, x, y):
    z = jnp.dot(x, w)
    return jnp.log(1 + jnp.exp(-z)) * y + jnp.log(1 + jnp.exp(z)) * (1 - y)


def _mlp_loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = jnp.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    m = jnp.max(logits, axis=-1, keepdims=True)
    lse = jnp.log(jnp.sum(jnp.exp(logits - m), axis=-1, keepdims=True)) + m
    return -jnp.sum(y * (logits - lse))


def test_logreg_per_example_grads_match_a_loop_of_grads():
    x, y, w = RNG.normal(size=(57, 6)), RNG.integers(0, 2, 57) * 1.0, RNG.normal(size=6)
    got = np.asarray(numbax.jit(numbax.vmap(numbax.grad(_logreg_loss), (None, 0, 0)))(w, x, y))
    g = numbax.grad(_logreg_loss)
    want = np.stack([np.asarray(g(w, x[i], y[i])) for i in range(57)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    # closed form: d/dw = (sigmoid(z) - y) * x
    z = x @ w
    np.testing.assert_allclose(got, ((1 / (1 + np.exp(-z))) - y)[:, None] * x, rtol=1e-10)


def test_logreg_program_has_no_batched_matmul():
    x, y, w = np.zeros((569, 30)), np.zeros(569), np.zeros(30)
    f = numbax.jit(numbax.vmap(numbax.grad(_logreg_loss), (None, 0, 0)))
    driver = f.lower(w, x, y).as_text().split("def driver(")[1]
    # x @ w only, a small matrix-vector product's loops; the outer product is a loop
    assert driver.count("mv.top(") == 1 and "lw.dot" not in driver
    assert driver.count("_loop(") == 2


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mlp_per_example_grads_match_a_loop_of_grads(dtype):
    params = [(RNG.normal(size=(8, 16)).astype(dtype) * 0.3, RNG.normal(size=16).astype(dtype)),
              (RNG.normal(size=(16, 5)).astype(dtype) * 0.3, RNG.normal(size=5).astype(dtype))]
    x = RNG.normal(size=(7, 8)).astype(dtype)
    y = np.eye(5, dtype=dtype)[RNG.integers(0, 5, 7)]
    f = numbax.jit(numbax.vmap(numbax.grad(_mlp_loss), in_axes=(None, 0, 0)))
    got = f(params, x, y)
    g = numbax.grad(_mlp_loss)
    tol = 1e-4 if dtype == np.float32 else 1e-11
    for i in range(7):
        want = g(params, x[i], y[i])
        for (gw, gb), (ww, wb) in zip(got, want):
            np.testing.assert_allclose(np.asarray(gw)[i], np.asarray(ww), rtol=tol, atol=tol)
            np.testing.assert_allclose(np.asarray(gb)[i], np.asarray(wb), rtol=tol, atol=tol)


def test_expand_outer_dots_leaves_real_contractions_as_products():
    def f(a, b, c):
        outer = numbax.lax.dot_general(a, b, (((), ()), ((0,), (0,))))  # f[5] x f[5,3]
        inner = numbax.lax.dot_general(b, c, (((1,), (0,)), ((), ())))  # a real matvec
        return outer, inner

    a, b, c = RNG.normal(size=5), RNG.normal(size=(5, 3)), RNG.normal(size=3)
    jaxpr = passes.simplify(numbax.make_jaxpr(f)(a, b, c).jaxpr)
    names = [e.primitive.name for e in jaxpr.eqns]
    assert names.count("dot_general") == 1 and "mul" in names
    got = numbax.jit(f)(a, b, c)
    np.testing.assert_allclose(np.asarray(got[0]), a[:, None] * b, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(got[1]), b @ c, rtol=1e-14)


def test_expand_outer_dots_plain_outer_product_and_mixed_dtypes():
    a, b = RNG.normal(size=4), RNG.normal(size=6)
    got = numbax.jit(lambda u, v: numbax.lax.dot_general(u, v, (((), ()), ((), ()))))(a, b)
    np.testing.assert_allclose(np.asarray(got), np.outer(a, b), rtol=1e-15)
    i = np.arange(4, dtype=np.int32)
    got = numbax.jit(lambda u, v: numbax.lax.dot_general(u, v, (((), ()), ((), ()))))(i, i)
    np.testing.assert_array_equal(np.asarray(got), np.outer(i, i))


def _dots(jaxpr) -> int:
    return [e.primitive.name for e in jaxpr.eqns].count("dot_general")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_batch_one_weight_gradient_is_an_outer_product_fused_with_its_update(dtype):
    """xᵀ @ d of one example (a contraction over a size-1 axis) is a product of broadcasts:
    the SGD update w - lr * (xᵀ @ d) runs as one loop, with the bits of numpy's outer product
    (a sum of one product is that product)."""
    def step(w, x, d):
        return w - 0.01 * (x.T @ d)

    w = RNG.normal(size=(37, 29)).astype(dtype)
    x, d = RNG.normal(size=(1, 37)).astype(dtype), RNG.normal(size=(1, 29)).astype(dtype)
    jaxpr = passes.simplify(numbax.make_jaxpr(step)(w, x, d).jaxpr)
    assert _dots(jaxpr) == 0
    driver = numbax.jit(step).lower(w, x, d).as_text().split("def driver(")[1]
    assert "lw.dot" not in driver and driver.count("_loop(") == 1
    want = w - dtype(0.01) * np.multiply.outer(x[0], d[0])
    np.testing.assert_array_equal(np.asarray(numbax.jit(step)(w, x, d)), want)
    np.testing.assert_array_equal(np.asarray(step(w, x, d)), want)  # eager: the same bits


def test_size_one_contractions_with_batch_dims_and_in_any_position():
    """Contracted size-1 axes first, in the middle or last, several at once, with batch dims
    (per-example gradients under vmap) or without: numpy's einsum, and no product left; a
    contraction over two elements stays a product."""
    a, b = RNG.normal(size=(7, 1, 4)), RNG.normal(size=(7, 1, 3))
    cases = [
        (lambda u, v: numbax.lax.dot_general(u, v, (((1,), (1,)), ((0,), (0,)))), (a, b),
         np.einsum("bki,bkj->bij", a, b)),
        (lambda u, v: numbax.lax.dot_general(u, v, (((0,), (1,)), ((), ()))),
         (a[0], b[0].T), np.einsum("ki,jk->ij", a[0], b[0].T)),
        (lambda u, v: numbax.lax.dot_general(u, v, (((1, 3), (2, 0)), ((0,), (1,)))),
         (a.reshape(7, 1, 4, 1), b.reshape(1, 7, 1, 3)),
         np.einsum("bkil,lbkj->bij", a.reshape(7, 1, 4, 1), b.reshape(1, 7, 1, 3))),
    ]
    for f, args, want in cases:
        assert _dots(passes.simplify(numbax.make_jaxpr(f)(*args).jaxpr)) == 0
        np.testing.assert_array_equal(np.asarray(numbax.jit(f)(*args)), want)
    wide = RNG.normal(size=(2, 4)), RNG.normal(size=(2, 3))
    f = lambda u, v: numbax.lax.dot_general(u, v, (((0,), (0,)), ((), ())))  # noqa: E731
    assert _dots(passes.simplify(numbax.make_jaxpr(f)(*wide).jaxpr)) == 1
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(*wide)), wide[0].T @ wide[1],
                               rtol=1e-14)


def test_a_size_one_contraction_needing_a_transpose_stays_a_product():
    """x's batch axis after its free one would need a transpose of x: left to the product
    rule, which gives einsum's numbers."""
    x, y = RNG.normal(size=(4, 1, 7)), RNG.normal(size=(7, 1, 3))
    f = lambda u, v: numbax.lax.dot_general(u, v, (((1,), (1,)), ((2,), (0,))))  # noqa: E731
    assert _dots(passes.simplify(numbax.make_jaxpr(f)(x, y).jaxpr)) == 1
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(x, y)),
                               np.einsum("ikb,bkj->bij", x, y), rtol=1e-14)


def test_per_example_grads_bad_in_axes_raise():
    f = numbax.jit(numbax.vmap(numbax.grad(_logreg_loss), (None, 0, 0)))
    with pytest.raises(ValueError, match="size"):
        f(np.zeros(3), np.zeros((4, 3)), np.zeros(5))


def test_sink_reshapes_and_scalar_broadcasts_collapse_autodiff_glue():
    def f(x, y):
        s = jnp.sum(x, axis=1, keepdims=True)  # f[6,1]
        t = jnp.sum(y, axis=1, keepdims=True)
        minus_one = numbax.lax.broadcast_in_dim(numbax.lax.broadcast_in_dim(
            np.float64(-1.0), (4,), ()), (6, 4), (1,))
        return jnp.reshape(s / t, (6,)) * 2.0, x * minus_one

    x, y = RNG.normal(size=(6, 4)), RNG.normal(size=(6, 4)) + 5
    jaxpr = passes.simplify(numbax.make_jaxpr(f)(x, y).jaxpr)
    names = [e.primitive.name for e in jaxpr.eqns]
    assert "reshape" not in names  # div ran on f[6], the reshape pair cancelled
    assert "broadcast_in_dim" not in names  # x * -1.0 with the literal inline
    got = numbax.jit(f)(x, y)
    np.testing.assert_allclose(np.asarray(got[0]), (x.sum(1) / y.sum(1)) * 2, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(got[1]), -x, rtol=0)
