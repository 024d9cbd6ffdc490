"""numpy indexing: x[idx], x.at[idx].*, take, take_along_axis against numpy."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax.errors import NumbaxTypeError, NumbaxValueError

RNG = np.random.default_rng(1)
X = RNG.standard_normal((4, 5, 6))
MASK = X[:, :, 0] > 0

INDICES = [
    0, -1, 3, (1, 2), (-1, -2, -3), slice(None), slice(1, 3), slice(None, None, -1),
    slice(3, 0, -2), slice(-2, None, 2), slice(10, 20), (Ellipsis, 0), (0, Ellipsis, 1),
    (None,), (None, 1, None, slice(None, None, 2)), (Ellipsis, None), (slice(1, 1),),
    ([0, 2, 2],), (np.array([-1, 0]),), ([[0, 1], [2, 3]],), ([0, 1], [2, 3]),
    (slice(None), [4, 0, 1]), (0, slice(None), [1, 2]), ([1, 0], slice(None), [2, 3]),
    (slice(None), [0, 2], [1, 3]), (slice(None), [0, 2], None, [1, 3]),
    ([[0], [1]], slice(None, None, -1), [0, 3]), (Ellipsis, [5, 0]),
    (slice(None), np.array([[1]]), 2), (MASK,), (MASK[:, 0],), (slice(None), MASK[0]),
    (np.array([True, False, True, True]), 1), (np.array(2),), (np.int32(1), np.int64(-1)),
]


def _ids(idx):
    return repr(idx)[:40]


@pytest.mark.parametrize("idx", INDICES, ids=_ids)
def test_getitem_matches_numpy(idx):
    x = jnp.asarray(X)
    np.testing.assert_array_equal(np.asarray(x[idx]), X[idx])


@pytest.mark.parametrize("idx", INDICES, ids=_ids)
def test_getitem_traced_and_vmapped(idx):
    jaxpr = numbax.make_jaxpr(lambda x: x[idx])(X)
    assert jaxpr.out_avals[0].shape == X[idx].shape
    batched = np.stack([X, X + 1.0])
    out = numbax.vmap(lambda x: x[idx])(batched)
    np.testing.assert_array_equal(np.asarray(out), np.stack([X[idx], (X + 1.0)[idx]]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_getitem_dtypes_and_scalars(dtype):
    x = (X * 10).astype(dtype)
    out = jnp.asarray(x)[1, ::2, [0, -1]]
    assert out.dtype == dtype
    np.testing.assert_array_equal(np.asarray(out), x[1, ::2, [0, -1]])
    v = jnp.asarray(x[0, 0])
    np.testing.assert_array_equal(np.asarray(v[-2]), x[0, 0][-2])


def test_basic_indexing_jaxpr_is_simple():
    text = str(numbax.make_jaxpr(lambda x: x[1, ::-2, None, 2:])(X))
    assert "gather" not in text
    assert "slice[" in text and "rev[" in text


def test_traced_integer_indices():
    f = lambda x, i: jnp.asarray(x)[i, 1:3]  # noqa: E731
    for i in (0, 3, -1, -4):
        np.testing.assert_array_equal(np.asarray(f(X, i)), X[i, 1:3])
        text = str(numbax.make_jaxpr(f)(X, i))
        assert "dynamic_slice" in text and "gather" not in text
    out = numbax.vmap(f, in_axes=(None, 0))(X, np.array([0, -1, 2]))
    np.testing.assert_array_equal(np.asarray(out), X[[0, -1, 2], 1:3])
    out = numbax.vmap(lambda x, i: jnp.asarray(x)[:, i], in_axes=(1, 0))(X[:, :2],
                                                                         np.array([1, -2]))
    np.testing.assert_array_equal(np.asarray(out), np.stack([X[:, 0][:, 1], X[:, 1][:, -2]]))
    out = numbax.vmap(lambda i: jnp.asarray(X)[[0, 1], i])(np.array([2, 3]))
    np.testing.assert_array_equal(np.asarray(out), np.stack([X[[0, 1], 2], X[[0, 1], 3]]))


def test_traced_index_arrays():
    idx = np.array([[0, -1], [2, 1]])
    out = numbax.vmap(lambda i: jnp.asarray(X)[:, i])(np.stack([idx, idx[::-1]]))
    np.testing.assert_array_equal(np.asarray(out), np.stack([X[:, idx], X[:, idx[::-1]]]))


def test_grad_through_indexing():
    def f(x):
        y = x[1:, [0, 0, 3], ::-2] * x[0, 0, 0] + x[..., None][-1, 2, 3]
        return lax.reduce_sum(y * y, tuple(range(3)))

    g = np.asarray(numbax.grad(f)(X))
    eps, v = 1e-6, RNG.standard_normal(X.shape)
    fd = (float(f(X + eps * v)) - float(f(X - eps * v))) / (2 * eps)
    np.testing.assert_allclose(np.sum(g * v), fd, rtol=1e-6)


# ----------------------------------------------------------------------------- .at[]

AT_INDICES = [
    1, (slice(None), 2), (Ellipsis, slice(None, None, -2)), ([0, 0, 3, 1],),
    (slice(None), [1, 1, 4], [0, 0, 5]), (MASK,), (-1, [2, 2], None),
]


def _np_at(op, x, idx, v):
    out = x.copy()
    if op == "set":
        out[idx] = v
        return out
    ufunc = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}[op]
    ufunc.at(out, idx, v)
    return out


@pytest.mark.parametrize("op", ["set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("idx", AT_INDICES, ids=_ids)
def test_at_matches_numpy_ufunc_at(op, idx):
    shape = X[idx].shape
    v = RNG.standard_normal(shape)
    if op == "set" and idx in ([0, 0, 3, 1],):
        v = RNG.standard_normal(shape[1:])  # repeated indices: a broadcast value is well defined
    expected = _np_at(op, X, idx, v)
    out = getattr(jnp.asarray(X).at[idx], op)(v)
    np.testing.assert_allclose(np.asarray(out), expected)
    out = numbax.vmap(lambda x: getattr(x.at[idx], op)(v))(np.stack([X, X]))
    np.testing.assert_allclose(np.asarray(out), np.stack([expected, expected]))


def test_at_get_and_misc_ops():
    x = jnp.asarray(X)
    np.testing.assert_array_equal(np.asarray(x.at[0, [1, 2]].get()), X[0, [1, 2]])
    out = jnp.asarray(np.arange(4.0)).at[np.array([1, 7])].get(mode="fill", fill_value=-1.0)
    np.testing.assert_array_equal(np.asarray(out), [1.0, -1.0])
    np.testing.assert_allclose(np.asarray(x.at[1].divide(2.0)[1]), X[1] / 2)
    np.testing.assert_allclose(np.asarray(x.at[1].subtract(2.0)[1]), X[1] - 2)
    np.testing.assert_allclose(np.asarray(x.at[1].power(2)[1]), X[1] ** 2)
    np.testing.assert_allclose(np.asarray(x.at[1].apply(np.abs)[1]), np.abs(X[1]))


def test_at_out_of_bounds_dropped_and_traced_index():
    z = jnp.asarray(np.zeros(4))
    out = z.at[np.array([0, 0, 9, -1, -9])].add(1.0)
    np.testing.assert_array_equal(np.asarray(out), [2.0, 0.0, 0.0, 1.0])
    out = numbax.vmap(lambda i: z.at[i].set(5.0))(np.array([0, 3, -1, 7]))
    np.testing.assert_array_equal(np.asarray(out), [[5, 0, 0, 0], [0, 0, 0, 5],
                                                    [0, 0, 0, 5], [0, 0, 0, 0]])
    out = z.at[np.array([9])].set(1.0, mode="clip")
    np.testing.assert_array_equal(np.asarray(out), [0.0, 0.0, 0.0, 1.0])


def test_grad_through_at():
    idx = np.array([0, 2, 2])

    def f(x, v):
        y = jnp.asarray(x).at[idx].add(v * v).at[1].set(v[0]).at[:, 0].multiply(3.0)
        return lax.reduce_sum(y * y, (0, 1))

    x, v = RNG.standard_normal((4, 3)), RNG.standard_normal((3, 3))
    gx, gv = numbax.grad(f, argnums=(0, 1))(x, v)
    eps = 1e-6
    for arr, g, which in ((x, gx, 0), (v, gv, 1)):
        d = RNG.standard_normal(arr.shape)
        args_hi = [x, v]
        args_lo = [x, v]
        args_hi[which] = arr + eps * d
        args_lo[which] = arr - eps * d
        fd = (float(f(*args_hi)) - float(f(*args_lo))) / (2 * eps)
        np.testing.assert_allclose(np.sum(np.asarray(g) * d), fd, rtol=1e-6)


# ----------------------------------------------------------------------------- take


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take(axis):
    idx = np.array([[0, -1], [2, 1]])
    np.testing.assert_array_equal(np.asarray(jnp.take(X, idx, axis=axis)),
                                  np.take(X, idx, axis=axis))
    np.testing.assert_array_equal(np.asarray(jnp.take(X, idx + 7, axis=axis, mode="clip")),
                                  np.take(X, idx + 7, axis=axis, mode="clip"))
    np.testing.assert_array_equal(np.asarray(jnp.take(X, idx + 7, axis=axis, mode="wrap")),
                                  np.take(X, idx + 7, axis=axis, mode="wrap"))


def test_take_fill_and_vmap_and_grad():
    out = jnp.take(np.arange(3.0), np.array([1, 3, -4]))
    np.testing.assert_array_equal(np.asarray(out), [1.0, np.nan, np.nan])
    out = jnp.take(np.arange(3), np.array([5]))
    assert int(np.asarray(out)[0]) == np.iinfo(np.int64).min
    idx = np.array([[0, 2], [1, 1]])
    out = numbax.vmap(lambda i: jnp.take(X, i, axis=1))(idx)
    np.testing.assert_array_equal(np.asarray(out), np.stack([np.take(X, i, axis=1) for i in idx]))
    g = numbax.grad(lambda x: lax.reduce_sum(jnp.take(x, np.array([0, 0, 2])), (0,)))(
        np.ones(3))
    np.testing.assert_array_equal(np.asarray(g), [2.0, 0.0, 1.0])


@pytest.mark.parametrize("axis", [0, 1, 2, -1, None])
def test_take_along_axis(axis):
    order = np.argsort(X, axis=axis) if axis is not None else np.argsort(X, axis=None)
    np.testing.assert_array_equal(np.asarray(jnp.take_along_axis(X, order, axis)),
                                  np.take_along_axis(X, order, axis))


def test_take_along_axis_broadcast_and_vmap_and_grad():
    idx = np.array([0, 3])[None, :, None]  # broadcasts over axes 0 and 2
    np.testing.assert_array_equal(np.asarray(jnp.take_along_axis(X, idx, 1)),
                                  np.take_along_axis(X, np.broadcast_to(idx, (4, 2, 6)), 1))
    order = np.argsort(X, axis=1)
    out = numbax.vmap(lambda x, i: jnp.take_along_axis(x, i, 0))(X, order)
    np.testing.assert_array_equal(np.asarray(out), np.take_along_axis(X, order, 1))
    g = numbax.grad(lambda x: lax.reduce_sum(jnp.take_along_axis(x, np.array([[1, 1]]), 1),
                                             (0, 1)))(np.ones((1, 3)))
    np.testing.assert_array_equal(np.asarray(g), [[0.0, 2.0, 0.0]])


# ----------------------------------------------------------------------------- bad input


def test_out_of_bounds_static_indices_follow_jax():
    # JAX's rules (issue 17 item 10): reads clamp, .at[].get(mode="fill") fills, updates drop.
    x = jnp.asarray(X)
    np.testing.assert_array_equal(x[4], X[3])
    np.testing.assert_array_equal(x[0, 0, -7], X[0, 0, 0])
    np.testing.assert_array_equal(x[-9, 10], X[0, 4])
    np.testing.assert_array_equal(x[np.array(7)], X[3])
    np.testing.assert_array_equal(x[..., 99], X[..., 5])
    assert np.isnan(np.asarray(x.at[4].get(mode="fill"))).all()
    np.testing.assert_array_equal(x.at[1, 9].get(mode="fill", fill_value=-1.0), np.full(6, -1.0))
    np.testing.assert_array_equal(x.at[5].set(1.0), X)
    np.testing.assert_array_equal(x.at[0, 0, 6].add(1.0), X)
    clipped = X.copy()
    clipped[0, 0, 5] += 1.0
    np.testing.assert_array_equal(x.at[0, 0, 6].add(1.0, mode="clip"), clipped)
    g = numbax.grad(lambda v: v[7] * 2.0)(np.arange(3.0))
    np.testing.assert_array_equal(g, [0.0, 0.0, 2.0])


def test_bad_indices():
    x = jnp.asarray(X)
    with pytest.raises(IndexError, match="index 0 is out of bounds for axis 0 with size 0"):
        jnp.zeros((0, 2))[0]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0]
    with pytest.raises(TypeError, match="dtype float64, expected integers"):
        x[np.array([1.0])]
    with pytest.raises(TypeError, match="index has dtype float64"):
        x[1.0]
    with pytest.raises(IndexError, match="numbax.numpy.where"):
        numbax.make_jaxpr(lambda x: x[x > 0])(X)
    with pytest.raises(TypeError, match="slice bounds have traced values"):
        numbax.make_jaxpr(lambda x, i: x[i:])(X, 1)
    with pytest.raises(IndexError, match=r"boolean index has shape \(3,\)"):
        x[np.array([True, False, True])]
    with pytest.raises(NumbaxValueError, match=r"values has shape \(3,\).*\(5, 6\)"):
        x.at[0].set(np.ones(3))
    with pytest.raises(NumbaxTypeError, match="indices has dtype float64"):
        jnp.take(X, np.array([1.0]))
    with pytest.raises(NumbaxValueError, match="mode is 'raise'"):
        jnp.take(X, np.array([1]), mode="raise")
    with pytest.raises(NumbaxValueError, match=r"indices has shape \(2,\)"):
        jnp.take_along_axis(X, np.array([0, 1]), 0)
    with pytest.raises(NumbaxTypeError, match="indices has dtype float32"):
        jnp.take_along_axis(X, np.zeros((1, 1, 1), np.float32), 0)


# ----------------------------------------------------------------------------- box updates
BOXES = [np.s_[5:10, 3:19], np.s_[:, 0], np.s_[-1], np.s_[2], np.s_[..., 4:6], np.s_[1:3, ...],
         np.s_[3, -2], np.s_[0:100], np.s_[-4:, :-3]]


@pytest.mark.parametrize("op", ["set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("box", BOXES, ids=str)
def test_box_updates_are_one_dynamic_update_slice_with_numpys_values(op, box):
    """Static ints and unit-step slices (box_updates.py): a slice, the combination and one
    dynamic_update_slice, not a scatter over an iota of every position; values as numpy's
    in-place update, eager and under jit."""
    x = np.arange(12 * 20, dtype=np.float32).reshape(12, 20) - 100
    values = np.linspace(-3, 3, x[box].size, dtype=np.float32).reshape(x[box].shape)
    want = x.copy()
    combine = {"set": lambda a, v: v, "add": np.add, "multiply": np.multiply,
               "min": np.minimum, "max": np.maximum}[op]
    want[box] = combine(want[box], values)

    def update(a, v):
        return getattr(jnp.asarray(a).at[box], op)(v)

    prims = {e.primitive.name for e in numbax.make_jaxpr(update)(x, values).jaxpr.eqns}
    assert "dynamic_update_slice" in prims and not any("scatter" in p for p in prims)
    np.testing.assert_array_equal(np.asarray(update(x, values)), want)
    np.testing.assert_array_equal(np.asarray(numbax.jit(update)(x, values)), want)


@pytest.mark.parametrize("box", [np.s_[::2], np.s_[3:1], np.s_[[0, 2]], np.s_[None, 1],
                                 np.s_[12], np.s_[2:5:-1]], ids=str)
def test_other_indices_keep_the_scatter(box):
    """Strided, empty, array, None and out-of-bounds indices: the general path (JAX's drop
    of out-of-bounds updates included)."""
    x = np.arange(12 * 4, dtype=np.float32).reshape(12, 4)
    got = jnp.asarray(x).at[box].add(1.0)
    want = x.copy()
    try:
        np.add.at(want, box, 1.0)
    except IndexError:  # out of bounds: JAX drops the update
        pass
    np.testing.assert_array_equal(np.asarray(got), want)


def test_box_update_gradients_against_finite_differences():
    def loss(a, v):
        return jnp.sum(jnp.sin(jnp.asarray(a).at[1:3, 2].add(v * v)) ** 2)

    _assert_grads_are_central_differences(
        loss, np.linspace(-1, 1, 20).reshape(4, 5), np.array([0.3, -0.7]))


def _assert_grads_are_central_differences(loss, *args, eps=1e-6):
    """numbax.grad of `loss` in every argument, element by element against central
    differences of `loss` itself."""
    grads = numbax.grad(loss, argnums=tuple(range(len(args))))(*args)
    for k, (arr, g) in enumerate(zip(args, grads)):
        for i in np.ndindex(arr.shape):
            hi, lo = arr.copy(), arr.copy()
            hi[i] += eps
            lo[i] -= eps
            fd = (float(loss(*args[:k], hi, *args[k + 1:]))
                  - float(loss(*args[:k], lo, *args[k + 1:]))) / (2 * eps)
            assert abs(float(np.asarray(g)[i]) - fd) < 1e-6


@pytest.mark.parametrize("op", ["set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("tail", [(), (slice(None),), (Ellipsis,)],
                         ids=["rows", "rows,:", "rows,..."])
def test_row_updates_are_one_row_scatter_with_numpys_values(op, tail):
    """An integer array of whole rows (box_updates.row_index): a scatter of rows, not of
    elements by flat position over an iota of the whole array. Negative rows count from the
    end; rows out of [-n, n) are dropped (JAX's default)."""
    x = np.arange(9 * 4, dtype=np.float32).reshape(9, 4) - 10
    rows = np.array([2, -1, 7, 12, -10, 0] if op != "set" else [2, -1, 7, 12, 0])
    values = np.linspace(-2, 2, rows.size * 4, dtype=np.float32).reshape(rows.size, 4)
    want = x.copy()
    ufunc = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}
    inside = (rows >= -9) & (rows < 9)
    if op == "set":
        want[rows[inside]] = values[inside]
    else:
        ufunc[op].at(want, rows[inside], values[inside])

    def update(a, r, v):
        return getattr(jnp.asarray(a).at[(r, *tail)], op)(v)

    prims = {e.primitive.name for e in numbax.make_jaxpr(update)(x, rows, values).jaxpr.eqns}
    assert "iota" not in prims and any("scatter" in p for p in prims)
    np.testing.assert_array_equal(np.asarray(update(x, rows, values)), want)
    np.testing.assert_array_equal(np.asarray(numbax.jit(update)(x, rows, values)), want)


