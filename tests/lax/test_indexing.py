"""dynamic_slice, dynamic_update_slice, gather and the scatter family: numpy, AD, vmap."""
import numpy as np
import pytest

import numbax
from numbax import lax
from numbax._src.lax import indexing as element  # the element gather/scatter
from numbax.errors import NumbaxTypeError, NumbaxValueError
from tests.lax._checks import RNG, check_ad, check_vmap

DTYPES = [np.float32, np.float64, np.int32]


def _x(shape, dtype):
    return np.asarray((RNG.standard_normal(shape) * 10).astype(dtype))


def _np_dynamic_slice(x, starts, sizes):
    # JAX's rule: a negative start counts from the end of its axis (once), then clamping
    lo = [int(np.clip(s + n if s < 0 else s, 0, n - k)) for s, n, k in zip(starts, x.shape,
                                                                             sizes)]
    return x[tuple(slice(a, a + k) for a, k in zip(lo, sizes))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,starts,sizes", [
    ((), (), ()),
    ((6,), (2,), (3,)),
    ((6,), (5,), (3,)),        # clamped to 3
    ((4, 5), (-2, 1), (2, 3)),  # -2 counts from the end: row 2
    ((4, 5), (-9, 1), (2, 3)),  # -9 + 4 = -5, clamped to 0
    ((2, 3, 4), (1, 2, 3), (1, 1, 2)),
])
def test_dynamic_slice_and_update_eager(dtype, shape, starts, sizes):
    x = _x(shape, dtype)
    out = lax.dynamic_slice(x, starts, sizes)
    np.testing.assert_array_equal(np.asarray(out), _np_dynamic_slice(x, starts, sizes))
    upd = _x(sizes, dtype)
    out = lax.dynamic_update_slice(x, upd, starts)
    expected = x.copy()
    lo = [int(np.clip(s + n if s < 0 else s, 0, n - k)) for s, n, k in zip(starts, shape,
                                                                             sizes)]
    expected[tuple(slice(a, a + k) for a, k in zip(lo, sizes))] = upd
    np.testing.assert_array_equal(np.asarray(out), expected)


def _np_gather(x, idx, axes, mode, fill=np.nan):
    rest = [d for d in range(x.ndim) if d not in axes]
    xt = np.transpose(x, list(axes) + rest)
    out = np.empty(idx.shape[:-1] + tuple(x.shape[d] for d in rest), x.dtype)
    for pos in np.ndindex(*idx.shape[:-1]):
        vec = idx[pos]
        inb = all(0 <= v < x.shape[a] for v, a in zip(vec, axes))
        if mode == "fill" and not inb:
            out[pos] = fill
        else:
            out[pos] = xt[tuple(np.clip(v, 0, x.shape[a] - 1) for v, a in zip(vec, axes))]
    return out


