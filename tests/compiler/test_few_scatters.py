"""Scatters of a few indices a line as fused selects (compiler/few_scatters.py) and the
`jnp.take_along_axis` form whose transpose they are (numpy/take_along.few_positions): the
same numbers as numpy's `np.add.at` and a closed-form cross-entropy gradient, in compiled
code, in loop bodies and eagerly."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler import few_scatters, pipeline
from numbax._src.lax import along_axis as la

RNG = np.random.default_rng(11)


def _add_at(u, idx, axis, size):
    """np.add.at into zeros: the eager scatter's definition, written independently."""
    shape = list(u.shape)
    shape[axis] = size
    out = np.zeros(shape, u.dtype)
    idx = np.broadcast_to(idx, u.shape)
    for pos in np.ndindex(*u.shape):
        to = list(pos)
        to[axis] = idx[pos] % size
        out[tuple(to)] += u[pos]
    return out


@pytest.mark.parametrize("k", [1, 2, 5, 8])
@pytest.mark.parametrize("axis", [0, 1])
def test_few_indices_a_line_add_as_np_add_at(k, axis):
    size = 6
    shape = (k, 9) if axis == 0 else (9, k)
    u = RNG.standard_normal(shape).astype(np.float32)
    idx = RNG.integers(-size, size, shape)  # duplicates and negative indices among them
    f = numbax.jit(lambda u, i: la.scatter_add_along_axis(u, i, axis, size))
    np.testing.assert_allclose(np.asarray(f(u, idx)), _add_at(u, idx, axis, size),
                               rtol=1e-6, atol=1e-6)


def test_the_rewrite_leaves_no_scatter_and_keeps_wide_lines_as_scatters():
    def f(u, i):
        return la.scatter_add_along_axis(u, i, 1, 50)

    few = pipeline.prepare(numbax.make_jaxpr(f)(np.ones((4, 3)), np.zeros((4, 3), int)).jaxpr)
    many = pipeline.prepare(numbax.make_jaxpr(f)(np.ones((4, 9)), np.zeros((4, 9), int)).jaxpr)
    names = [e.primitive.name for e in few_scatters.expand_few_scatters(few).eqns]
    assert "scatter_add_along_axis" not in names and "select_n" in names
    assert [e.primitive.name for e in few_scatters.expand_few_scatters(many).eqns] == [
        "scatter_add_along_axis"]


@pytest.mark.parametrize("dtype", [np.int32, np.complex128, np.float64])
def test_integer_and_complex_updates_and_broadcast_indices(dtype):
    u = (RNG.standard_normal((5, 2, 4)) * 10).astype(dtype)
    if np.dtype(dtype).kind == "c":
        u = u + 1j * RNG.standard_normal(u.shape)
    idx = RNG.integers(0, 7, (1, 2, 4)).astype(np.int16)  # broadcast along the first axis
    f = numbax.jit(lambda u, i: la.scatter_add_along_axis(u, i, 1, 7))
    got = np.asarray(f(u, idx))
    assert got.dtype == u.dtype
    np.testing.assert_allclose(got, _add_at(u, idx, 1, 7), rtol=1e-12)


def _softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_cross_entropy_gradient_with_integer_labels_is_softmax_minus_one_hot():
    logits = RNG.standard_normal((300, 40)).astype(np.float32)
    labels = RNG.integers(0, 40, 300).astype(np.int32)

    def loss(x, y):
        logp = numbax.nn.log_softmax(x)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    expected = (_softmax(logits.astype(np.float64)) - np.eye(40)[labels]) / 300
    for g in (numbax.grad(loss), numbax.jit(numbax.grad(loss))):
        np.testing.assert_allclose(np.asarray(g(logits, labels)), expected, atol=2e-7)


def test_take_along_axis_fill_and_clip_modes_and_their_gradients():
    x = RNG.standard_normal((4, 5))
    idx = np.array([[0, 4], [5, -1], [-6, 2], [3, 3]])  # 5 and -6 are out of bounds

    def take(x, mode):
        return jnp.take_along_axis(x, idx, axis=1, mode=mode)

    filled = np.take_along_axis(x, np.clip(idx % 5, 0, 4), 1)
    filled[(idx >= 5) | (idx < -5)] = np.nan
    # as JAX: negative indices count from the end (-1 -> 4, -6 -> -1), then clamp
    clipped = np.take_along_axis(x, np.clip(np.where(idx < 0, idx + 5, idx), 0, 4), 1)
    for f in (take, numbax.jit(take, static_argnums=1)):
        np.testing.assert_array_equal(np.asarray(f(x, "fill")), filled)
        np.testing.assert_array_equal(np.asarray(f(x, "clip")), clipped)
    # the gradient of a filled position is zero; repeated positions add up
    grad = numbax.jit(numbax.grad(lambda x: jnp.nansum(take(x, "fill") * 3.0)))(x)
    expected = np.zeros_like(x)
    for r, c in zip(*np.nonzero((idx < 5) & (idx >= -5)), strict=True):
        expected[r, idx[r, c] % 5] += 3.0
    np.testing.assert_array_equal(np.asarray(grad), expected)


def test_softmax_regression_trained_in_a_scan_matches_a_numpy_loop():
    x = RNG.standard_normal((64, 10))
    labels = RNG.integers(0, 4, 64)

    def loss(w, x, y):
        logp = numbax.nn.log_softmax(x @ w)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    @numbax.jit
    def train(w):
        def step(w, _):
            return w - 0.5 * numbax.grad(loss)(w, x, labels), None
        return lax.scan(step, w, None, length=20)[0]

    w = np.zeros((10, 4))
    for _ in range(20):
        w = w - 0.5 * x.T @ (_softmax(x @ w) - np.eye(4)[labels]) / 64
    np.testing.assert_allclose(np.asarray(train(np.zeros((10, 4)))), w, rtol=1e-10, atol=1e-12)