def test_row_updates_clip_and_differentiate():
    x = np.arange(12.0).reshape(4, 3)
    got = jnp.asarray(x).at[np.array([5, -7, 1])].add(1.0, mode="clip")
    want = x.copy()
    np.add.at(want, [3, 0, 1], 1.0)
    np.testing.assert_array_equal(np.asarray(got), want)

    def loss(t, g):
        return jnp.sum(jnp.tanh(jnp.asarray(t).at[np.array([1, 3, 1])].add(g)) ** 2)

    _assert_grads_are_central_differences(
        loss, np.linspace(-1, 1, 12).reshape(4, 3), np.linspace(0.5, -0.5, 9).reshape(3, 3))


@pytest.mark.parametrize("op", ["set", "add", "max"])
def test_updates_at_index_arrays_of_leading_axes_are_one_scatter(op):
    """Several integer arrays for the leading axes (a confusion matrix's `cm.at[y, p].add(1)`,
    broadcasting ones) scatter over those axes; negative entries count from the end, out of
    bounds ones drop."""
    x = np.arange(5 * 6 * 2, dtype=np.float32).reshape(5, 6, 2)
    i0 = np.array([[0], [3], [-1]])
    i1 = np.array([1, -2, 9, 4])
    values = np.linspace(-3, 3, 3 * 4 * 2, dtype=np.float32).reshape(3, 4, 2)
    b0, b1 = np.broadcast_arrays(i0, i1)
    keep = (b1 >= -6) & (b1 < 6)
    want = x.copy()
    if op == "set":
        want[b0[keep], b1[keep]] = values[keep]
    else:
        {"add": np.add, "max": np.maximum}[op].at(want, (b0[keep], b1[keep]), values[keep])

    def update(a, p, q, v):
        return getattr(jnp.asarray(a).at[p, q], op)(v)

    prims = {e.primitive.name for e in numbax.make_jaxpr(update)(x, i0, i1, values).jaxpr.eqns}
    assert "iota" not in prims
    np.testing.assert_array_equal(np.asarray(update(x, i0, i1, values)), want)
    np.testing.assert_array_equal(np.asarray(numbax.jit(update)(x, i0, i1, values)), want)