GATHER_CASES = [
    ((7,), (0,), (4, 1)),
    ((3, 4), (1,), (2, 3, 1)),
    ((3, 4), (0, 1), (5, 2)),
    ((2, 3, 4), (2, 0), (3, 2)),
    ((2, 3, 4), (1,), (1,)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axes,ishape", GATHER_CASES)
@pytest.mark.parametrize("mode", ["clip", "fill"])
def test_gather_eager(dtype, shape, axes, ishape, mode):
    x = _x(shape, dtype)
    bound = max(shape[a] for a in axes)
    idx = RNG.integers(-1, bound + 2, size=ishape)
    fill = -5
    out = element.gather(x, idx, axes, mode=mode, fill_value=fill)
    np.testing.assert_array_equal(np.asarray(out), _np_gather(x, idx, axes, mode, fill))


def test_gather_default_fill_is_nan():
    out = element.gather(np.arange(3.0), np.array([[1], [5]]), (0,), mode="fill")
    np.testing.assert_array_equal(np.asarray(out), [1.0, np.nan])


SCATTERS = {
    "scatter": (element.scatter, None),
    "scatter_add": (element.scatter_add, np.add),
    "scatter_mul": (element.scatter_mul, np.multiply),
    "scatter_min": (element.scatter_min, np.minimum),
    "scatter_max": (element.scatter_max, np.maximum),
}


def _np_scatter(ufunc, x, idx, upd, axes, mode):
    out = x.copy()
    rest = [d for d in range(x.ndim) if d not in axes]
    view = np.transpose(out, list(axes) + rest)
    for pos in np.ndindex(*idx.shape[:-1]):
        vec = idx[pos]
        inb = all(0 <= v < x.shape[a] for v, a in zip(vec, axes))
        if mode == "drop" and not inb:
            continue
        where = tuple(np.clip(v, 0, x.shape[a] - 1) for v, a in zip(vec, axes))
        view[where] = upd[pos] if ufunc is None else ufunc(view[where], upd[pos])
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(SCATTERS))
@pytest.mark.parametrize("shape,axes,ishape", GATHER_CASES)
@pytest.mark.parametrize("mode", ["drop", "clip"])
def test_scatter_eager(dtype, name, shape, axes, ishape, mode):
    fn, ufunc = SCATTERS[name]
    x = _x(shape, dtype)
    bound = max(shape[a] for a in axes)
    # repeated indices included: numbax's eager scatter writes them in order (last wins)
    idx = RNG.integers(-1, bound + 2, size=ishape)
    rest = tuple(n for d, n in enumerate(shape) if d not in axes)
    upd = _x(ishape[:-1] + rest, dtype)
    if name == "scatter_mul":
        upd = (upd % 3).astype(dtype)
    out = fn(x, idx, upd, axes, mode=mode)
    np.testing.assert_allclose(np.asarray(out), _np_scatter(ufunc, x, idx, upd, axes, mode),
                               rtol=1e-6)


def test_scatter_set_repeated_index_writes_one_of_the_updates():
    out = np.asarray(element.scatter(np.zeros(3), np.array([[1], [1]]), np.array([5.0, 6.0]), (0,)))
    assert out[1] in (5.0, 6.0) and out[0] == out[2] == 0


# ----------------------------------------------------------------------------- AD

IDX2 = np.array([[0, 1], [2, 3], [0, 1], [1, 0], [5, 0]])  # a duplicate and an out-of-bounds row
IDX1 = np.array([[2], [0], [2], [7]])
UPD_SHAPE = (4, 4)
X34 = RNG.standard_normal((3, 4))
U44 = RNG.standard_normal(UPD_SHAPE)

AD_CASES = [
    ("dynamic_slice", lambda x: lax.dynamic_slice(x, (1, 2), (2, 2))),
    ("dynamic_slice_clamped", lambda x: lax.dynamic_slice(x, (5, -1), (2, 3))),
    ("dus_operand", lambda x: lax.dynamic_update_slice(x, np.ones((2, 2)), (1, 1))),
    ("dus_update", lambda u: lax.dynamic_update_slice(X34, u[:2, :2], (2, 3))),
    ("gather_clip", lambda x: element.gather(x, IDX2, (0, 1), mode="clip")),
    ("gather_fill", lambda x: element.gather(x, IDX2, (0, 1), mode="fill", fill_value=0.0)),
    ("gather_axis1", lambda x: element.gather(x, np.array([[3], [0], [3]]), (1,))),
    ("scatter_add_operand", lambda x: element.scatter_add(x, IDX1, U44, (0,))),
    ("scatter_add_updates", lambda u: element.scatter_add(X34, IDX1, u, (0,))),
    ("scatter_add_updates_clip", lambda u: element.scatter_add(X34, IDX1, u, (0,), mode="clip")),
    ("scatter_operand", lambda x: element.scatter(x, IDX1, U44, (0,))),
    ("scatter_updates_dup", lambda u: element.scatter(X34, IDX1, u, (0,))),
    ("scatter_updates_clip", lambda u: element.scatter(X34, IDX1, u, (0,), mode="clip")),
    ("scatter_mul_operand", lambda x: element.scatter_mul(x, IDX1, U44, (0,))),
    ("scatter_mul_updates_unique", lambda u: element.scatter_mul(
        X34, np.array([[2], [0], [1], [9]]), u, (0,), unique_indices=True)),
    ("scatter_max_operand", lambda x: element.scatter_max(x, IDX1, U44, (0,))),
    ("scatter_max_updates", lambda u: element.scatter_max(X34, IDX1, u, (0,))),
    ("scatter_min_updates", lambda u: element.scatter_min(X34, IDX1, u, (0,))),
]


@pytest.mark.parametrize("name,f", AD_CASES, ids=[c[0] for c in AD_CASES])
def test_ad(name, f):
    x = RNG.standard_normal(UPD_SHAPE if "update" in name else (3, 4))
    check_ad(f, x)


def test_scatter_mul_updates_gradient_needs_unique_indices():
    with pytest.raises(NotImplementedError, match="unique_indices"):
        numbax.jvp(lambda u: element.scatter_mul(X34, IDX1, u, (0,)), (U44,), (U44,))


def test_scatter_max_tie_averages():
    # operand and one update tie at the maximum: the tangent is their average
    x = np.array([1.0, 2.0])
    idx = np.array([[0]])
    _, t = numbax.jvp(lambda x, u: element.scatter_max(x, idx, u, (0,)), (x, np.array([1.0])),
                      (np.array([1.0, 0.0]), np.array([3.0])))
    np.testing.assert_allclose(np.asarray(t), [2.0, 0.0])


# ----------------------------------------------------------------------------- vmap


@pytest.mark.parametrize("in_axis", [0, 1])
def test_vmap_dynamic_slice(in_axis):
    x = RNG.standard_normal((5, 6, 4) if in_axis == 0 else (6, 5, 4))
    starts = np.array([0, 3, 5, -2, 1])
    f = lambda x, i: lax.dynamic_slice(x, (i, 1), (3, 2))  # noqa: E731
    check_vmap(f, [x, 1], [in_axis, None])
    check_vmap(f, [x, starts], [in_axis, 0])
    check_vmap(f, [x[(slice(None),) * in_axis + (0,)], starts], [None, 0])


@pytest.mark.parametrize("in_axis", [0, 1])
def test_vmap_dynamic_update_slice(in_axis):
    x = RNG.standard_normal((5, 6, 4) if in_axis == 0 else (6, 5, 4))
    u = RNG.standard_normal((5, 3, 2))
    starts = np.array([0, 3, 5, -2, 1])
    f = lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 1))  # noqa: E731
    check_vmap(f, [x, u, 2], [in_axis, 0, None])
    check_vmap(f, [x, u, starts], [in_axis, 0, 0])
    check_vmap(f, [x[(slice(None),) * in_axis + (0,)], u[0], starts], [None, None, 0])


