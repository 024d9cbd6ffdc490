"""jit of control flow (compiler/cpu/control_flow.py) and of call-like primitives (inline.py)."""
import re

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler import inline, registry


def _newton(a):
    def cond(c):
        x, i = c
        return (jnp.abs(x * x - a) > 1e-12) & (i < 100)

    def body(c):
        x, i = c
        return (x - (x * x - a) / (2.0 * x), i + 1)

    return lax.while_loop(cond, body, (a + 1.0, 0))


def _switch(i, x):
    return lax.switch(i, [lambda v: {"a": v["a"] + 1.0, "b": v["b"]},
                          lambda v: {"a": v["a"] * 2.0, "b": -v["b"]},
                          lambda v: {"a": jnp.sin(v["a"]), "b": v["b"] * 3}], x)


def _rnn(params, xs):
    w, u = params

    def cell(h, x):
        h = jnp.tanh(w @ h + u @ x)
        return h, jnp.sum(h)

    h, ys = lax.scan(cell, jnp.zeros(3), xs)
    return jnp.sum(h) + jnp.sum(ys * ys)


_jnewton = numbax.jit(_newton)
_jswitch = numbax.jit(_switch)
_jrnn = numbax.jit(_rnn)
_RNG = np.random.default_rng(0)
_W = (_RNG.normal(size=(3, 3)) * 0.5, _RNG.normal(size=(3, 2)) * 0.5)
_XS = _RNG.normal(size=(5, 2))


def test_cond_switch_traced_index_pytrees():
    x = {"a": np.arange(3.0), "b": np.int64(4)}
    for i in (-2, 0, 1, 2, 7):
        got, want = _jswitch(i, x), _switch(i, x)
        np.testing.assert_allclose(got["a"], want["a"])
        assert int(got["b"]) == int(want["b"])
    pred = numbax.jit(lambda p, x: lax.cond(p, lambda v: v * 2.0, lambda v: v - 1.0, x))
    np.testing.assert_allclose(pred(True, np.ones(2)), [2.0, 2.0])
    np.testing.assert_allclose(pred(False, np.ones(2)), [0.0, 0.0])


def test_while_newton_sqrt():
    for a in (2.0, 9.0, 0.5):
        x, n = _jnewton(a)
        np.testing.assert_allclose(x, np.sqrt(a), rtol=1e-12)
        assert int(n) == int(_newton(a)[1])
    src = _jnewton.lower(2.0).as_text()
    assert "while " in src and "@njit" in src


def test_fori_loop_static_and_dynamic():
    def body(i, c):
        return c * 2.0 + i

    static = numbax.jit(lambda x: lax.fori_loop(0, 5, body, x))
    dynamic = numbax.jit(lambda n, x: lax.fori_loop(0, n, body, x))
    want = 1.0
    for i in range(5):
        want = want * 2.0 + i
    np.testing.assert_allclose(static(1.0), want)
    np.testing.assert_allclose(dynamic(5, 1.0), want)
    np.testing.assert_allclose(dynamic(0, 1.0), 1.0)


def test_scan_cumsum_and_reverse():
    xs = np.arange(1.0, 7.0).reshape(3, 2)

    def f(xs, reverse):
        return lax.scan(lambda c, x: (c + x, c * x), np.zeros(2), xs, reverse=reverse)

    for reverse in (False, True):
        jf = numbax.jit(f, static_argnums=1)
        (c, ys), (c0, ys0) = jf(xs, reverse), f(xs, reverse)
        np.testing.assert_allclose(c, xs.sum(0))
        np.testing.assert_allclose(c, c0)
        np.testing.assert_allclose(ys, ys0)
    acc, ref = 0.0, []
    for x in xs[::-1, 0]:
        ref.append(acc * x)
        acc += x
    np.testing.assert_allclose(numbax.jit(f, static_argnums=1)(xs, True)[1][::-1, 0], ref)


def test_scan_rnn_and_grad():
    np.testing.assert_allclose(_jrnn(_W, _XS), _rnn(_W, _XS), rtol=1e-12)
    g = numbax.jit(numbax.grad(_rnn))(_W, _XS)
    g0 = numbax.grad(_rnn)(_W, _XS)
    for a, b in zip(g, g0):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    eps, wp, wm = 1e-6, _W[0].copy(), _W[0].copy()
    wp[1, 2] += eps
    wm[1, 2] -= eps
    fd = (_rnn((wp, _W[1]), _XS) - _rnn((wm, _W[1]), _XS)) / (2 * eps)
    np.testing.assert_allclose(g[0][1, 2], fd, rtol=1e-5)


