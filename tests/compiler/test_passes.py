"""Simplification passes: each rewrite checked on a jaxpr and against eager evaluation."""
import numpy as np

import numbax
import numbax.numpy as jnp
from numbax._src import core
from numbax._src.compiler import passes

X = np.linspace(-2, 2, 6).reshape(2, 3)


def _jaxpr(f, *args):
    return numbax.make_jaxpr(f)(*args).jaxpr


def _prims(jaxpr):
    return [e.primitive.name for e in jaxpr.eqns]


def _same_values(f, jaxpr, *args):
    want = f(*args)
    got = core.eval_jaxpr(jaxpr, [], *args)
    for g, w in zip(got, numbax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-14)


def test_identities_removed():
    f = lambda x: ((x * 1.0 + -0.0) - 0.0) / 1.0  # noqa: E731
    j = passes.simplify(_jaxpr(f, X))
    assert _prims(j) == []
    _same_values(f, j, X)


def test_identities_that_are_not_exact_are_kept():
    """Found by the fuzzer: -0.0 + 0.0 is +0.0 and -0.0 - (-0.0) too, and complex x * 1 or
    x / 1 turn an inf or nan part into nan+nanj (numpy's full formulas), so those stay."""
    zero = np.array([-0.0, 1.0])
    for f in (lambda x: x + 0.0, lambda x: 0.0 + x, lambda x: x - (-0.0)):
        j = passes.simplify(_jaxpr(f, zero))
        assert _prims(j) == ["sub" if "sub" in _prims(_jaxpr(f, zero)) else "add"]
        got = np.asarray(numbax.jit(f)(zero))
        np.testing.assert_array_equal(np.signbit(got), np.signbit(np.asarray(f(zero))))
    z = np.array([complex(np.nan, -2.0), complex(np.inf, 1.0)], np.complex64)
    for f in (lambda x: x * np.complex64(1), lambda x: x / np.complex64(1)):
        assert len(_prims(passes.simplify(_jaxpr(f, z)))) == 1
        want = f(numbax.numpy.asarray(z))
        np.testing.assert_array_equal(np.asarray(numbax.jit(f)(z)), np.asarray(want))


def test_cse_merges_repeated_work():
    f = lambda x: jnp.sin(x) * jnp.sin(x) + jnp.sin(x)  # noqa: E731
    j = passes.simplify(_jaxpr(f, X))
    assert _prims(j).count("sin") == 1
    _same_values(f, j, X)


def test_dce_drops_unused():
    def f(x):
        jnp.exp(x)  # unused
        return x + 2.0

    j = passes.simplify(_jaxpr(f, X))
    assert "exp" not in _prims(j)


def test_dce_drops_a_scans_unused_stacked_outputs_and_their_work():
    """Only the stacked outputs someone reads stay (with the body's work for them); the
    carries stay, and a callback in the body is kept."""
    seen = []

    def f(xs):
        def step(c, x):
            numbax.debug.callback(lambda v: seen.append(float(v)), x)
            return c + x, (jnp.exp(x) * 2.0, c * x)
        total, (unused, kept) = numbax.lax.scan(step, 0.0, xs)
        return total, kept

    xs = np.linspace(0.5, 2.0, 4)
    j = passes.simplify(_jaxpr(f, xs))
    (scan,) = [e for e in j.eqns if e.primitive.name == "scan"]
    assert len(scan.outvars) == 2  # the carry and `kept`
    assert "exp" not in _prims(scan.params["jaxpr"].jaxpr)
    assert "debug_callback" in _prims(scan.params["jaxpr"].jaxpr)
    total, kept = numbax.jit(f)(xs)
    np.testing.assert_allclose(float(total), xs.sum(), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(kept), np.concatenate([[0.0], np.cumsum(xs)[:-1]])
                               * xs, rtol=1e-14)


def test_constant_folding_of_scalar_literals():
    def f(x):
        two = jnp.asarray(1.0) + 1.0
        return x * two

    j = passes.simplify(_jaxpr(f, X))
    assert _prims(j) == ["mul"]
    _same_values(f, j, X)


def test_double_transpose_and_noop_convert():
    f = lambda x: x.T.T.astype(np.float64) + 1.0  # noqa: E731
    j = passes.simplify(_jaxpr(f, X))
    assert _prims(j) == ["add"]
    _same_values(f, j, X)


def test_float_times_zero_is_kept():
    f = lambda x: x * 0.0  # noqa: E731  (inf * 0 is nan: not simplified)
    j = passes.simplify(_jaxpr(f, X))
    assert _prims(j) == ["mul"]


def test_grad_jaxpr_shrinks():
    f = numbax.grad(lambda x: jnp.sum(jnp.tanh(x) * 2.0))
    j0 = _jaxpr(f, X)
    j1 = passes.simplify(j0)
    assert len(j1.eqns) <= len(j0.eqns)
    _same_values(f, j1, X)