@pytest.mark.parametrize("in_axis", [0, 1])
def test_vmap_gather(in_axis):
    x = RNG.standard_normal((5, 3, 4) if in_axis == 0 else (3, 5, 4))
    idx = RNG.integers(0, 3, size=(5, 2, 1))
    for mode in ("clip", "fill"):
        f = lambda x, i, mode=mode: element.gather(x, i, (0,), mode=mode)  # noqa: E731
        check_vmap(f, [x, idx[0]], [in_axis, None])
        check_vmap(f, [x, idx], [in_axis, 0])
        check_vmap(f, [x[(slice(None),) * in_axis + (0,)], np.moveaxis(idx, 0, 1)], [None, 1])


@pytest.mark.parametrize("shape,axes,ishape", GATHER_CASES)
@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize("x_axis,i_axis", [(0, 0), (1, 0), (-1, 1)])
def test_vmap_gather_of_batched_tables_and_indices(shape, axes, ishape, mode, x_axis, i_axis):
    """Both batched: the batch merged into the first indexed axis of the operand
    (indexing._batch_merged_into_an_axis). Indices out of bounds on every side must fill or
    clamp within their own row, never read the next one; eager and jitted, int32 and uint8
    indices, against numpy's gather of each row."""
    batch = 4
    x = np.moveaxis(_x((batch, *shape), np.float64), 0, x_axis)
    bound = max(shape[a] for a in axes)
    for idx_dtype in (np.int32, np.uint8):
        low = -2 if np.dtype(idx_dtype).kind == "i" else 0
        idx = RNG.integers(low, bound + 3, size=(batch, *ishape)).astype(idx_dtype)
        idx_b = np.moveaxis(idx, 0, i_axis)

        def f(x, i):
            return element.gather(x, i, axes, mode=mode, fill_value=-7.0)
        want = np.stack([_np_gather(np.take(x, b, axis=x_axis), idx[b], axes, mode, -7.0)
                         for b in range(batch)])
        batched = numbax.vmap(f, in_axes=(x_axis, i_axis))
        np.testing.assert_array_equal(np.asarray(batched(x, idx_b)), want)
        np.testing.assert_array_equal(np.asarray(numbax.jit(batched)(x, idx_b)), want)


