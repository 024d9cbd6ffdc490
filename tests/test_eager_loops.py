"""Eager scans and while loops that run long are compiled (_src/eager_loops.py), as JAX compiles
eager loops: the results of a Python loop, short loops and `jax_disable_jit` stay eager, a
while loop hands its remaining steps to compiled code with the carry as it stands."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src import eager_loops

STEPS = eager_loops.COMPILE_AT_WORK  # a one-equation scan body this long compiles


@pytest.fixture
def compiles(monkeypatch):
    """The loop programs eager_loops compiled (their primitive names)."""
    built = []
    real = eager_loops.compiler.compile

    def counting(program, backend, **kwargs):
        built.append(program.jaxpr.eqns[0].primitive.name)
        return real(program, backend, **kwargs)

    monkeypatch.setattr(eager_loops.compiler, "compile", counting)
    return built


def _python_decay(x: np.ndarray, steps: int) -> tuple[np.ndarray, list]:
    ys = []
    for i in range(steps):
        x = x * np.float32(0.999) + np.float32(i % 7)
        ys.append(x.sum())
    return x, ys


def test_a_long_eager_scan_runs_compiled_with_a_python_loops_results(compiles):
    x0 = np.linspace(-1, 1, 5, dtype=np.float32)

    def step(c, i):
        c = c * np.float32(0.999) + (i % 7).astype(np.float32)
        return c, c.sum()

    carry, ys = lax.scan(step, x0, np.arange(STEPS))
    want_carry, want_ys = _python_decay(x0, STEPS)
    assert compiles == ["scan"]
    np.testing.assert_allclose(np.asarray(carry), want_carry, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ys), np.asarray(want_ys, np.float32), rtol=1e-5)


def test_short_loops_and_disable_jit_stay_eager(compiles):
    x0 = np.ones(3)
    short = lax.fori_loop(0, 10, lambda i, c: c * 2.0, x0)
    np.testing.assert_array_equal(np.asarray(short), x0 * 2.0 ** 10)
    with numbax.disable_jit():
        long = lax.fori_loop(0, STEPS, lambda i, c: c + 1.0, x0)
    np.testing.assert_array_equal(np.asarray(long), x0 + STEPS)

    def big_body(c, _):  # 40 equations: enough work, too few steps (MIN_STEPS)
        for _ in range(20):
            c = jnp.sin(c) + 0.5
        return c, c

    steps = eager_loops.MIN_STEPS - 1
    assert steps * 40 >= eager_loops.COMPILE_AT_WORK
    carry, _ = lax.scan(big_body, x0, None, length=steps)
    want = x0.copy()
    for _ in range(steps * 20):
        want = np.sin(want) + 0.5
    np.testing.assert_allclose(np.asarray(carry), want, rtol=1e-12)
    assert compiles == []


def test_a_while_loop_hands_its_remaining_steps_to_compiled_code(compiles):
    """Steps past the eager budget run compiled from the carry the eager steps reached: the
    count and value of a Python while loop, and a short loop never compiles."""
    def collatz_steps(n):
        def cond(c):
            return c[0] != 1

        def body(c):
            k, steps = c
            return jnp.where(k % 2 == 0, k // 2, 3 * k + 1), steps + 1
        return lax.while_loop(cond, body, (np.int64(n), np.int64(0)))

    assert int(collatz_steps(7)[1]) == 16 and compiles == []

    def count_up(limit):
        return lax.while_loop(lambda c: c[0] < limit, lambda c: (c[0] + 1, c[1] * 0.5 + 1.0),
                              (np.int64(0), np.float64(0.0)))

    k, v = count_up(3 * STEPS)
    want = 0.0
    for _ in range(3 * STEPS):
        want = want * 0.5 + 1.0
    assert int(k) == 3 * STEPS and float(v) == want
    assert compiles == ["while"]


def test_a_loop_that_does_not_compile_runs_eagerly(monkeypatch):
    def refuse(program, backend, **kwargs):
        raise NotImplementedError("no lowering for this body")

    monkeypatch.setattr(eager_loops.compiler, "compile", refuse)
    out = lax.fori_loop(0, STEPS, lambda i, c: c + i, np.int64(0))
    assert int(out) == STEPS * (STEPS - 1) // 2
    assert "no lowering" in eager_loops.FALLBACKS["scan"]


def test_loops_under_transforms_are_traced_not_run(compiles):
    """grad of an eager loop: its jvp and transpose bind scans that run (and compile) eagerly
    at their lengths; the gradient is the closed form's."""
    def power(x):
        return lax.fori_loop(0, STEPS, lambda i, c: c * 1.0001, x)

    g = numbax.grad(power)(2.0)
    np.testing.assert_allclose(float(g), 1.0001 ** STEPS, rtol=1e-9)
    assert compiles and set(compiles) == {"scan"}