def test_lax_map():
    f = numbax.jit(lambda xs: lax.map(lambda x: jnp.sum(x * x), xs))
    xs = np.arange(12.0).reshape(4, 3)
    np.testing.assert_allclose(f(xs), (xs * xs).sum(1))


def test_vmap_while_per_example_trip_counts_in_prange():
    a = np.linspace(0.5, 50.0, 2000)
    f = numbax.jit(numbax.vmap(_newton))
    x, n = f(a)
    np.testing.assert_allclose(x, np.sqrt(a), rtol=1e-12)
    assert len(set(np.asarray(n).tolist())) > 1
    np.testing.assert_array_equal(n, [int(_newton(v)[1]) for v in a[:3]] + list(n)[3:])
    src = f.lower(a).as_text()
    assert "prange" in src and "while " in src


def test_nested_scan_of_cond_and_while_in_vmap():
    def f(xs):
        def step(c, x):
            y = lax.cond(x > 0, lambda v: v * 2.0, lambda v: -v, x)
            return c + y, y

        return lax.scan(step, 0.0, xs)

    xs = np.array([1.0, -2.0, 3.0, -4.0])
    (c, ys), (c0, ys0) = numbax.jit(f)(xs), f(xs)
    np.testing.assert_allclose(ys, [2.0, 2.0, 6.0, 4.0])
    np.testing.assert_allclose(c, c0)
    np.testing.assert_allclose(ys, ys0)

    def g(a):
        return numbax.vmap(lambda v: _newton(v)[0])(a) * 2.0

    a = np.array([4.0, 16.0, 2.0])
    np.testing.assert_allclose(numbax.jit(g)(a), 2 * np.sqrt(a), rtol=1e-12)


def test_fallback_runs_unsupported_body():
    def f(x):  # cumsum has no nopython rule: the while falls back to a Python loop
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.cumsum(c[1])),
                              (0, x))[1]

    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(numbax.jit(f)(x), f(x))
    assert "while " not in "".join(numbax.jit(f).lower(x).as_text().split("def driver")[1:])


@numbax.custom_jvp
def _softplus(x):
    return jnp.log1p(jnp.exp(x))


@_softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _softplus(x), t * (1.0 / (1.0 + jnp.exp(-x)))


@numbax.custom_vjp
def _clip_grad(x):
    return x * 3.0


def _clip_fwd(x):
    return x * 3.0, None


def _clip_bwd(_, g):
    return (jnp.clip(g, -1.0, 1.0),)


_clip_grad.defvjp(_clip_fwd, _clip_bwd)


def test_custom_jvp_vjp_checkpoint_under_jit():
    x = np.array([-1.0, 0.5, 2.0])
    np.testing.assert_allclose(numbax.jit(_softplus)(x), np.log1p(np.exp(x)))
    g = numbax.jit(numbax.grad(lambda v: jnp.sum(_softplus(v))))(x)
    np.testing.assert_allclose(g, 1 / (1 + np.exp(-x)))
    np.testing.assert_allclose(numbax.jit(_clip_grad)(x), 3 * x)
    g = numbax.jit(numbax.grad(lambda v: jnp.sum(_clip_grad(v) * 5.0)))(x)
    np.testing.assert_allclose(g, [1.0, 1.0, 1.0])
    ck = numbax.checkpoint(lambda v: jnp.sin(jnp.sin(v)))
    np.testing.assert_allclose(numbax.jit(ck)(x), np.sin(np.sin(x)))
    g = numbax.jit(numbax.grad(lambda v: jnp.sum(ck(v))))(x)
    np.testing.assert_allclose(g, np.cos(np.sin(x)) * np.cos(x))


def test_inline_removes_call_primitives():
    jaxpr = numbax.make_jaxpr(lambda v: _softplus(v) + numbax.checkpoint(jnp.sin)(v))(1.0)
    prims = {e.primitive for e in inline.inline_calls(jaxpr.jaxpr).eqns}
    assert prims and not any(registry.inline_param(p) for p in prims)