def test_vmapped_gathers_gradient_adds_into_each_rows_table():
    """The transpose of the merged gather scatters into the batch's own rows."""
    rng = np.random.default_rng(11)
    tables = rng.standard_normal((6, 9))
    idx = rng.integers(-1, 11, (6, 5, 1))
    weights = rng.standard_normal((6, 5))

    def loss(t):
        rows = numbax.vmap(lambda t, i: element.gather(t, i, (0,), mode="fill",
                                                       fill_value=0.0))(t, idx)
        return (rows * weights).sum()
    want = np.zeros_like(tables)
    for b in range(6):
        for j in range(5):
            if 0 <= idx[b, j, 0] < 9:
                want[b, idx[b, j, 0]] += weights[b, j]
    np.testing.assert_allclose(np.asarray(numbax.grad(loss)(tables)), want)
    np.testing.assert_allclose(np.asarray(numbax.jit(numbax.grad(loss))(tables)), want)


@pytest.mark.parametrize("name", list(SCATTERS))
@pytest.mark.parametrize("in_axis", [0, 1])
def test_vmap_scatter(name, in_axis):
    fn = SCATTERS[name][0]
    x = RNG.standard_normal((5, 3, 4) if in_axis == 0 else (3, 5, 4))
    idx = np.stack([RNG.permutation(4)[:2] for _ in range(5)])[..., None]
    u = RNG.standard_normal((5, 2, 4))
    f = lambda x, i, u: fn(x, i, u, (0,))  # noqa: E731
    x0 = x[(slice(None),) * in_axis + (0,)]
    check_vmap(f, [x, idx[0], u[0]], [in_axis, None, None])
    check_vmap(f, [x, idx, u], [in_axis, 0, 0])
    check_vmap(f, [x0, idx, u[0]], [None, 0, None])
    check_vmap(f, [x0, idx[0], u], [None, None, 0])


def test_jaxpr_of_batched_dynamic_slice_is_a_gather():
    jaxpr = numbax.make_jaxpr(numbax.vmap(lambda x, i: lax.dynamic_slice(x, (i,), (2,)),
                                          in_axes=(None, 0)))(np.ones(5), np.array([0, 1]))
    assert "gather[" in str(jaxpr)


# ----------------------------------------------------------------------------- bad input


def test_bad_inputs():
    x = np.ones((3, 4))
    with pytest.raises(NumbaxTypeError, match="start index 0 has dtype float64"):
        lax.dynamic_slice(x, (1.0, 0), (1, 1))
    with pytest.raises(NumbaxTypeError, match="start_indices has 1 entries"):
        lax.dynamic_slice(x, (1,), (1, 1))
    with pytest.raises(NumbaxValueError, match=r"slice_sizes has \(4, 1\)"):
        lax.dynamic_slice(x, (0, 0), (4, 1))
    with pytest.raises(NumbaxValueError, match=r"update has shape \(4, 1\)"):
        lax.dynamic_update_slice(x, np.ones((4, 1)), (0, 0))
    with pytest.raises(NumbaxTypeError, match="indices has dtype float64"):
        element.gather(x, np.ones((2, 1)), (0,))
    with pytest.raises(NumbaxTypeError, match=r"indices has shape \(2, 2\)"):
        element.gather(x, np.ones((2, 2), int), (0,))
    with pytest.raises(NumbaxValueError, match="mode is 'wrap'"):
        element.gather(x, np.ones((2, 1), int), (0,), mode="wrap")
    with pytest.raises(NumbaxValueError, match=r"updates has shape \(2, 3\), expected \(2, 4\)"):
        element.scatter_add(x, np.ones((2, 1), int), np.ones((2, 3)), (0,))
    with pytest.raises(NumbaxTypeError, match="updates has dtype int64"):
        element.scatter(x, np.ones((2, 1), int), np.ones((2, 4), np.int64), (0,))


def test_at_multiply_with_static_index_differentiates_the_update():
    """issue 21 item 18: a static int/slice index is unique, so d/du of x.at[i].multiply(u)
    is defined (JAX marks such indices unique)."""
    import numbax.numpy as jnp

    x = np.arange(1.0, 7.0).reshape(2, 3)
    g = numbax.grad(lambda u: jnp.asarray(x).at[1].multiply(u).sum())(2.0)
    np.testing.assert_allclose(g, x[1].sum())
    g = numbax.grad(lambda u: jnp.asarray(x).at[1, 1:].multiply(u).sum())(2.0)
    np.testing.assert_allclose(g, x[1, 1:].sum())
    g = numbax.jit(numbax.grad(lambda u: jnp.asarray(x).at[0, 2].multiply(u).sum()))(3.0)
    np.testing.assert_allclose(g, x[0, 2])
    with pytest.raises(NotImplementedError, match="unique_indices"):  # repeated array indices
        numbax.grad(lambda u: jnp.asarray(x[0]).at[np.array([1, 1])].multiply(u).sum())(2.0)