def test_broadcast_through_keepdims_reshape():
    """logsumexp's f[n] -> f[n,1] -> f[n,k] broadcasts f[n] directly: no reshape is left to
    split the row kernel (one fused nest on both backends)."""
    def lse(x):
        m = jnp.max(x, axis=1, keepdims=True)
        return jnp.log(jnp.sum(jnp.exp(x - m), axis=1, keepdims=True)) + m

    x = np.random.default_rng(1).normal(size=(6, 5))
    jaxpr = passes.simplify(_jaxpr(lse, x))
    reshaped = {e.outvars[0] for e in jaxpr.eqns if e.primitive.name == "reshape"}
    assert not [e for e in jaxpr.eqns if e.primitive.name == "broadcast_in_dim"
                and e.invars[0] in reshaped]  # no reshape between a reduction and its use
    _same_values(lse, jaxpr, x)
    m = x.max(axis=1, keepdims=True)
    want = np.log(np.exp(x - m).sum(axis=1, keepdims=True)) + m
    np.testing.assert_allclose(np.asarray(numbax.jit(lse)(x)), want, rtol=1e-13)
    # a reshape that reorders more than unit axes stays (and the result is still right)
    f = lambda v: jnp.broadcast_to(jnp.reshape(v, (2, 3)), (4, 2, 3))  # noqa: E731
    v = np.arange(6.0)
    assert "reshape" in _prims(passes.simplify(_jaxpr(f, v)))
    np.testing.assert_array_equal(np.asarray(numbax.jit(f)(v)),
                                  np.broadcast_to(v.reshape(2, 3), (4, 2, 3)))


def test_passes_run_inside_loop_bodies():
    """A scan body's transposes around products fold into the products, and the zero
    cotangents nobody reads are dropped, as at top level (the CPU compiles the body)."""
    w = np.linspace(-1, 1, 16).reshape(4, 4)

    def f(c, xs, w):
        def body(c, x):
            unused = jnp.zeros((50, 60)) + x  # noqa: F841
            return (w @ c.T).T * x + (c * 1.0), None
        return numbax.lax.scan(body, c, xs)[0]

    c, xs = np.ones((2, 4)), np.linspace(0.5, 1.0, 3)
    j = passes.simplify(_jaxpr(f, c, xs, w))
    (scan,) = [e for e in j.eqns if e.primitive.name == "scan"]
    body = _prims(scan.params["jaxpr"].jaxpr)
    assert "transpose" not in body and "broadcast_in_dim" not in body and "dot_general" in body
    _same_values(f, j, c, xs, w)
    want = c
    for x in xs:
        want = want @ w.T * x + want
    np.testing.assert_allclose(np.asarray(core.eval_jaxpr(j, [], c, xs, w)[0]), want, rtol=1e-14)


def test_reductions_of_transposes_reduce_the_axes_the_operand_had():
    """vmap of a scan reduced over time moves time behind the batch axis; the reduction
    reads the operand itself, over the axis time had there (kept axes in their order)."""
    x = np.arange(120.0).reshape(2, 3, 4, 5) % 7 - 3
    cases = [
        (lambda x: jnp.max(jnp.transpose(x, (1, 0, 2, 3)), axis=0), True),
        (lambda x: jnp.sum(jnp.transpose(x, (3, 0, 1, 2)), axis=(0, 2)), True),
        (lambda x: jnp.argmin(jnp.transpose(x, (0, 2, 1, 3)), axis=1), True),
        # the kept axes would come out in another order: the transpose stays
        (lambda x: jnp.max(jnp.transpose(x, (2, 1, 0, 3)), axis=(1, 3)), False),
    ]
    for f, folds in cases:
        j = passes.dce(passes.fold_transposes(_jaxpr(f, x)))
        assert ("transpose" not in _prims(j)) == folds, _prims(j)
        _same_values(f, j, x)
        np.testing.assert_array_equal(np.asarray(numbax.jit(f)(x)), np.asarray(f(x)))


def test_a_vmapped_scan_reduced_over_time_matches_numpy():
    b = np.linspace(0.1, 0.5, 64)

    def run(b):
        def step(u, _):
            u = u + b * u * (1 - u)
            return u, u
        return numbax.lax.scan(step, 0.01, None, length=50)[1].max()

    want = np.empty(64)
    for k, bk in enumerate(b):
        u, us = 0.01, []
        for _ in range(50):
            u = u + bk * u * (1 - u)
            us.append(u)
        want[k] = max(us)
    f = numbax.jit(numbax.vmap(run))
    assert "transpose" not in f.lower(b).as_text().split("def driver")[1]
    np.testing.assert_allclose(np.asarray(f(b)), want, rtol=1e-13)


def test_reductions_over_size_one_axes_are_reshapes():
    """What a broadcast's transpose sums in a scan's backward step: no reduction left, the
    element itself (NaN kept, -0.0 kept by max/min/prod and made +0.0 by a float sum, as
    eagerly); argmax stays a reduction."""
    x = np.array([-0.0, np.nan, 2.0, -3.5, 0.0, 7.0], np.float32).reshape(2, 1, 3, 1)
    for f, kept in ((lambda v: jnp.sum(v, axis=(1, 3)), ["reshape", "add"]),
                    (lambda v: jnp.max(v, axis=1), ["reshape"]),
                    (lambda v: jnp.min(v, axis=(1, 3)), ["reshape"]),
                    (lambda v: jnp.prod(v, axis=3), ["reshape"]),
                    (lambda v: jnp.argmax(v, axis=1), ["argmax"]),
                    (lambda v: jnp.sum(v > 0, axis=1), ["gt", "convert_element_type",
                                                          "reshape"])):
        j = passes.simplify(_jaxpr(f, x))
        assert _prims(j) == kept
        want = np.asarray(f(x))
        for got in (core.eval_jaxpr(j, [], x)[0], numbax.jit(f)(x)):
            np.testing.assert_array_equal(np.asarray(got), want)
            if want.dtype.kind == "f":
                np.testing.assert_array_equal(np.signbit(np.asarray(got)), np.signbit(want))
    ints = np.arange(6, dtype=np.int32).reshape(2, 3, 1)
    j = passes.simplify(_jaxpr(lambda v: jnp.sum(v, axis=2), ints))
    assert "reduce_sum" not in _prims(j) and _prims(j)[-1] == "reshape"
    np.testing.assert_array_equal(np.asarray(core.eval_jaxpr(j, [], ints)[0]), ints[..., 0])