def test_control_flow_compiles_to_one_function_and_bad_input():
    """A while loop whose body holds a dot_general, tanh and select_n is one @njit function."""
    def f(w, x):
        def body(c):
            i, v = c
            return i + 1, jnp.where(v > 0, jnp.tanh(w @ v), v)
        return lax.while_loop(lambda c: c[0] < 3, body, (0, x))[1]

    w, x = np.eye(3) * 0.5, np.array([1.0, -2.0, 3.0])
    text = numbax.jit(f).lower(w, x).as_text()
    assert "while True:" in text and "k0_flow(" in text and "h0" not in text.split("def driver")[1]
    want = x
    for _ in range(3):
        want = np.where(want > 0, np.tanh(w @ want), want)
    np.testing.assert_allclose(numbax.jit(f)(w, x), want)
    with pytest.raises(TypeError, match="while_loop"):
        numbax.jit(lambda x: lax.while_loop(lambda c: c, lambda c: c + 1.0, x))(1.0)


def _kernel_lines(text: str) -> list[str]:
    """The generated source's code lines (the jaxpr the header prints is comments)."""
    return [line for line in text.splitlines() if not line.lstrip().startswith("#")]


def test_a_while_condition_is_rendered_once_and_zero_steps_run_none():
    """The condition's loop and reduction appear once in the kernel (at the top of each step),
    and a condition false from the start runs no step."""
    def f(x, tol):
        def cond(c):
            i, v = c
            return jnp.any(jnp.abs(v) > tol) & (i < 1000)

        def body(c):
            i, v = c
            return i + 1, v * 0.5 - 0.01 * jnp.sign(v)
        return lax.while_loop(cond, body, (0, x))

    x = np.linspace(-3.0, 3.0, 40)
    code = _kernel_lines(numbax.jit(f).lower(x, 1e-3).as_text())
    assert sum("= reduce_or" in line for line in code) == 1
    assert sum(line.strip() == "while True:" for line in code) == 1
    for tol in (1e-3, 10.0):
        i, v = numbax.jit(f)(x, tol)
        want_i, want = 0, x
        while np.any(np.abs(want) > tol) and want_i < 1000:
            want_i, want = want_i + 1, want * 0.5 - 0.01 * np.sign(want)
        assert int(i) == want_i
        np.testing.assert_allclose(np.asarray(v), want, rtol=1e-14)
    assert int(numbax.jit(f)(x, 10.0)[0]) == 0


def test_a_nest_of_one_trip_is_no_loop():
    """Slices of one element inside a loop body (a key's words) are straight-line code."""
    def f(xs):
        def step(c, row):
            first = lax.slice(row, (0,), (1,)) * 2.0
            return c + first.reshape(()) + row[1:].sum(), first
        return lax.scan(step, 0.0, xs)

    xs = np.arange(12.0).reshape(4, 3)
    code = _kernel_lines(numbax.jit(f).lower(xs).as_text())
    assert not any("range(1)" in line for line in code)
    total, firsts = numbax.jit(f)(xs)
    np.testing.assert_allclose(float(total), (xs[:, 0] * 2 + xs[:, 1:].sum(1)).sum())
    np.testing.assert_allclose(np.asarray(firsts), xs[:, :1] * 2)


def _padded_series(k, x, n):
    """A cond whose branches are runs of elementwise work (iota, broadcasts, mixed dtypes, a
    select on a scalar predicate, values read only inside the run), as expm's Pade branches."""
    def low(x):
        eye = (lax.broadcasted_iota(jnp.int32, x.shape, 0)
               == lax.broadcasted_iota(jnp.int32, x.shape, 1)).astype(x.dtype)
        sq = x @ x
        return x @ (60.0 * eye + sq), 120.0 * eye + 12.0 * sq

    def high(x):
        cols = jnp.broadcast_to(jnp.arange(x.shape[1], dtype=x.dtype), x.shape)
        big = jnp.sum(x) > 0
        y = jnp.where(big, jnp.cos(x) * cols, x - cols)
        return y * n + 1.0, (y.astype(jnp.float32) * 2).astype(x.dtype) - n

    return lax.switch(k, [low, high], x)


