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
