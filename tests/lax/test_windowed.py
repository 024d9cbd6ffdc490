"""lax.reduce_window and its primitives: results vs a direct loop and JAX's recorded outputs,
jvp and max-pool gradients vs JAX's, arbitrary (variadic) computations, vmap, jit, bad input.
The matrix rows live in matrix_cases/windowed.py."""
import doctest
import itertools
import pathlib

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.lax import reduce_window as reduce_window_module
from numbax._src.lax import windowed_reductions
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.test_util import check_grads

REF = np.load(pathlib.Path(__file__).parents[1] / "data" / "conv_jax_reference.npz")
RNG = np.random.default_rng(11)
WINDOW_CASES = {
    "max_pool": dict(window_dimensions=(1, 2, 2, 1), window_strides=(1, 2, 2, 1),
                     padding="VALID"),
    "max_pool_same": dict(window_dimensions=(1, 3, 3, 1), window_strides=(1, 2, 2, 1),
                          padding="SAME"),
    "dilated": dict(window_dimensions=(2, 3), window_strides=(1, 2), padding=((1, 0), (2, 1)),
                    base_dilation=(2, 1), window_dilation=(1, 2)),
}
MONOIDS = {"sum": (0.0, lax.add, np.add), "max": (-np.inf, lax.max, np.maximum),
           "min": (np.inf, lax.min, np.minimum), "prod": (1.0, lax.mul, np.multiply)}