def _padded_series_numpy(k, x, n):
    if k <= 0:
        eye, sq = np.eye(len(x)), x @ x
        return x @ (60.0 * eye + sq), 120.0 * eye + 12.0 * sq
    cols = np.broadcast_to(np.arange(x.shape[1], dtype=x.dtype), x.shape)
    y = np.cos(x) * cols if x.sum() > 0 else x - cols
    return y * n + 1.0, (y.astype(np.float32) * 2).astype(x.dtype) - n


def test_elementwise_runs_in_control_flow_are_loops_with_numpys_results():
    """Runs of elementwise equations of one shape inside a compiled cond become one loop nest
    each (Numba compiled expm's Pade cond in 60-100 s as one array expression per equation,
    seconds as loops); results match NumPy's for every branch, sign and integer operand."""
    rng = np.random.default_rng(5)
    jitted = numbax.jit(_padded_series)
    text = jitted.lower(0, np.ones((4, 4)), 3).as_text()
    flow = text.split("def driver")[0]
    assert "np.where(np.full" not in flow and "np.broadcast_to" not in flow
    assert "for " in flow and "np.empty((4, 4)" in flow
    for k in (0, 1, 5):
        for x in (rng.standard_normal((4, 4)), -np.abs(rng.standard_normal((3, 3)))):
            got = jitted(k, x, 3)
            for g, w in zip(got, _padded_series_numpy(k, x, 3), strict=True):
                np.testing.assert_allclose(np.asarray(g), w, rtol=1e-13, atol=1e-13)


def test_scan_carries_written_by_elementwise_runs():
    """A scan whose carry and ys come out of loop nests (kept arrays) and a fori_loop whose
    body mixes scalar and array work between runs, against Python loops."""
    def f(h, xs):
        def cell(h, x):
            g = jnp.tanh(h * x + 0.5)
            return g * 2.0 - h, jnp.sum(g) + x[0]
        return lax.scan(cell, h, xs)

    h0, xs = np.linspace(-1.0, 1.0, 5), np.random.default_rng(6).standard_normal((7, 5))
    carry, ys = numbax.jit(f)(h0, xs)
    h, want_ys = h0, []
    for x in xs:
        g = np.tanh(h * x + 0.5)
        h, y = g * 2.0 - h, g.sum() + x[0]
        want_ys.append(y)
    np.testing.assert_allclose(np.asarray(carry), h, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(ys), want_ys, rtol=1e-13)

    def g(x):
        return lax.fori_loop(0, 4, lambda i, c: c * (i + 1.0) - jnp.sin(c) / (i + 2.0), x)

    want = np.array([0.3, -0.7, 1.1])
    x = want.copy()
    for i in range(4):
        want = want * (i + 1.0) - np.sin(want) / (i + 2.0)
    np.testing.assert_allclose(np.asarray(numbax.jit(g)(x)), want, rtol=1e-13)


_DOT_LAYOUTS = {  # operand shapes, dimension numbers, the same product as an einsum
    "mk,kn": ((3, 4), (4, 5), (((1,), (0,)), ((), ())), "mk,kn->mn"),
    "km,kn": ((4, 3), (4, 5), (((0,), (0,)), ((), ())), "km,kn->mn"),
    "mk,nk": ((3, 4), (5, 4), (((1,), (1,)), ((), ())), "mk,nk->mn"),
    "k,kn": ((4,), (4, 5), (((0,), (0,)), ((), ())), "k,kn->n"),
    "mk,k": ((3, 4), (4,), (((1,), (0,)), ((), ())), "mk,k->m"),
    "k,k": ((4,), (4,), (((0,), (0,)), ((), ())), "k,k->"),
    "abk,kn": ((2, 3, 4), (4, 5), (((2,), (0,)), ((), ())), "abk,kn->abn"),
    "pqm,qpn": ((2, 3, 4), (3, 2, 5), (((0, 1), (1, 0)), ((), ())), "pqm,qpn->mn"),
    "kab,nk": ((4, 2, 3), (5, 4), (((0,), (1,)), ((), ())), "kab,nk->abn"),
}


