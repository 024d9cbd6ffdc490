"""Pads of one short axis as selects fused into their readers (compose_maps._pad_pieces), the
shifts of `jnp.prod`'s derivative as pads (lax/along_axis.shift), and maps of iotas and
broadcast constants made at the reader's shape (compose_maps._remade): numpy's numbers, and
no pad or materialised constant left in the driver."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax

RNG = np.random.default_rng(5)


def _np_pad(x, fill, config):
    """lax.pad written with numpy: interior gaps, then the edges (negative ones crop)."""
    for axis, (lo, hi, interior) in enumerate(config):
        n = x.shape[axis]
        spaced_shape = list(x.shape)
        spaced_shape[axis] = n + max(n - 1, 0) * interior
        spaced = np.full(spaced_shape, fill, x.dtype)
        index = [slice(None)] * x.ndim
        index[axis] = slice(None, None, interior + 1)
        spaced[tuple(index)] = x
        edges = [(0, 0)] * x.ndim
        edges[axis] = (max(lo, 0), max(hi, 0))
        x = np.pad(spaced, edges, constant_values=fill)
        index[axis] = slice(max(-lo, 0), x.shape[axis] - max(-hi, 0))
        x = x[tuple(index)]
    return x


CONFIGS = {
    "shift right": ((0, 0, 0), (1, -1, 0), (0, 0, 0)),
    "shift left": ((0, 0, 0), (-2, 2, 0), (0, 0, 0)),
    "interior": ((0, 0, 0), (0, 0, 0), (1, 2, 1)),
    "crop and space": ((0, 0, 0), (0, 0, 0), (-1, 3, 2)),
    "grow": ((0, 0, 0), (2, 1, 0), (0, 0, 0)),
    "rows of 12 (a select: the row's size is written in)": ((0, 0, 0), (0, 0, 0), (3, 7, 0)),
    "rows of 17 (library)": ((0, 0, 0), (0, 0, 0), (5, 10, 0)),
    "leading axis (library)": ((1, 0, 0), (0, 0, 0), (0, 0, 0)),
    "two axes (library)": ((0, 0, 0), (1, 1, 0), (1, 0, 0)),
}


@pytest.mark.parametrize("config", list(CONFIGS.values()), ids=list(CONFIGS))
def test_pads_match_numpy(config):
    x = RNG.standard_normal((5, 3, 2))

    def f(x):
        return lax.pad(jnp.sin(x), -1.5, config) * 2.0

    want = _np_pad(np.sin(x), -1.5, config) * 2.0
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(x)), want, rtol=1e-14)
    driver = numbax.jit(f).lower(x).as_text().split("def driver")[1]
    assert ("kc.pad(" in driver) == ("library" in next(k for k, c in CONFIGS.items()
                                                        if c == config))


def test_the_gradient_of_a_column_slice_is_fused():
    pts = RNG.standard_normal((1000, 3)).astype(np.float32)

    def loss(p):  # reads columns 1: and :2, whose transposes are pads of the short axis
        return jnp.sum((p[:, 1:] - p[:, :-1] ** 2) ** 2)

    g = numbax.jit(numbax.grad(loss))
    d = pts[:, 1:] - pts[:, :-1] ** 2
    want = np.zeros_like(pts)
    want[:, 1:] += 2 * d
    want[:, :-1] += -4 * d * pts[:, :-1]
    np.testing.assert_allclose(np.asarray(g(pts)), want, rtol=1e-5, atol=1e-6)
    assert "kc.pad(" not in g.lower(pts).as_text()


def _prod_hessian(x):
    """d2/dxi dxj of prod(x): the product of the other entries off the diagonal, 0 on it."""
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                h[i, j] = np.prod([x[k] for k in range(n) if k not in (i, j)])
    return h


def test_vmapped_hessian_of_a_product_matches_its_closed_form():
    xs = RNG.uniform(0.5, 1.5, (200, 4))
    xs[3, 1] = 0.0  # a zero entry: the exclusive products stay exact

    def f(x):
        return jnp.prod(x) + jnp.sum(x ** 2)

    got = np.asarray(numbax.jit(numbax.vmap(numbax.hessian(f)))(xs))
    want = np.stack([_prod_hessian(x) + 2 * np.eye(4) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_the_vmapped_hessian_of_rosenbrock_over_10_vectors():
    xs = RNG.standard_normal((50, 10))

    def rosen(x):  # its shifts' transposes are pads of 9 to 10 elements a row
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    want = np.zeros((50, 10, 10))
    for n, x in enumerate(xs):
        i = np.arange(9)
        want[n, i, i] += 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
        want[n, i + 1, i + 1] += 200
        want[n, i, i + 1] = want[n, i + 1, i] = -400 * x[:-1]
    hess = numbax.vmap(numbax.hessian(rosen))
    np.testing.assert_allclose(np.asarray(numbax.jit(hess)(xs)), want, rtol=1e-10, atol=1e-9)
    assert "kc.pad(" not in numbax.jit(hess).lower(xs).as_text()


def test_constants_read_through_maps_are_made_where_read():
    x = RNG.standard_normal((300, 3, 1)).astype(np.float32)

    def f(x):  # a pad of a unit axis after a reshape: its fill and iota sunk through a map
        padded = lax.pad(x.reshape(300, 3, 1, 1), 0.0, ((0, 0, 0),) * 3 + ((1, 1, 0),))
        return padded.reshape(300, 3, 3) * 2.0 + 1.0

    got = np.asarray(numbax.jit(f)(x))
    want = np.zeros((300, 3, 3), np.float32)
    want[:, :, 1] = x[:, :, 0] * 2.0
    np.testing.assert_allclose(got, want + 1.0, rtol=1e-6)
    text = numbax.jit(f).lower(x).as_text().split("def driver")[1]
    assert "np.int32)" not in text  # no iota written as an array
    assert text.count("np.empty(") == 1  # the result is the only array made


def test_a_broadcast_iota_of_one_hot_stays_a_load_in_the_softmax_rows():
    logits = RNG.standard_normal((64, 30)).astype(np.float32)
    labels = RNG.integers(0, 30, 64).astype(np.int32)

    def ce(x, y):
        return -jnp.mean(jnp.sum(numbax.nn.log_softmax(x) * numbax.nn.one_hot(y, 30), -1))

    logp = logits - logits.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    want = -np.mean(logp[np.arange(64), labels])
    np.testing.assert_allclose(float(numbax.jit(ce)(logits, labels)), want, rtol=1e-5)
    driver = numbax.jit(ce).lower(logits, labels).as_text().split("def driver")[1]
    assert "np.bool_" not in driver  # the one-hot mask is never written out