def _while_params(cond, body, init):
    """The operands and params of the while equation `lax.while_loop(cond, body, init)`
    binds (its jaxpr's one equation)."""
    leaves = numbax.tree_util.tree_leaves(init)
    closed = numbax.make_jaxpr(lambda *xs: lax.while_loop(
        cond, body, numbax.tree_util.tree_unflatten(
            numbax.tree_util.tree_structure(init), list(xs))))(*leaves)
    (eqn,) = closed.jaxpr.eqns
    env = dict(zip(closed.jaxpr.invars, leaves, strict=True))
    args = [x.val if hasattr(x, "val") else env.get(x, x) for x in eqn.invars]
    return args, eqn.params


def _python_count(cond, body, init):
    steps, c = 0, init
    while cond(c):
        c, steps = body(c), steps + 1
    return steps


LIMIT = np.int64(1000)
BOUND = jnp.asarray(777)
COUNTED = {  # (cond, body, init) of loops whose trip count their operands give
    "i < literal": (lambda c: c[0] < 1000, lambda c: (c[0] + 1, c[1] * 0.5), (0, 1.0)),
    "i <= literal, step 3": (lambda c: c[0] <= 1000, lambda c: (c[0] + 3, c[1]), (-7, 1.0)),
    "literal > i": (lambda c: 1000 > c[0], lambda c: (2 + c[0], c[1]), (5, 1.0)),
    "literal >= i": (lambda c: 999 >= c[0], lambda c: (c[0] + 1, c[1]), (0, 1.0)),
    "i < captured scalar": (lambda c: c[0] < LIMIT, lambda c: (c[0] + 1, c[1]), (0, 1.0)),
    "i < captured array": (lambda c: c[0] < BOUND, lambda c: (c[0] + 1, c[1]), (0, 1.0)),
    "i < a carry passed on": (lambda c: c[0] < c[1], lambda c: (c[0] + 2, c[1], c[2] * 0.5),
                              (np.int64(1), np.int64(901), 1.0)),
    "never runs": (lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1]), (np.int64(50), 1.0)),
    "int8 up to its largest": (lambda c: c[0] < np.int8(127), lambda c: (c[0] + np.int8(1),),
                               (np.int8(-128),)),
}
UNCOUNTED = {  # loops whose trip count is not read from their operands
    "collatz": (lambda c: c[0] != 1, lambda c: (jnp.where(c[0] % 2 == 0, c[0] // 2,
                                                          3 * c[0] + 1),), (np.int64(27),)),
    "the bound moves": (lambda c: c[0] < c[1], lambda c: (c[0] + 1, c[1] - 1),
                        (np.int64(0), np.int64(100))),
    "a step from a carry": (lambda c: c[0] < 100, lambda c: (c[0] + c[1], c[1]),
                            (np.int64(0), np.int64(1))),
    "a float counter": (lambda c: c[0] < 10.0, lambda c: (c[0] + 1.0,), (0.0,)),
    "a second test": (lambda c: (c[0] < 100) & (c[1] > 0.1), lambda c: (c[0] + 1, c[1] * 0.9),
                      (0, 1.0)),
    "a narrowed counter": (lambda c: c[0].astype(jnp.int8) < 100, lambda c: (c[0] + 1,),
                           (np.int64(0),)),
    "int8 wraps first": (lambda c: c[0] <= np.int8(127), lambda c: (c[0] + np.int8(1),),
                         (np.int8(120),)),
}


@pytest.mark.parametrize("name", COUNTED)
def test_a_counted_while_loops_steps_are_read_from_its_operands(name):
    cond, body, init = COUNTED[name]
    args, params = _while_params(cond, body, init)
    want = _python_count(lambda c: bool(cond(c)), lambda c: tuple(
        np.asarray(v) for v in body(c)), tuple(np.asarray(v) for v in init)) \
        if "int8" not in name else 255
    assert eager_loops.counted_steps(args, params) == want


@pytest.mark.parametrize("name", UNCOUNTED)
def test_other_while_loops_have_no_step_count(name):
    cond, body, init = UNCOUNTED[name]
    args, params = _while_params(cond, body, init)
    assert eager_loops.counted_steps(args, params) is None


def test_a_long_counted_while_loop_runs_compiled_from_its_first_step(compiles, monkeypatch):
    """No eager steps (the trip count is known and past the eager budget), and a Python loop's
    values; a short counted loop runs eagerly and compiles nothing."""
    eager_steps = []
    real = eager_loops.loops.while_steps
    monkeypatch.setattr(eager_loops.loops, "while_steps",
                        lambda *a, **k: eager_steps.append(a[1]) or real(*a, **k))
    n = 20 * eager_loops.MIN_STEPS
    k, v = lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 0.5 + 1.0),
                          (np.int64(0), np.float64(0.0)))
    want = 0.0
    for _ in range(n):
        want = want * 0.5 + 1.0
    assert int(k) == n and float(v) == want
    assert compiles == ["while"] and eager_steps == []
    k, v = lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 0.5 + 1.0),
                          (np.int64(0), np.float64(0.0)))
    assert int(k) == 10 and compiles == ["while"] and len(eager_steps) == 1