@pytest.mark.parametrize("layout", _DOT_LAYOUTS)
def test_products_in_compiled_control_flow_match_einsum(layout):
    """dot_general's array form inside a compiled cond (transposes only where needed)."""
    xs, ys, dims, spec = _DOT_LAYOUTS[layout]
    rng = np.random.default_rng(len(layout))
    x, y = rng.standard_normal(xs), rng.standard_normal(ys)
    f = numbax.jit(lambda p, a, b: lax.cond(
        p, lambda u, v: lax.dot_general(u, v, dims) * 2.0,
        lambda u, v: lax.dot_general(u, v, dims), a, b))
    assert "k1_flow" in f.lower(True, x, y).as_text().split("def driver")[1]
    for p, scale in ((True, 2.0), (False, 1.0)):
        np.testing.assert_allclose(np.asarray(f(p, x, y)), scale * np.einsum(spec, x, y),
                                   rtol=1e-12, atol=1e-12)


# issue 21 item 10: under jit(grad) the branches of a cond returned 0-d arrays (array forms,
# 0-d broadcasts of zeros) beside scalars, which Numba's typing refused to unify.
def _cond(x):
    return lax.cond(jnp.sum(x) > 0, lambda y: jnp.sin(y) * y, lambda y: y * 2.0, x)


def _switch3(x):
    i = jnp.clip(jnp.sum(x).astype(jnp.int32), 0, 2)
    return lax.switch(i, [lambda y: y * 3.0, lambda y: jnp.exp(y) - y, lambda y: y ** 2], x)


def _scan(x):
    return lax.scan(lambda c, v: (c * jnp.cos(v) + v, c * v), x, jnp.linspace(0.1, 0.5, 4))


def _fori(x):
    return lax.fori_loop(0, 3, lambda i, c: lax.cond(i % 2 == 0, lambda z: z * 1.5,
                                                     lambda z: jnp.sin(z), c), x)


def _while(x):  # forward mode only (JAX's rule)
    return lax.while_loop(lambda c: c[1] < 3, lambda c: (jnp.sin(c[0]) + c[0], c[1] + 1),
                          (x, 0))[0]


_LOOPS = {"cond": _cond, "switch": _switch3, "scan": _scan, "fori": _fori}


def _total(fn):
    return lambda x: sum(jnp.sum(leaf) for leaf in numbax.tree_util.tree_leaves(fn(x)))


@pytest.mark.parametrize("shape", [(), (3,)], ids=["0d", "nd"])
@pytest.mark.parametrize("name", _LOOPS)
def test_jit_grad_of_control_flow(name, shape):
    f = _total(_LOOPS[name])
    g = numbax.grad(f)
    for x0 in (0.7, -0.4, 1.3):
        x = np.full(shape, x0) + np.arange(np.prod(shape, dtype=int)).reshape(shape) * 0.1
        np.testing.assert_allclose(np.asarray(numbax.jit(g)(x)), np.asarray(g(x)), rtol=1e-12)
        eps = 1e-6
        fd = np.zeros(shape)
        for k in np.ndindex(shape):
            d = np.zeros(shape)
            d[k] = eps
            fd[k] = (float(f(x + d)) - float(f(x - d))) / (2 * eps)
        np.testing.assert_allclose(np.asarray(g(x)), fd, rtol=1e-6, atol=1e-8)
    xs = np.linspace(-1.0, 1.5, 4 * int(np.prod(shape))).reshape((4, *shape))
    got = np.asarray(numbax.jit(numbax.vmap(g))(xs))
    np.testing.assert_allclose(got, np.stack([np.asarray(g(x)) for x in xs]), rtol=1e-12)