def loop_reduce_window(x, init, op, window_dimensions, window_strides, padding,
                       base_dilation, window_dilation):
    """XLA's ReduceWindow element by element: dilate and pad with init, fold each window."""
    sizes = [(n - 1) * d + 1 for n, d in zip(x.shape, base_dilation)]
    xd = np.full(sizes, init)
    xd[tuple(slice(None, None, d) for d in base_dilation)] = x
    padded = [s + lo + hi for s, (lo, hi) in zip(sizes, padding)]
    xp = np.full(padded, init)
    for idx in itertools.product(*map(range, padded)):
        src = [i - lo for i, (lo, _) in zip(idx, padding)]
        if all(0 <= s < n for s, n in zip(src, sizes)):
            xp[idx] = xd[tuple(src)]
    span = [(w - 1) * d + 1 for w, d in zip(window_dimensions, window_dilation)]
    out_shape = [max(0, (p - w) // s + 1) for p, w, s in zip(padded, span, window_strides)]
    out = np.zeros(out_shape)
    for o in itertools.product(*map(range, out_shape)):
        acc = init
        for k in itertools.product(*map(range, window_dimensions)):
            acc = op(acc, xp[tuple(i * s + j * d for i, s, j, d in
                                   zip(o, window_strides, k, window_dilation))])
        out[o] = acc
    return out


def _full_params(x, kwargs):
    return reduce_window_module._window_args(
        "test", x.shape, kwargs["window_dimensions"], kwargs["window_strides"],
        kwargs["padding"], kwargs.get("base_dilation"), kwargs.get("window_dilation"))


@pytest.mark.parametrize("name", sorted(WINDOW_CASES))
@pytest.mark.parametrize("kind", sorted(MONOIDS))
def test_reduce_window_matches_loop_and_jax(name, kind):
    kwargs = WINDOW_CASES[name]
    x = REF[f"window/{name}/x"]
    init, op, np_op = MONOIDS[kind]
    got = np.asarray(lax.reduce_window(x, init, op, **kwargs))
    np.testing.assert_allclose(got, REF[f"window/{name}/{kind}"], rtol=1e-12)
    p = _full_params(x, kwargs)
    want = loop_reduce_window(x, init, np_op, p["window_dimensions"], p["window_strides"],
                              p["padding"], p["base_dilation"], p["window_dilation"])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    fn = lambda v: lax.reduce_window(v, init, op, **kwargs)  # noqa: E731
    _, t_out = numbax.jvp(fn, (x,), (REF[f"window/{name}/{kind}_t"],))
    np.testing.assert_allclose(np.asarray(t_out), REF[f"window/{name}/{kind}_jvp"], rtol=1e-11,
                               atol=1e-12)
    if f"window/{name}/{kind}_grad" in REF:
        _, pull = numbax.vjp(fn, x)
        (g,) = pull(REF[f"window/{name}/{kind}_ct"])
        np.testing.assert_allclose(np.asarray(g), REF[f"window/{name}/{kind}_grad"],
                                   rtol=1e-11, atol=1e-12)


def test_max_pool_gradient_with_ties_matches_jax():
    x = REF["window/ties/x"]

    def loss(v):
        pooled = lax.reduce_window(v, -np.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
        return jnp.sum(pooled ** 2)

    np.testing.assert_array_equal(np.asarray(numbax.grad(loss)(x)), REF["window/ties/grad"])
    np.testing.assert_array_equal(np.asarray(numbax.jit(numbax.grad(loss))(x)),
                                  REF["window/ties/grad"])


def test_monoids_use_their_primitives_and_others_compose():
    x = np.arange(6.)
    for init, op, name in ((0.0, lax.add, "reduce_window_sum"),
                           (-np.inf, lax.max, "reduce_window_max"),
                           (np.inf, lax.min, "reduce_window_min"),
                           (1.0, lax.add, "reduce_window"), (1.0, lax.mul, "reduce_window")):
        jaxpr = numbax.make_jaxpr(lambda v, init=init, op=op: lax.reduce_window(
            v, init, op, (2,)))(x)
        assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == [name]
    logaddexp = lambda a, b: lax.max(a, b) + lax.log1p(lax.exp(-lax.abs(a - b)))  # noqa: E731
    low = -1e300  # a finite identity: -inf - -inf would be nan
    got = lax.reduce_window(x, low, logaddexp, (3,), (1,), "SAME")
    want = np.logaddexp.reduce(np.lib.stride_tricks.sliding_window_view(
        np.pad(x, 1, constant_values=low), 3), axis=-1)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(numbax.jit(
        lambda v: lax.reduce_window(v, low, logaddexp, (3,), (1,), "SAME"))(x)), want,
        rtol=1e-13)
    check_grads(lambda v: lax.reduce_window(v, low, logaddexp, (3,), (2,), "SAME"),
                (x,), order=2)


def test_variadic_reduce_window_is_an_argmax_pool():
    x = RNG.normal(size=(2, 7))

    def argmax_pool(v):
        idx = lax.broadcasted_iota(np.int64, v.shape, 1)

        def pick(a, b):
            keep = lax.ge(a[0], b[0])
            return lax.select(keep, a[0], b[0]), lax.select(keep, a[1], b[1])

        return lax.reduce_window((v, idx), (-np.inf, np.int64(-1)), pick, (1, 3), (1, 2))

    values, index = argmax_pool(x)
    windows = np.lib.stride_tricks.sliding_window_view(x, 3, axis=1)[:, ::2]
    np.testing.assert_array_equal(np.asarray(values), windows.max(-1))
    np.testing.assert_array_equal(np.asarray(index), windows.argmax(-1) + np.arange(3) * 2)
    batched = numbax.vmap(argmax_pool)(np.stack([x, -x]))
    np.testing.assert_array_equal(np.asarray(batched[1][1]), np.asarray(argmax_pool(-x)[1]))
    jitted = numbax.jit(argmax_pool)(x)
    np.testing.assert_array_equal(np.asarray(jitted[1]), np.asarray(index))


def test_shape_tuple_matches_jax():
    for i, (ls, rs, strides) in enumerate((((2, 9, 8, 3), (3, 2, 3, 5), (2, 3)),
                                           ((2, 3, 9, 8), (5, 3, 3, 2), (1, 2)),
                                           ((4, 7, 2), (3, 2, 6), (3,)))):
        got = lax.reduce_window_shape_tuple(ls, (1, *rs[:-2], 1), (1, *strides, 1),
                                            ((0, 0),) * len(ls), (1, 2, *(1,) * (len(ls) - 2)))
        assert got == tuple(REF[f"shape/{i}/window"])


def test_select_and_scatter_add_is_the_transpose_of_gather():
    x = RNG.normal(size=(4, 7))
    params = dict(window_dimensions=(2, 3), window_strides=(2, 2), padding=((1, 0), (1, 1)))
    src_shape = lax.reduce_window_shape_tuple(x.shape, (2, 3), (2, 2), params["padding"])
    s, t = RNG.normal(size=src_shape), RNG.normal(size=x.shape)
    scattered = lax.select_and_scatter_add_p.bind(s, x, select_prim="ge", **params)
    gathered = lax.select_and_gather_add_p.bind(t, x, select_prim="ge", base_dilation=(1, 1),
                                                window_dilation=(1, 1), **params)
    np.testing.assert_allclose(np.sum(np.asarray(scattered) * t),
                               np.sum(s * np.asarray(gathered)), rtol=1e-12)
    # gather picks the tangent at each window's maximum
    padded = np.pad(x, params["padding"], constant_values=-np.inf)
    tp = np.pad(t, params["padding"])
    win = np.lib.stride_tricks.sliding_window_view(padded, (2, 3))[::2, ::2]
    twin = np.lib.stride_tricks.sliding_window_view(tp, (2, 3))[::2, ::2]
    pick = win.reshape(*win.shape[:2], -1).argmax(-1)
    want = np.take_along_axis(twin.reshape(*twin.shape[:2], -1), pick[..., None], -1)[..., 0]
    np.testing.assert_array_equal(np.asarray(gathered), want)


def loop_select_and_scatter(x, source, init, select, scatter, window, strides, padding):
    """XLA's SelectAndScatter element by element: each window keeps its current element while
    select(current, candidate) holds; padding is skipped (numbax fills it with the identity,
    which finite data always beat)."""
    out = np.full(x.shape, init)
    for o in itertools.product(*map(range, source.shape)):
        best = None
        for k in itertools.product(*map(range, window)):
            idx = tuple(i * s + j - lo for i, s, j, (lo, _) in zip(o, strides, k, padding))
            if not all(0 <= v < n for v, n in zip(idx, x.shape)):
                continue
            if best is None or not select(x[best], x[idx]):
                best = idx
        if best is not None:
            out[best] = scatter(out[best], source[o])
    return out


@pytest.mark.parametrize("select", ["ge", "gt", "le", "lt"])
@pytest.mark.parametrize("scatter", ["add", "mul", "max", "min"])
def test_select_and_scatter_matches_loop(select, scatter):
    x = np.round(RNG.normal(size=(5, 6)))  # ties, so first/last selection matters
    params = dict(window_dimensions=(2, 3), window_strides=(2, 2), padding=((1, 0), (1, 1)))
    shape = lax.reduce_window_shape_tuple(x.shape, (2, 3), (2, 2), params["padding"])
    source = RNG.normal(size=shape)
    got = lax.select_and_scatter_p.bind(x, source, np.float64(0.5), select_prim=select,
                                        scatter_prim=scatter, **params)
    ops = {"ge": np.greater_equal, "gt": np.greater, "le": np.less_equal, "lt": np.less}
    combine = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
    want = loop_select_and_scatter(x, source, 0.5, ops[select], combine[scatter], (2, 3),
                                   (2, 2), params["padding"])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13)
    if scatter == "add":
        check_grads(lambda s, init: lax.select_and_scatter_p.bind(
            x, s, init, select_prim=select, scatter_prim="add", **params),
            (source, np.float64(0.5)), order=2)


def test_integer_and_bool_windows():
    x = RNG.integers(-9, 9, size=(5, 4))
    got = lax.reduce_window(x, np.iinfo(np.int64).min, lax.max, (2, 2), (1, 1), "VALID")
    want = np.lib.stride_tricks.sliding_window_view(x, (2, 2)).max((-1, -2))
    np.testing.assert_array_equal(np.asarray(got), want)
    assert got.dtype == x.dtype
    got = lax.reduce_window(x, 0, lax.add, (2, 2), (1, 1), "VALID")
    np.testing.assert_array_equal(np.asarray(got), np.lib.stride_tricks.sliding_window_view(
        x, (2, 2)).sum((-1, -2)))


def test_bad_inputs():
    x = np.ones((4, 4))
    with pytest.raises(NumbaxTypeError, match="window_dimensions"):
        lax.reduce_window(x, 0.0, lax.add, (2,))
    with pytest.raises(NumbaxValueError, match="window_strides"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (0, 1))
    with pytest.raises(RuntimeError, match="padding"):  # JAX's class here
        lax.reduce_window(x, 0.0, lax.add, (2, 2), None, "FULL")
    with pytest.raises(NumbaxValueError, match="crops"):
        lax.reduce_window(x, 0.0, lax.add, (1, 1), None, ((-3, -3), (0, 0)))
    with pytest.raises(NumbaxValueError, match="structure"):
        lax.reduce_window((x, x), 0.0, lax.add, (2, 2))
    with pytest.raises(NumbaxTypeError, match="init_value"):
        lax.reduce_window(x, np.zeros(2), lambda a, b: a + b, (2, 2))
    with pytest.raises(NumbaxTypeError, match="source has shape"):
        lax.select_and_scatter_add_p.bind(np.ones((3, 3)), x, select_prim="ge",
                                          window_dimensions=(2, 2), window_strides=(2, 2),
                                          padding=((0, 0), (0, 0)))
    with pytest.raises(NumbaxValueError, match="select_prim"):
        lax.select_and_scatter_p.bind(x, np.ones((2, 2)), 0.0, select_prim="eq",
                                      scatter_prim="add", window_dimensions=(2, 2),
                                      window_strides=(2, 2), padding=((0, 0), (0, 0)))
    with pytest.raises(NotImplementedError, match="scatter_prim"):
        numbax.grad(lambda s: jnp.sum(lax.select_and_scatter_p.bind(
            x, s, 1.0, select_prim="ge", scatter_prim="mul", window_dimensions=(2, 2),
            window_strides=(2, 2), padding=((0, 0), (0, 0)))))(np.ones((2, 2)))
    with pytest.raises(NotImplementedError, match="window_dilation"):
        numbax.grad(lambda v: jnp.sum(lax.reduce_window(v, -np.inf, lax.max, (2, 2), None,
                                                        "VALID", None, (2, 1))))(x)


@pytest.mark.parametrize("module", [windowed_reductions, reduce_window_module],
                         ids=lambda m: m.__name__)
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("shape,window", [((4, 9, 7, 3), (1, 2, 2, 1)),
                                          ((2, 3, 8, 8), (1, 1, 2, 2)), ((7,), (3,))])
def test_average_pooling_gradient_repeats_each_cotangent_over_its_window(shape, window):
    """Windows that tile the operand (strides equal to the windows, no padding): the window
    sum's transpose is each cotangent repeated over its window, zeros past the last whole
    window, as broadcast and reshape index maps (no windowed sum), eager and jitted."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape)
    ct = rng.standard_normal(tuple(n // w for n, w in zip(shape, window)))

    def pool(x):
        return lax.reduce_window(x, 0.0, lax.add, window, window, "VALID")

    want = np.zeros(shape)
    for index in np.ndindex(*ct.shape):
        want[tuple(slice(i * w, (i + 1) * w) for i, w in zip(index, window))] += ct[index]
    back = numbax.jit(lambda x, ct: numbax.vjp(pool, x)[1](ct)[0])
    np.testing.assert_array_equal(numbax.vjp(pool, x)[1](ct)[0], want)
    np.testing.assert_array_equal(back(x, ct), want)
    jaxpr = str(numbax.make_jaxpr(lambda x, ct: numbax.vjp(pool, x)[1](ct))(x, ct))
    assert jaxpr.count("reduce_window_sum") == 1  # the forward's only
