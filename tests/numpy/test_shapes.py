"""numbax.numpy shape functions against numpy, under tracing and vmap, and their errors."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError
from tests.jax_promotion import jax_promoted

RNG = np.random.default_rng(2)
X = RNG.normal(size=(2, 3, 4))
V = np.arange(6.0)
M = np.arange(12, dtype=np.int32).reshape(3, 4)


def _check(got, want):
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _check(g, w)
        return
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_array_equal(got, want)


CASES = [
    ("reshape", (X, (4, -1)), {}), ("reshape", (X, (-1,)), {"order": "F"}),
    ("reshape", (X, 24), {}), ("ravel", (X,), {}), ("ravel", (X,), {"order": "F"}),
    ("transpose", (X,), {}), ("transpose", (X, (1, 0, 2)), {}), ("transpose", (X, (-1, 0, 1)), {}),
    ("swapaxes", (X, 0, -1), {}), ("moveaxis", (X, 0, -1), {}),
    ("moveaxis", (X, (0, 1), (2, 0)), {}), ("expand_dims", (X, 1), {}),
    ("expand_dims", (X, (0, -1)), {}), ("squeeze", (X[:, :1],), {}),
    ("squeeze", (X[:1, :, :1], 2), {}), ("broadcast_to", (V, (2, 6)), {}),
    ("broadcast_to", (3.0, (2,)), {}), ("atleast_1d", (2.0,), {}), ("atleast_2d", (V,), {}),
    ("atleast_3d", (V,), {}), ("atleast_3d", (M,), {}), ("atleast_3d", (X,), {}),
    ("concatenate", ([M, M * 2],), {"axis": 1}), ("concatenate", ([X, X],), {"axis": None}),
    ("concatenate", ([V, M.ravel()],), {}), ("stack", ([M, M],), {"axis": -1}),
    ("stack", ([V, V, V],), {}), ("hstack", ([V, V],), {}), ("hstack", ([M, M],), {}),
    ("vstack", ([V, V],), {}), ("dstack", ([M, M],), {}), ("column_stack", ([V, V],), {}),
    ("split", (V, 3), {}), ("split", (M, [1, 3], 1), {}), ("array_split", (V, 4), {}),
    ("array_split", (X, [1, -1], 2), {}), ("hsplit", (M, 2), {}), ("vsplit", (M, 3), {}),
    ("tile", (V, 2), {}), ("tile", (M, (2, 1, 3)), {}), ("tile", (X, (2,)), {}),
    ("repeat", (M, 2), {}), ("repeat", (M, 3, 1), {}), ("repeat", (M, np.array([2, 0, 1]), 0), {}),
    ("flip", (X,), {}), ("flip", (X, 1), {}), ("flip", (X, (0, 2)), {}), ("fliplr", (M,), {}),
    ("flipud", (M,), {}), ("roll", (V, 2), {}), ("roll", (X, -5), {}),
    ("roll", (X, (1, 2), (0, 2)), {}), ("roll", (M, 7, 1), {}), ("rot90", (M,), {}),
    ("rot90", (M, 2), {}), ("rot90", (M, -1), {}), ("rot90", (X, 1, (2, 0)), {}),
    ("pad", (M, 2), {}), ("pad", (M, ((1, 0), (2, 3))), {"constant_values": 7}),
    ("pad", (V, (2, 3)), {"mode": "edge"}), ("pad", (V, (4, 7)), {"mode": "reflect"}),
    ("pad", (M, 3), {"mode": "symmetric"}), ("pad", (M, ((5, 1), (0, 6))), {"mode": "wrap"}),
    ("pad", (X, 1), {"mode": "reflect"}), ("append", (V, M), {}),
    ("append", (M, M, 0), {}),
]


@pytest.mark.parametrize("name,args,kwargs", CASES, ids=lambda c: str(c)[:30])
def test_matches_numpy(name, args, kwargs):
    _check(getattr(jnp, name)(*args, **kwargs), getattr(np, name)(*args, **kwargs))


def test_shape_queries_and_broadcast_helpers():
    assert jnp.shape(X) == X.shape and jnp.ndim(X) == 3 and jnp.size(X) == 24
    assert jnp.size(X, 1) == 3
    assert jnp.broadcast_shapes((3, 1), (4,), ()) == (3, 4)
    _check(jnp.broadcast_arrays(V[:, None], M[0]), np.broadcast_arrays(V[:, None], M[0]))


def test_concatenate_promotes_as_jax():
    """As numpy for integers; an integer joins a float at the float's width (JAX's lattice)."""
    _check(jnp.concatenate([np.ones(2, np.int8), np.ones(2, np.uint8)]),
           np.concatenate([np.ones(2, np.int8), np.ones(2, np.uint8)]))
    _check(jnp.stack([np.ones(2, np.float32), np.ones(2, np.int64)]),
           np.stack(jax_promoted((np.ones(2, np.float32), np.ones(2, np.int64)))))


@pytest.mark.parametrize("name,args,kwargs", [c for c in CASES if c[0] not in (
    "broadcast_to", "atleast_1d")][::3], ids=lambda c: str(c)[:30])
def test_traceable_under_vmap(name, args, kwargs):
    x0 = args[0][0] if isinstance(args[0], list) else args[0]
    batch = np.stack([np.asarray(x0) + i for i in range(3)])

    def f(x):
        new0 = [x] + list(args[0][1:]) if isinstance(args[0], list) else x
        return getattr(jnp, name)(new0, *args[1:], **kwargs)

    want = [getattr(np, name)([b] + list(args[0][1:]) if isinstance(args[0], list) else b,
                              *args[1:], **kwargs) for b in batch]
    got = numbax.vmap(f)(batch)
    if isinstance(want[0], list):
        for i, part in enumerate(got):
            np.testing.assert_array_equal(np.asarray(part), np.stack([w[i] for w in want]))
    else:
        np.testing.assert_array_equal(np.asarray(got), np.stack(want))


def test_make_jaxpr_shape_ops():
    f = lambda x: jnp.pad(jnp.roll(jnp.flip(x, 0), 1, 1), 1, mode="reflect")  # noqa: E731
    jaxpr = numbax.make_jaxpr(f)(M.astype(float))
    text = str(jaxpr)
    assert "rev" in text and "concatenate" in text and "slice" in text
    assert jaxpr.out_avals[0].shape == (5, 6)


def test_grad_through_shape_ops():
    w = RNG.normal(size=(3, 4))
    f = lambda x: jnp.sum(jnp.tile(jnp.pad(x, 1, mode="edge"), 2) * 1.5)  # noqa: E731
    g = np.asarray(numbax.grad(f)(w))
    ref = np.zeros_like(w)
    eps = 1e-6
    for i in np.ndindex(w.shape):
        d = np.zeros_like(w)
        d[i] = eps
        ref[i] = (np.sum(np.tile(np.pad(w + d, 1, mode="edge"), 2) * 1.5)
                  - np.sum(np.tile(np.pad(w - d, 1, mode="edge"), 2) * 1.5)) / (2 * eps)
    np.testing.assert_allclose(g, ref, rtol=1e-6)


def test_bad_inputs():
    with pytest.raises(NumbaxValueError, match=r"shape \(2, 3, 4\) \(size 24\).*\(5, 5\) "
                                               r"\(size 25\)"):
        jnp.reshape(X, (5, 5))
    with pytest.raises(NumbaxValueError, match=r"size 24.*\(5, -1\)"):
        jnp.reshape(X, (5, -1))
    with pytest.raises(NumbaxValueError, match="at most one -1"):
        jnp.reshape(X, (-1, -1))
    with pytest.raises(NumbaxTypeError, match="not a tuple of ints"):
        jnp.reshape(X, (2.5, 4))
    with pytest.raises(NumbaxValueError, match=r"shape \(6,\).*shape \(4,\)"):
        jnp.broadcast_to(V, (4,))
    with pytest.raises(NumbaxValueError, match=r"\(3, 4\), \(4, 3\)"):
        jnp.concatenate([M, M.T])
    with pytest.raises(NumbaxValueError, match=r"\(6,\), \(3, 4\)"):
        jnp.stack([V, M])
    with pytest.raises(NumbaxValueError, match="does not split"):
        jnp.split(V, 4)
    with pytest.raises(NumbaxValueError, match="size 3"):
        jnp.squeeze(X, 1)
    with pytest.raises(NumbaxValueError, match="out of bounds"):
        jnp.swapaxes(X, 0, 3)
    with pytest.raises(NumbaxValueError, match="not a permutation"):
        jnp.transpose(X, (0, 0, 1))
    with pytest.raises(NumbaxValueError, match="repeats has shape"):
        jnp.repeat(M, np.array([1, 2]), axis=0)
    with pytest.raises(NumbaxValueError, match="mode 'nope'"):
        jnp.pad(V, 1, mode="nope")
    with pytest.raises(NumbaxValueError, match="negative"):
        jnp.pad(V, -1)
    with pytest.raises(NumbaxValueError, match="at least 2"):
        jnp.fliplr(V)
    with pytest.raises(TypeError, match="concrete"):
        numbax.make_jaxpr(lambda r: jnp.repeat(V, r))(2)
    with pytest.raises(TypeError):
        jnp.concatenate([np.array(["a"]), V])


# ----------------------------------------------------------------------------- compat additions


@pytest.mark.parametrize("axis,start", [(0, 0), (2, 0), (1, 3), (-1, 1), (0, 3), (2, -1)])
def test_rollaxis_matches_numpy(axis, start):
    _check(jnp.rollaxis(X, axis, start), np.rollaxis(X, axis, start))


@pytest.mark.parametrize("shape", [(2, 4), 7, (3, 3, 2), (0,), ()])
def test_resize_matches_numpy(shape):
    _check(jnp.resize(M, shape), np.resize(M, shape))
    _check(jnp.resize(np.zeros(0), shape), np.zeros(shape))


def test_unstack_and_block_match_numpy():
    for axis in (0, 1, -1):
        _check(jnp.unstack(X, axis=axis), list(np.moveaxis(X, axis, 0)))
    a, b = np.ones((2, 2)), np.arange(6.0).reshape(2, 3)
    _check(jnp.block([[a, b], [np.zeros((1, 5))]]), np.block([[a, b], [np.zeros((1, 5))]]))
    _check(jnp.block([1, 2, V]), np.block([1, 2, V]))
    _check(jnp.block([[[X]], [[X]]]), np.block([[[X]], [[X]]]))
    _check(jnp.block(3.0), np.block(3.0))


def test_shape_additions_trace_and_differentiate():
    f = numbax.jit(lambda x: jnp.block([[x, 2 * x], [jnp.resize(x, (1, 4))]]).sum())
    x = np.array([[1.0, 2.0]])
    np.testing.assert_allclose(f(x), 2 * (3 + 6) / 2 + 6)
    g = numbax.grad(lambda x: jnp.block([[x, 2 * x]]).sum() + jnp.unstack(x, axis=1)[0].sum())
    np.testing.assert_allclose(g(x), [[4.0, 3.0]])
    out = numbax.vmap(lambda r: jnp.rollaxis(r, 1))(X)
    _check(out, np.stack([np.rollaxis(r, 1) for r in X]))


def test_shape_additions_bad_inputs():
    with pytest.raises(NumbaxValueError, match="start"):
        jnp.rollaxis(X, 0, 5)
    with pytest.raises(NumbaxValueError, match="axis"):
        jnp.rollaxis(X, 3)
    with pytest.raises(NumbaxValueError, match="negative"):
        jnp.resize(M, (-1, 2))
    with pytest.raises(NumbaxTypeError, match="new_shape|shape"):
        jnp.resize(M, "ab")
    with pytest.raises(NumbaxValueError, match="shape \\(\\)"):
        jnp.unstack(3.0)
    with pytest.raises(NumbaxTypeError, match="tuple"):
        jnp.block((V, V))
    with pytest.raises(NumbaxValueError, match="empty"):
        jnp.block([[V], []])
    with pytest.raises(NumbaxValueError, match="depths"):
        jnp.block([[V], V])


def _repeat_to(a, repeats, length):
    """JAX's total_repeat_length: numpy's repeat cut at length, or padded with a's last
    element (not the last repeated one)."""
    out = np.repeat(a, repeats)
    return np.concatenate([out[:length], np.repeat(a[-1:], max(0, length - out.size))])


@pytest.mark.parametrize("repeats", [[1, 2, 3], [0, 2, 0], [0, 0, 0], 2])
@pytest.mark.parametrize("length", [0, 1, 4, 8])
def test_repeat_total_repeat_length(repeats, length):
    a = np.array([7, 8, 9])
    want = _repeat_to(a, repeats, length)
    _check(jnp.repeat(a, np.asarray(repeats), total_repeat_length=length), want)
    traced = numbax.jit(lambda x, r: jnp.repeat(x, r, total_repeat_length=length))
    _check(traced(a, np.asarray(repeats)), want)


def test_repeat_total_repeat_length_along_axis_and_vmap():
    want = np.repeat(M, [1, 3, 0], axis=0)[:3]
    _check(jnp.repeat(M, np.array([1, 3, 0]), axis=0, total_repeat_length=3), want)
    reps = np.array([[1, 2, 3], [3, 0, 1]])
    got = numbax.vmap(lambda r: jnp.repeat(np.array([7, 8, 9]), r, total_repeat_length=4))(reps)
    _check(got, np.stack([_repeat_to(np.array([7, 8, 9]), r, 4) for r in reps]))