@pytest.mark.parametrize("idx", [np.s_[:, [1, -1, 4, 9]], np.s_[..., [0, 2, 2]],
                                 np.s_[:, [[0], [5]], [1, 2]], np.s_[:, :, [-3]]], ids=str)
def test_updates_at_index_arrays_after_full_slices_are_one_scatter(idx):
    """Integer arrays after full slices (`x.at[:, cols]`): one scatter over their axes, the
    values moved from numpy's layout (index dims in place) to the scatter's (first)."""
    x = np.arange(4 * 6 * 3, dtype=np.float64).reshape(4, 6, 3)
    idx = tuple(np.asarray(i) if isinstance(i, list) else i for i in idx)
    shape = np.empty(x.shape)[tuple(np.clip(i, -5, 5) if isinstance(i, np.ndarray) else i
                                    for i in idx)].shape
    values = np.linspace(-1, 1, int(np.prod(shape))).reshape(shape)

    def update(a, v):
        return jnp.asarray(a).at[idx].add(v)

    prims = {e.primitive.name for e in numbax.make_jaxpr(update)(x, values).jaxpr.eqns}
    assert "iota" not in prims
    want = x.copy()
    arrays = [k for k, i in enumerate(idx) if isinstance(i, np.ndarray)]
    keep = np.ones(np.broadcast_shapes(*(idx[k].shape for k in arrays)), bool)
    for k in arrays:  # out-of-bounds entries are dropped (JAX's default)
        axis = k if idx[0] is not Ellipsis else x.ndim - len(idx) + k
        keep &= (idx[k] >= -x.shape[axis]) & (idx[k] < x.shape[axis])
    kept = tuple(np.broadcast_to(i, keep.shape)[keep] if isinstance(i, np.ndarray) else i
                 for i in idx)
    lead = keep.ndim
    first = next(k for k, i in enumerate(idx) if isinstance(i, np.ndarray))
    first = first if idx[0] is not Ellipsis else x.ndim - len(idx) + first
    moved = np.moveaxis(values, list(range(first, first + lead)), list(range(lead)))[keep]
    np.add.at(want, kept, np.moveaxis(moved, 0, first))
    np.testing.assert_array_equal(np.asarray(update(x, values)), want)
    np.testing.assert_array_equal(np.asarray(numbax.jit(update)(x, values)), want)


