"""Loop-invariant equations leave scan and while bodies (compiler/hoist.py): same numbers as
a numpy loop, the invariant work done once, effects and large broadcasts left in place."""
import numpy as np

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler import hoist, pipeline
from numbax._src.lax.control_flow.loops import scan_p, while_p

RNG = np.random.default_rng(3)


def _prepared(f, *args):
    return pipeline.prepare(numbax.make_jaxpr(f)(*args).jaxpr)


def _loops(jaxpr):
    return [e for e in jaxpr.eqns if e.primitive in (scan_p, while_p)]


def _body_prims(loop):
    body = loop.params["jaxpr" if loop.primitive is scan_p else "body_jaxpr"].jaxpr
    return [e.primitive.name for e in body.eqns]


def _power(m):
    def body(i, v):
        w = m.astype(jnp.float64) @ v  # the conversion reads only the loop's constant
        return w / jnp.linalg.norm(w)
    return lax.fori_loop(0, 30, body, jnp.ones(m.shape[0]) / np.sqrt(m.shape[0]))


def test_a_conversion_of_a_closed_over_matrix_runs_once():
    m = RNG.standard_normal((40, 40)).astype(np.float32)
    (loop,) = _loops(_prepared(_power, m))
    assert "convert_element_type" not in _body_prims(loop)
    v = np.ones(40) / np.sqrt(40)
    for _ in range(30):
        w = m.astype(np.float64) @ v
        v = w / np.linalg.norm(w)
    np.testing.assert_allclose(np.asarray(numbax.jit(_power)(m)), v, rtol=1e-12)


def test_transposes_and_identities_of_a_kalman_step_leave_the_scan():
    F = RNG.standard_normal((4, 4))

    def f(F, xs):
        def step(P, x):
            P = F @ P @ F.T * 0.5 + jnp.eye(4) * x
            return P, jnp.trace(P)
        return lax.scan(step, jnp.eye(4), xs)

    xs = RNG.standard_normal(6)
    (loop,) = _loops(_prepared(f, F, xs))
    assert "transpose" not in _body_prims(loop) and "iota" not in _body_prims(loop)
    P, traces = np.eye(4), []
    for x in xs:
        P = F @ P @ F.T * 0.5 + np.eye(4) * x
        traces.append(np.trace(P))
    got_P, got_traces = numbax.jit(f)(F, xs)
    np.testing.assert_allclose(np.asarray(got_P), P, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got_traces), traces, rtol=1e-12)


def test_an_invariant_of_an_inner_loop_leaves_both_loops():
    c = RNG.standard_normal(5)

    def f(c, x):
        def outer(i, x):
            return lax.fori_loop(0, 3, lambda j, y: y * 0.5 + jnp.sin(c) * j, x + i)
        return lax.fori_loop(0, 4, outer, x)

    jaxpr = _prepared(f, c, np.zeros(5))
    assert [e.primitive.name for e in jaxpr.eqns if e.primitive.name == "sin"] == ["sin"]
    x = np.zeros(5)
    for i in range(4):
        x = x + i
        for j in range(3):
            x = x * 0.5 + np.sin(c) * j
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(c, np.zeros(5))), x, rtol=1e-12)


def test_a_large_broadcast_stays_in_the_body():
    row = RNG.standard_normal(100)

    def f(row, x):
        return lax.fori_loop(0, 3, lambda i, x: x * 0.9 + jnp.broadcast_to(row, (100, 100)), x)

    (loop,) = _loops(_prepared(f, row, np.zeros((100, 100))))
    assert 100 * 100 > hoist.EXPANSION_MAX
    assert "broadcast_in_dim" in _body_prims(loop)
    want = np.zeros((100, 100))
    for _ in range(3):
        want = want * 0.9 + row
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(row, np.zeros((100, 100)))), want)


def test_an_effect_on_constants_runs_every_step():
    seen = []

    def f(c, x):
        def body(i, x):
            numbax.debug.callback(lambda v: seen.append(float(v)), c.sum())
            return x + c
        return lax.fori_loop(0, 4, body, x)

    c = np.arange(3.0)
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(c, np.zeros(3))), 4 * c)
    assert seen == [3.0] * 4


def test_while_loops_hoist_from_cond_and_body_and_may_run_zero_times():
    c = RNG.standard_normal(3)

    def f(c, x, limit):
        def cond(s):
            return s[0] < limit * jnp.exp(c).sum()

        def body(s):
            return s[0] + 1.0, s[1] * jnp.cos(c)
        return lax.while_loop(cond, body, (0.0, x))

    (loop,) = _loops(_prepared(f, c, np.ones(3), 1.0))
    assert "exp" not in [e.primitive.name for e in loop.params["cond_jaxpr"].jaxpr.eqns]
    assert "cos" not in _body_prims(loop)
    for limit in (0.0, 1.0):
        n, x = 0.0, np.ones(3)
        while n < limit * np.exp(c).sum():
            n, x = n + 1.0, x * np.cos(c)
        got_n, got_x = numbax.jit(f)(c, np.ones(3), limit)
        assert float(got_n) == n
        np.testing.assert_allclose(np.asarray(got_x), x, rtol=1e-12)


def test_a_scanned_output_read_from_constants_only():
    c = RNG.standard_normal(4)

    def f(c, xs):
        return lax.scan(lambda h, x: (h + x, jnp.tanh(c)), 0.0, xs)

    h, ys = numbax.jit(f)(c, np.arange(5.0))
    assert float(h) == 10.0
    np.testing.assert_allclose(np.asarray(ys), np.tile(np.tanh(c), (5, 1)), rtol=1e-12)


def test_small_work_on_constants_runs_first_and_the_jacobian_is_one_nest():
    basis = np.eye(3, dtype=np.float32)

    def f(x):  # jacfwd's shape of work: a sum of the constant basis read after the products
        return (jnp.cos(x)[:, None, :] * basis + jnp.asarray(basis).sum(1)) * 2.0

    x = RNG.standard_normal((500, 3)).astype(np.float32)
    jaxpr = _prepared(f, x)
    names = [e.primitive.name for e in jaxpr.eqns]
    assert names.index("reduce_sum") < names.index("cos")
    want = (np.cos(x)[:, None, :] * basis + basis.sum(1)) * 2.0
    got = numbax.jit(f)(x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    driver = numbax.jit(f).lower(x).as_text().split("def driver")[1]
    assert driver.count("np.empty((500, 3, 3)") == 1  # the result only
