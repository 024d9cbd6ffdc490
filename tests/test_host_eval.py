"""Eager loop steps through host_eval's direct evaluator give eval_jaxpr's bits, and it stands
aside where an equation needs the dispatcher."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src import host_eval
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax.control_flow import loops


def _both(run):
    """run() with the direct evaluator, then with every loop body through eval_jaxpr."""
    fast = numbax.tree.map(np.asarray, run())
    real = host_eval.evaluator
    try:
        host_eval.evaluator = lambda closed, keep_out: None
        slow = numbax.tree.map(np.asarray, run())
    finally:
        host_eval.evaluator = real
    return fast, slow


def _same_bits(fast, slow):
    for a, b in zip(numbax.tree.leaves(fast), numbax.tree.leaves(slow), strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes(), (a, b)


X = np.linspace(-1.5, 2.5, 6).astype(np.float32)

# (each short enough to stay eager: under eager_loops.MIN_STEPS steps)
PROGRAMS = {
    "transcendental chain with literals": lambda: lax.fori_loop(
        0, 40, lambda i, c: jnp.tanh(c * 0.9 + jnp.sin(c) * 0.25) + 0.01 * i, jnp.asarray(X)),
    "bfloat16 carry": lambda: lax.fori_loop(
        0, 30, lambda i, c: c * jnp.bfloat16(1.01) + jnp.exp(-c) + lax.erf(c) * 0.1,
        jnp.asarray(X, jnp.bfloat16)),
    "int32 wrapping and a Python-int carry": lambda: lax.while_loop(
        lambda c: c[0] < 50, lambda c: (c[0] + 1, c[1] * 7 + 3), (0, jnp.int32(5))),
    "cond and reduction in the body": lambda: lax.fori_loop(
        0, 25, lambda i, c: lax.cond(c.sum() > 3.0, lambda v: v * 0.5, lambda v: v + 1.0, c),
        jnp.asarray(X)),
    "scan with xs, reversed, emitting ys": lambda: lax.scan(
        lambda c, x: (c * 0.5 + x, jnp.cos(c) * x), jnp.zeros(3, jnp.float32),
        jnp.asarray(np.arange(60, dtype=np.float32).reshape(20, 3) / 7), reverse=True),
    "dynamic index of a closed-over array": lambda: lax.fori_loop(
        0, 40, lambda i, c: c + jnp.asarray(X)[i % 6] * c, jnp.float32(0.5)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_direct_steps_give_eval_jaxprs_bits(name):
    fast, slow = _both(PROGRAMS[name])
    _same_bits(fast, slow)


def test_a_while_loop_matches_a_python_loop():
    out = lax.while_loop(lambda c: c[1] < 100.0, lambda c: (c[0] + 1, c[1] * 1.5 + 0.25),
                         (0, jnp.float32(1.0)))
    n, v = 0, np.float32(1.0)
    while v < 100.0:
        n, v = n + 1, v * np.float32(1.5) + np.float32(0.25)
    assert int(out[0]) == n and np.float32(out[1]) == v


def _closed(fun, *args):
    avals = [numbax.core.get_aval(np.asarray(a)) for a in args]
    return pe.trace_to_closed_jaxpr(lambda *xs: [fun(*xs)], avals)


def test_it_stands_aside_for_loops_and_nan_checks():
    plain = _closed(lambda x: jnp.tanh(x) * 2.0, X)
    assert host_eval.evaluator(plain, (loops.scan_p, loops.while_p)) is not None
    nested = _closed(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0, x), X)
    assert host_eval.evaluator(nested, (loops.scan_p, loops.while_p)) is None
    with numbax.config.override("jax_debug_nans", True):
        assert host_eval.evaluator(plain, ()) is None


def test_nans_are_still_reported_inside_eager_loops():
    with numbax.config.override("jax_debug_nans", True), \
            pytest.raises(FloatingPointError, match="nan"):
        lax.fori_loop(0, 5, lambda i, c: jnp.log(c - 2.0), jnp.asarray(X))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_interpreted_and_straight_line_steps_give_the_same_bits(name, monkeypatch):
    def run(interpreted_calls, source_at_once):
        host_eval._FACTORIES.clear()
        with monkeypatch.context() as m:
            m.setattr(host_eval, "INTERPRETED_CALLS", interpreted_calls)
            m.setattr(host_eval, "SOURCE_AT_ONCE_EQNS", source_at_once)
            return numbax.tree.map(np.asarray, PROGRAMS[name]())
    _same_bits(run(0, 0), run(10**9, -1))


def test_a_long_body_is_interpreted_until_compiling_it_pays(monkeypatch):
    monkeypatch.setattr(host_eval, "INTERPRETED_CALLS", 3)
    host_eval._FACTORIES.clear()
    steps = host_eval.evaluator(_closed(lambda x: jnp.tanh(x) * 2.0, X), ())
    for _ in range(3):
        np.testing.assert_array_equal(steps(X)[0], np.tanh(X) * np.float32(2.0))
    assert not host_eval._FACTORIES  # three calls interpreted, nothing compiled
    steps(X)
    assert len(host_eval._FACTORIES) == 1
    again = host_eval.evaluator(_closed(lambda x: jnp.tanh(x) * 3.0, X), ())
    assert again.compiled is not None  # the same wiring: its code at once


def test_programs_of_one_wiring_share_code_but_not_values(monkeypatch):
    # c * k + 1 for two k: the same generated source, each with its own literal
    monkeypatch.setattr(host_eval, "INTERPRETED_CALLS", 0)
    host_eval._FACTORIES.clear()
    first = host_eval.evaluator(_closed(lambda x: x * 0.5 + 1.0, X), ())
    second = host_eval.evaluator(_closed(lambda x: x * 0.25 + 1.0, X), ())
    np.testing.assert_array_equal(first(X)[0], X * np.float32(0.5) + np.float32(1.0))
    np.testing.assert_array_equal(second(X)[0], X * np.float32(0.25) + np.float32(1.0))
    assert len(host_eval._FACTORIES) == 1


@pytest.mark.parametrize("interpreted_calls", [0, 10**9])
def test_outputs_that_are_inputs_literals_or_several(interpreted_calls, monkeypatch):
    monkeypatch.setattr(host_eval, "INTERPRETED_CALLS", interpreted_calls)
    monkeypatch.setattr(host_eval, "SOURCE_AT_ONCE_EQNS", -1)
    def fun(x, y):
        return [x, 3.0, jnp.sin(x) + y, jnp.argmax(y)]
    avals = [numbax.core.get_aval(X), numbax.core.get_aval(X[::-1].copy())]
    closed = pe.trace_to_closed_jaxpr(fun, avals)
    outs = host_eval.evaluator(closed, ())(X, X[::-1].copy())
    assert outs[0] is X or np.array_equal(outs[0], X)
    assert float(outs[1]) == 3.0
    np.testing.assert_array_equal(outs[2], np.sin(X) + X[::-1])
    assert int(outs[3]) == int(np.argmax(X[::-1]))


@pytest.mark.parametrize("interpreted_calls", [0, 10**9])
def test_an_impl_giving_the_wrong_number_of_outputs_is_named(interpreted_calls, monkeypatch):
    monkeypatch.setattr(host_eval, "INTERPRETED_CALLS", interpreted_calls)
    monkeypatch.setattr(host_eval, "SOURCE_AT_ONCE_EQNS", -1)
    closed = _closed(lambda x: jnp.tanh(x), X)
    tanh_p = closed.jaxpr.eqns[0].primitive
    monkeypatch.setitem(numbax._src.core.impl_rules, tanh_p, lambda x: [x, x])
    monkeypatch.delitem(host_eval.LOUD_IMPLS, tanh_p, raising=False)
    with pytest.raises(ValueError, match="tanh: the implementation returned 2 outputs"):
        host_eval.evaluator(closed, ())(X)


def test_threads_running_eager_loops_and_clearing_the_caches_agree_with_one(monkeypatch):
    import threading

    from numbax._src import dispatch
    monkeypatch.setattr(host_eval, "INTERPRETED_CALLS", 2)

    def work(seed, out):
        rng = np.random.default_rng(seed)
        x = jnp.asarray(rng.standard_normal(5).astype(np.float32))
        xs = jnp.asarray(rng.standard_normal((40, 5)).astype(np.float32))
        res = []
        for k in range(12):
            c, ys = lax.scan(lambda c, v: (jnp.tanh(c * (0.5 + k % 3) + v), c.sum()), x, xs)  # noqa: B023
            res += [np.asarray(c), np.asarray(ys), np.asarray(jnp.where(x > 0, x * k, 0.0))]
            if k % 5 == 0:  # another thread's step may be looking these up meanwhile
                dispatch._OUT_AVALS.clear()
                host_eval._FACTORIES.clear()
        out[seed] = res

    alone, together = {}, {}
    for seed in range(3):
        work(seed, alone)
    threads = [threading.Thread(target=work, args=(seed, together)) for seed in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for seed in range(3):
        for a, b in zip(alone[seed], together[seed], strict=True):
            assert a.tobytes() == b.tobytes()