MIXED = [np.s_[2, [1, -1, 4]], np.s_[1:4, [0, 5, 2]], np.s_[[3, -2], 1], np.s_[-1, [[0], [3]], 1:3],
         np.s_[1:3, [2, 4], 2], np.s_[..., [0, 5], 1], np.s_[2, :, [0, 1]], np.s_[1:3, :, [2, 0]]]


@pytest.mark.parametrize("op", ["set", "add", "max", "multiply"])
@pytest.mark.parametrize("idx", MIXED, ids=str)
def test_updates_at_index_arrays_with_ints_or_partial_slices(op, idx):
    """Integer arrays with ints beside them or unit-step slices around them (`x.at[2, cols]`,
    `x.at[1:, cols]`): a scatter on the box they pick, not over an iota of every position of
    x; an int apart from the arrays (`x.at[2, :, cols]`, numpy moves the index dims first)
    keeps the general path. Values as numpy's in-place update, eager and under jit."""
    x = np.arange(5 * 6 * 3, dtype=np.float64).reshape(5, 6, 3) - 40
    idx = tuple(np.asarray(i) if isinstance(i, list) else i for i in idx)
    shape = x[idx].shape
    values = np.linspace(-2, 2, int(np.prod(shape))).reshape(shape)
    want = x.copy()
    if op == "set":
        want[idx] = values
    else:
        {"add": np.add, "max": np.maximum, "multiply": np.multiply}[op].at(want, idx, values)

    def update(a, v):
        return getattr(jnp.asarray(a).at[idx], op)(v)

    prims = {e.primitive.name for e in numbax.make_jaxpr(update)(x, values).jaxpr.eqns}
    apart = isinstance(idx[0], int) and isinstance(idx[1], slice) and idx[1] == slice(None)
    assert ("iota" in prims) == apart
    np.testing.assert_array_equal(np.asarray(update(x, values)), want)
    np.testing.assert_array_equal(np.asarray(numbax.jit(update)(x, values)), want)