@pytest.mark.parametrize("shape", [(), (3,)], ids=["0d", "nd"])
def test_jit_jvp_of_while(shape):
    x, t = np.full(shape, 0.6), np.full(shape, 1.0)
    jf = numbax.jit(lambda a, b: numbax.jvp(_while, (a,), (b,)))
    want = numbax.jvp(_while, (x,), (t,))
    for got, w in zip(jf(x, t), want, strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(w), rtol=1e-12)
    xs = np.linspace(-1.0, 1.0, 4 * int(np.prod(shape))).reshape((4, *shape))
    vj = numbax.jit(numbax.vmap(lambda a: numbax.jvp(_while, (a,), (jnp.ones_like(a),))[1]))
    np.testing.assert_allclose(np.asarray(vj(xs)), np.stack([
        np.asarray(numbax.jvp(_while, (a,), (np.ones(shape),))[1]) for a in xs]), rtol=1e-12)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_sums_over_one_axis_in_loop_bodies_are_loops_with_nbodys_bits(axis):
    """A float sum over one axis inside a compiled loop is a loop nest (Numba's np.sum(axis=)
    ran 4.7x slower), adding in axis order in the array's dtype: the bits of summing the
    slices one after another, checked against numpy doing exactly that."""
    rng = np.random.default_rng(axis)
    x = (rng.standard_normal((7, 6, 5)) * 1e3).astype(np.float32)
    f = numbax.jit(lambda x: lax.fori_loop(
        0, 2, lambda i, c: c * 0.5 + jnp.sum(c, axis, keepdims=True), x))
    kernel = f.lower(x).as_text().split("def driver")[0]
    assert "np.sum(" not in kernel
    want = x
    for _ in range(2):
        total = np.zeros(np.delete(want.shape, axis), np.float32)
        for k in range(want.shape[axis]):
            total = total + np.take(want, k, axis)
        want = want * np.float32(0.5) + np.expand_dims(total, axis)
    np.testing.assert_array_equal(np.asarray(f(x)), want)


_REDUCTIONS = {  # numbax reduction, numpy's, an input dtype
    "max": (jnp.max, np.max, np.float32), "min": (jnp.min, np.min, np.float64),
    "prod": (jnp.prod, np.prod, np.float64), "int sum": (jnp.sum, np.sum, np.int32),
    "all": (jnp.all, np.all, np.bool_), "any": (jnp.any, np.any, np.bool_)}


@pytest.mark.parametrize("name", sorted(_REDUCTIONS))
@pytest.mark.parametrize("axes", [(1,), (0, 2)])
def test_reductions_over_some_axes_compile_inside_loops(name, axes):
    """max/min/prod/and/or (and integer sums) over some axes are loop nests inside compiled
    control flow; before, any of them sent the whole loop to the host (a log_softmax in a
    scanned training step)."""
    ours, theirs, dtype = _REDUCTIONS[name]
    rng = np.random.default_rng(len(axes))
    x = rng.standard_normal((4, 5, 6)) * (1.1 if name == "prod" else 3)  # prod: no overflow
    x = x > 0 if dtype == np.bool_ else x.astype(dtype)

    def body(i, c):  # the reduction of the carry, broadcast back and mixed in
        r = ours(c, axes, keepdims=True).astype(c.dtype)
        return c ^ r if dtype == np.bool_ else c - r // 2 if dtype == np.int32 else c * 0.9 + r

    f = numbax.jit(lambda x: lax.fori_loop(0, 3, body, x))
    text = f.lower(x).as_text()
    assert "h0(" not in text.split("def driver")[1]  # one compiled loop, no host loop
    want = x
    for _ in range(3):
        r = theirs(want, axes, keepdims=True).astype(want.dtype)
        want = want ^ r if dtype == np.bool_ else want - r // 2 if dtype == np.int32 \
            else want * dtype(0.9) + r
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-6)


def test_max_over_an_axis_in_a_loop_propagates_nan_as_lax_max():
    x = np.arange(12.0).reshape(3, 4)
    x[1, 2] = np.nan
    f = numbax.jit(lambda x: lax.fori_loop(0, 1, lambda i, c: c - jnp.max(c, 1, keepdims=True),
                                           x))
    got = np.asarray(f(x))
    assert np.isnan(got[1]).all() and not np.isnan(got[[0, 2]]).any()
    np.testing.assert_array_equal(got[[0, 2]], x[[0, 2]] - x[[0, 2]].max(1, keepdims=True))


