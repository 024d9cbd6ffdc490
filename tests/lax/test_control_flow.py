"""cond, switch, while_loop, fori_loop, scan, map: eager, grad, vmap and their combinations."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from tests.lax._checks import fd_grad

RNG = np.random.default_rng(0)


def _branchy(p, x):
    return lax.cond(p > 0, lambda v: jnp.sin(v) * v, lambda v: jnp.cos(v) - v, x)


def _branchy_ref(p, x):
    return np.sin(x) * x if p > 0 else np.cos(x) - x


@pytest.mark.parametrize("p", [1.0, -1.0])
def test_cond_eager_traced_and_grad(p):
    x = 0.7
    assert float(_branchy(p, x)) == pytest.approx(_branchy_ref(p, x))
    jaxpr = numbax.make_jaxpr(_branchy)(p, x)
    assert [e.primitive.name for e in jaxpr.eqns].count("cond") == 1
    g = numbax.grad(_branchy, 1)(p, x)
    assert float(g) == pytest.approx(fd_grad(lambda v: _branchy_ref(p, v), x), rel=1e-6)


def test_cond_grad_and_jvp_with_traced_predicate_inside_make_jaxpr():
    # Under make_jaxpr the predicate is abstract: the cond must partially evaluate.
    jaxpr = numbax.make_jaxpr(numbax.grad(_branchy, 1))(1.0, 0.7)
    out = numbax._src.core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, -1.0, 0.7)[0]
    assert float(out) == pytest.approx(-np.sin(0.7) - 1)
    primal, tangent = numbax.jvp(lambda v: _branchy(-1.0, v), (0.7,), (2.0,))
    assert float(tangent) == pytest.approx(2 * (-np.sin(0.7) - 1))


def test_cond_vmap_batched_predicate_selects_between_both_branches():
    ps = np.array([1.0, -1.0, 1.0, -2.0])
    xs = RNG.normal(size=4)
    got = numbax.vmap(_branchy)(ps, xs)
    np.testing.assert_allclose(np.asarray(got), [_branchy_ref(p, x) for p, x in zip(ps, xs)])
    text = str(numbax.make_jaxpr(numbax.vmap(_branchy))(ps, xs))
    # JAX's documented semantics: both branches run on every example, then a select_n
    assert "select_n" in text and "cond" not in text and "scan" not in text
    unbatched = numbax.vmap(_branchy, in_axes=(None, 0))(1.0, xs)
    np.testing.assert_allclose(np.asarray(unbatched), np.sin(xs) * xs)


def test_cond_pytree_operands_and_outputs():
    def f(p, d):
        return lax.cond(p, lambda d: {"a": d["x"] + 1, "b": (d["y"],)},
                        lambda d: {"a": d["x"] * 2, "b": (-d["y"],)}, d)

    out = f(False, {"x": np.ones(2), "y": 3.0})
    np.testing.assert_allclose(np.asarray(out["a"]), [2.0, 2.0])
    assert float(out["b"][0]) == -3.0


def test_switch_clamps_index_like_jax():
    branches = [lambda x: x + 1, lambda x: x * 10, lambda x: -x]
    for i, expected in [(-5, 3.0), (0, 3.0), (1, 20.0), (2, -2.0), (9, -2.0)]:
        assert float(lax.switch(i, branches, 2.0)) == expected
    traced = numbax.vmap(lambda i, x: lax.switch(i, branches, x))(
        np.array([-1, 1, 7]), np.array([2.0, 2.0, 2.0]))
    np.testing.assert_allclose(np.asarray(traced), [3.0, 20.0, -2.0])


def test_branch_mismatch_names_branch_and_leaf():
    with pytest.raises(TypeError, match="leaf 0 is f64\\[\\] in false_fun but f64\\[2\\]"):
        numbax.make_jaxpr(lambda p, x: lax.cond(p, lambda v: jnp.stack([v, v]) if hasattr(
            jnp, "stack") else v * np.ones(2), lambda v: v, x))(True, 1.0)
    with pytest.raises(TypeError, match="same pytree structure"):
        lax.switch(0, [lambda x: (x, x), lambda x: x], 1.0)


def test_while_loop_eager_and_traced():
    assert int(lax.while_loop(lambda i: i < 10, lambda i: i + 3, 0)) == 12
    f = lambda n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.5),  # noqa
                                 (0, 1.0))[1]
    assert float(f(4)) == pytest.approx(1.5 ** 4)
    assert "while" in str(numbax.make_jaxpr(f)(4))


def test_while_loop_vmap_runs_each_examples_trip_count():
    f = lambda n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0),  # noqa
                                 (0, 1.0))
    ns = np.array([0, 3, 1, 5])
    counts, vals = numbax.vmap(f)(ns)
    np.testing.assert_array_equal(np.asarray(counts), ns)
    np.testing.assert_allclose(np.asarray(vals), 2.0 ** ns)


def test_while_loop_vmap_unbatched_predicate_stays_one_loop():
    f = lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x),  # noqa
                                 (0, 1.0))[1]
    xs = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.asarray(numbax.vmap(f)(xs)), xs ** 3)
    text = str(numbax.make_jaxpr(numbax.vmap(f))(xs))
    assert "scan" not in text and text.count("while[") == 1


def test_while_loop_forward_mode_and_reverse_mode_error():
    f = lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x),  # noqa
                                 (0, 1.0))[1]
    _, t = numbax.jvp(f, (2.0,), (1.0,))
    assert float(t) == pytest.approx(12.0)
    with pytest.raises(ValueError, match="lax.scan"):
        numbax.grad(f)(2.0)


def test_while_loop_bad_cond_and_carry_errors():
    with pytest.raises(TypeError, match="boolean scalar"):
        lax.while_loop(lambda c: c, lambda c: c + 1, 0.0)
    with pytest.raises(TypeError, match="carry must keep its shape and dtype"):
        lax.while_loop(lambda c: c < 3, lambda c: np.ones(2) * c, 0.0)


def test_fori_loop_static_is_a_scan_and_differentiable():
    f = lambda x: lax.fori_loop(0, 4, lambda i, v: v * x + i, 1.0)  # noqa: E731

    def ref(x):
        v = 1.0
        for i in range(4):
            v = v * x + i
        return v

    assert float(f(1.5)) == pytest.approx(ref(1.5))
    assert "scan" in str(numbax.make_jaxpr(f)(1.5))
    assert float(numbax.grad(f)(1.5)) == pytest.approx(fd_grad(ref, 1.5), rel=1e-6)


def test_fori_loop_traced_bounds_is_a_while_loop():
    f = lambda n: lax.fori_loop(0, n, lambda i, v: v + i, 0)  # noqa: E731
    assert int(f(5)) == 10
    assert "while" in str(numbax.make_jaxpr(f)(5))
    np.testing.assert_array_equal(np.asarray(numbax.vmap(f)(np.array([1, 4, 6]))), [0, 6, 15])


def test_scan_cumulative_and_reverse():
    xs = RNG.normal(size=6)
    carry, ys = lax.scan(lambda c, x: (c + x, c * x), 0.0, xs)
    partial = np.concatenate([[0.0], np.cumsum(xs)[:-1]])
    assert float(carry) == pytest.approx(xs.sum())
    np.testing.assert_allclose(np.asarray(ys), partial * xs)
    carry_r, ys_r = lax.scan(lambda c, x: (c + x, c), 0.0, xs, reverse=True)
    np.testing.assert_allclose(np.asarray(ys_r), np.concatenate([np.cumsum(xs[::-1])[::-1][1:],
                                                                 [0.0]]))


def _rnn_loss(w, xs):
    def cell(h, x):
        h = jnp.tanh(w @ h + x)
        return h, jnp.sum(h * h)

    _, ys = lax.scan(cell, np.zeros(3), xs)
    return jnp.sum(ys)


def _rnn_loss_ref(w, xs):
    h = np.zeros(3)
    total = 0.0
    for x in xs:
        h = np.tanh(w @ h + x)
        total += np.sum(h * h)
    return total


def test_grad_of_scan_over_an_rnn_cell():
    w = RNG.normal(size=(3, 3)) * 0.5
    xs = RNG.normal(size=(5, 3))
    assert float(_rnn_loss(w, xs)) == pytest.approx(_rnn_loss_ref(w, xs))
    gw, gx = numbax.grad(_rnn_loss, (0, 1))(w, xs)
    np.testing.assert_allclose(np.asarray(gw), fd_grad(lambda v: _rnn_loss_ref(v, xs), w),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(gx), fd_grad(lambda v: _rnn_loss_ref(w, v), xs),
                               rtol=1e-6, atol=1e-8)


def test_scan_of_cond_under_grad_and_vmap():
    def f(xs):
        def step(c, x):
            c = lax.cond(x > 0, lambda c: c * x, lambda c: c - x, c)
            return c, c

        return jnp.sum(lax.scan(step, 1.0, xs)[1])

    def ref(xs):
        c, total = 1.0, 0.0
        for x in xs:
            c = c * x if x > 0 else c - x
            total += c
        return total

    xs = np.array([0.5, -1.0, 2.0, -0.3])
    assert float(f(xs)) == pytest.approx(ref(xs))
    np.testing.assert_allclose(np.asarray(numbax.grad(f)(xs)), fd_grad(ref, xs), rtol=1e-6)
    batch = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(np.asarray(numbax.vmap(f)(batch)), [ref(b) for b in batch])


def test_scan_vmap_over_xs_and_carry():
    f = lambda c0, xs: lax.scan(lambda c, x: (c * 0.5 + x, c), c0, xs)  # noqa: E731
    c0s, xss = RNG.normal(size=(3,)), RNG.normal(size=(3, 5))
    carries, ys = numbax.vmap(f)(c0s, xss)
    for i in range(3):
        c, y = f(c0s[i], xss[i])
        assert float(carries[i]) == pytest.approx(float(c))
        np.testing.assert_allclose(np.asarray(ys)[i], np.asarray(y))


def test_scan_errors():
    with pytest.raises(ValueError, match="disagree"):
        lax.scan(lambda c, x: (c, x), 0.0, (np.ones(3), np.ones(4)))
    with pytest.raises(TypeError, match="pair"):
        lax.scan(lambda c, x: c, 0.0, np.ones(3))
    with pytest.raises(TypeError, match="carry"):
        lax.scan(lambda c, x: (np.ones(2) * c, x), 0.0, np.ones(3))


@pytest.mark.parametrize("length,cls,match", [
    (-1, ValueError, "length has -1, expected a non-negative integer"),
    (2.5, TypeError, "length has 2.5 of type float"),
    ("3", TypeError, "length has '3' of type str"),
    (True, TypeError, "length has True of type bool"),
])
def test_scan_length_must_be_a_non_negative_int(length, cls, match):
    """issue 21 item 20: length=-1 used to be accepted (and failed inside numpy's stack)."""
    with pytest.raises(cls, match=match):
        lax.scan(lambda c, x: (c + 1.0, c), 0.0, None, length=length)


def test_scan_length_forms_that_work():
    for length in (0, 3, np.int32(3), jnp.asarray(3)):
        carry, ys = lax.scan(lambda c, x: (c + 1.0, c), 0.0, None, length=length)
        assert float(carry) == int(length) and np.asarray(ys).tolist() == list(
            map(float, range(int(length))))


def test_map_matches_python_loop_and_differentiates():
    xs = RNG.normal(size=(4, 2))
    np.testing.assert_allclose(np.asarray(lax.map(lambda v: jnp.sum(jnp.sin(v)), xs)),
                               np.sin(xs).sum(1))
    g = numbax.grad(lambda v: jnp.sum(lax.map(lambda r: jnp.sum(r ** 3), v)))(xs)
    np.testing.assert_allclose(np.asarray(g), 3 * xs ** 2)


def test_python_control_flow_on_traced_value_points_here():
    with pytest.raises(numbax.errors.ConcretizationTypeError, match="lax.cond"):
        numbax.vmap(lambda x: x if x > 0 else -x)(np.ones(3))


def test_fori_loop_refuses_float_bounds():
    """issue 21 item 8: a float bound used to be truncated (range(0, 2.7) ran 3 steps)."""
    with pytest.raises(TypeError, match="lower and upper must be integers"):
        lax.fori_loop(0, 2.7, lambda i, c: c + i, 0)
    with pytest.raises(TypeError, match="integers"):
        numbax.jit(lambda u: lax.fori_loop(0, u, lambda i, c: c + i, 0))(2.5)
    assert int(lax.fori_loop(np.int32(0), 3, lambda i, c: c + i, 0)) == 3


def test_associative_scan_under_jit_and_vmap():
    x = np.random.default_rng(4).normal(size=(3, 7))
    f = lambda v: lax.associative_scan(jnp.add, v, axis=1)  # noqa: E731
    np.testing.assert_allclose(numbax.jit(f)(x), np.cumsum(x, axis=1))
    np.testing.assert_allclose(numbax.vmap(lambda r: lax.associative_scan(jnp.add, r,
                                                                          reverse=True))(x),
                               np.cumsum(x[:, ::-1], axis=1)[:, ::-1])
    with pytest.raises(TypeError, match="structure"):
        lax.associative_scan(lambda a, b: (a, b), x)


def test_custom_linear_solve_and_custom_root_bad_input():
    a = np.array([[2.0, 1.0], [0.5, 3.0]])
    b = np.array([1.0, 2.0])
    solve = lambda mv, r: jnp.linalg.solve(a, r)  # noqa: E731
    # JAX 0.10.2's classes: shapes are checked first (ValueError), then the structure
    with pytest.raises(ValueError, match=r"solve\(\) output shapes must match b"):
        lax.custom_linear_solve(lambda v: a @ v, b, lambda mv, r: (r, r))
    with pytest.raises(ValueError, match=r"matvec\(\) output shapes must match b"):
        lax.custom_linear_solve(lambda v: (v, v), b, solve)
    with pytest.raises(TypeError, match=r"matvec\(\) output pytree structure must match b"):
        lax.custom_linear_solve(lambda v: [v[0], v[1]], (b[0], b[1]), lambda mv, r: r)
    with pytest.raises(TypeError, match="transpose_solve required"):
        numbax.grad(lambda r: lax.custom_linear_solve(lambda v: a @ v, r, solve).sum())(b)
    np.testing.assert_allclose(  # forward mode needs no transpose_solve
        numbax.jvp(lambda r: lax.custom_linear_solve(lambda v: a @ v, r, solve), (b,), (b,))[1],
        np.linalg.solve(a, b))
    with pytest.raises(TypeError, match="f must return the structure"):
        lax.custom_root(lambda x: (x, x), 1.0, lambda f, x: x, lambda g, y: y)