def test_updates_at_traced_int_and_index_array():
    """`x.at[i, cols]` with i traced (a loop's counter): negative i counts from the end, i out
    of [-n, n) drops the update, or with mode='clip' writes at the clamped row; gradients
    against central differences."""
    x = np.arange(4 * 5, dtype=np.float64).reshape(4, 5)
    cols = np.array([4, 0, -2])
    v = np.array([10.0, 20.0, 30.0])
    update = numbax.jit(lambda a, i: a.at[i, cols].add(v))
    clipped = numbax.jit(lambda a, i: a.at[i, cols].set(v, mode="clip"))
    for i in (1, -1, 4, -5, 9):
        want = x.copy()
        if -4 <= i < 4:
            np.add.at(want[i], cols, v)
        np.testing.assert_array_equal(np.asarray(update(x, i)), want)
        want = x.copy()
        want[min(max(i + 4 if i < 0 else i, 0), 3), cols] = v  # counted from the end, clamped
        np.testing.assert_array_equal(np.asarray(clipped(x, i)), want)

    def fill(a):
        return lax.fori_loop(0, 4, lambda i, y: y.at[i, cols].add(v * i), jnp.asarray(a))

    want = x.copy()
    for i in range(4):
        np.add.at(want[i], cols, v * i)
    np.testing.assert_array_equal(np.asarray(numbax.jit(fill)(x)), want)

    def loss(a, w):
        return jnp.sum(jnp.sin(jnp.asarray(a).at[2, cols].add(w * w)) ** 2)

    _assert_grads_are_central_differences(loss, x / 10, np.array([0.5, -1.5, 2.0]))