def test_a_column_reduction_in_a_loop_runs_over_rows_in_memory_order():
    """A reduction whose last axis is kept (a 10-state HMM's max and sum over axis 0) combines
    each row into the outputs in memory order, the outputs starting at the identity; a NaN
    still wins the max, -inf stays the identity, and the sum adds rows in order."""
    x = np.array([[1.0, -np.inf, 3.0], [np.nan, -np.inf, -1.0], [2.0, -np.inf, 5.0]],
                 np.float32)
    f = numbax.jit(lambda x: lax.fori_loop(
        0, 2, lambda i, c: (c[0] + jnp.max(x * (i + 1), 0), c[1] + jnp.sum(x * (i + 1), 0)),
        (jnp.zeros(3, jnp.float32), jnp.zeros(3, jnp.float32))))
    kernel = f.lower(x).as_text().split("def driver")[0]
    assert re.search(r"^ +(v\d+)\[v\d+\] = sc\.fmax\(\1\[v\d+\], ", kernel, re.M), kernel
    mx, total = (np.asarray(r) for r in f(x))
    np.testing.assert_array_equal(mx, [np.nan, -np.inf, 15.0])
    want = np.zeros(3, np.float32)
    for i in range(2):
        s = np.zeros(3, np.float32)
        for row in x * np.float32(i + 1):
            s = s + row
        want = want + s
    np.testing.assert_array_equal(total, want)


def test_short_loops_of_transcendentals_in_bodies_hide_their_trip_count():
    """An HMM's step: exp over a 10 x 10 nest and log over 10 values. Their innermost loops'
    bounds go through sc.opaque (LLVM unrolled them into scalar code); the values are the
    forward algorithm's, by a numpy loop."""
    rng = np.random.default_rng(4)
    log_a = np.log(rng.dirichlet(np.ones(10), 10))
    log_b = rng.standard_normal((30, 10))

    def step(la, lb):
        la = jax_logsumexp(la[:, None] + log_a, 0) + lb
        return la, la.max()

    def jax_logsumexp(x, axis):
        m = jnp.max(x, axis)
        return jnp.log(jnp.sum(jnp.exp(x - m), axis)) + m

    f = numbax.jit(lambda lb: lax.scan(step, jnp.zeros(10), lb))
    kernel = f.lower(log_b).as_text().split("def driver")[0]
    assert re.search(r"for v\d+ in range\(sc\.opaque\(10\)\):", kernel), kernel
    la, want = np.zeros(10), []
    for lb in log_b:
        x = la[:, None] + log_a
        m = x.max(0)
        la = np.log(np.exp(x - m).sum(0)) + m + lb
        want.append(la.max())
    got_la, got = f(log_b)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got_la), la, rtol=1e-12)


def test_shifts_and_random_bits_compile_inside_loops():
    """Shifts join loop nests in compiled control flow (a random key split in a training loop's
    body); before, any shift on an array sent the whole loop to the host. Amounts past the
    width give XLA's results (0, or the sign for an arithmetic right shift)."""
    def draws(key):
        def body(i, carry):
            key, total = carry
            key, sub = numbax.random.split(key)
            return key, total + numbax.random.uniform(sub, (3, 4), jnp.float32)
        return lax.fori_loop(0, 4, body, (key, jnp.zeros((3, 4), jnp.float32)))

    key = numbax.random.PRNGKey(7)
    f = numbax.jit(draws)
    assert "h0(" not in f.lower(key).as_text().split("def driver")[1]
    with numbax.disable_jit():  # eager: JAX's threefry bits, op by op
        want = draws(key)
    for got, expected in zip(f(key), want, strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))

    x = np.array([1, -8, 2 ** 30, -1, 5, 7], np.int32)
    amounts = np.array([0, 3, 1, 31, 32, 40], np.int32)

    def shifts(x, s):
        def body(i, c):
            return (lax.shift_left(c[0], s), lax.shift_right_arithmetic(c[1], s),
                    lax.shift_right_logical(c[2], s))
        return lax.fori_loop(0, 1, body, (x, x, x))

    g = numbax.jit(shifts)
    assert "h0(" not in g.lower(x, amounts).as_text().split("def driver")[1]
    u = x.view(np.uint32).astype(np.int64)
    left = [(int(v) << int(k)) & 0xFFFFFFFF if k < 32 else 0 for v, k in zip(u, amounts)]
    arith = [int(v) >> min(int(k), 31) for v, k in zip(x, amounts)]
    logical = [int(v) >> int(k) if k < 32 else 0 for v, k in zip(u, amounts)]
    got = [np.asarray(a) for a in g(x, amounts)]
    np.testing.assert_array_equal(got[0], np.array(left, np.uint32).view(np.int32))
    np.testing.assert_array_equal(got[1], np.array(arith, np.int32))
    np.testing.assert_array_equal(got[2], np.array(logical, np.uint32).view(np.int32))