@pytest.mark.parametrize("mode", [None, "clip", "wrap"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_take_along_axis_positions_in_every_mode_match_numpy(mode, axis):
    # large enough for the compiled scalar gather (kernels._scalar_gather), with negative and
    # out-of-bounds indices: "fill" (None) gives NaN there, "clip" counts negative indices
    # from the end then clamps (as JAX's take_along_axis), "wrap" wraps
    rng = np.random.default_rng(31)
    x = rng.standard_normal((30, 40, 50))
    n = x.shape[axis]
    shape = list(x.shape)
    shape[axis] = 64
    idx = rng.integers(-n - 3, n + 3, shape)
    f = numbax.jit(lambda x, i: jnp.take_along_axis(x, i, axis, mode=mode))
    got = np.asarray(f(x, idx))
    if mode == "wrap":
        want = np.take_along_axis(x, idx % n, axis)
    elif mode == "clip":
        want = np.take_along_axis(x, np.clip(np.where(idx < 0, idx + n, idx), 0, n - 1), axis)
    else:
        inside = (idx >= -n) & (idx < n)
        want = np.where(inside, np.take_along_axis(x, np.where(inside, idx, 0), axis), np.nan)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.asarray(jnp.take_along_axis(x, idx, axis, mode=mode)),
                                  want)


def test_two_coordinate_gathers_of_scalars_clip_and_fill_as_numpy_says():
    # x[i, j] of index arrays and a vmapped take (two coordinates, one-element rows:
    # kernels._scalar_gather2) on Numba's threads: negative indices count from the end,
    # x[i, j] clamps what is out of bounds (as JAX), take's "fill" gives NaN there
    rng = np.random.default_rng(32)
    x = rng.standard_normal((300, 400))
    i = rng.integers(-300, 300, 200_000)
    j = rng.integers(-400, 400, 200_000)
    got = np.asarray(numbax.jit(lambda x, i, j: x[i, j])(x, i, j))
    np.testing.assert_array_equal(got, x[i, j])
    k = rng.integers(-410, 410, (300, 700))
    taken = np.asarray(numbax.jit(numbax.vmap(lambda row, k: jnp.take(row, k)))(x, k))
    inside = (k >= -400) & (k < 400)
    want = np.where(inside, np.take_along_axis(x, np.where(inside, k, 0), 1), np.nan)
    np.testing.assert_array_equal(taken, want)
