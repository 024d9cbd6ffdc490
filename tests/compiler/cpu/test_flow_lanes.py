"""vmap of a scalar while loop under CPU jit in blocks of lanes (compiler/cpu/flow_lanes.py):
each example's trip count and results against a Python loop over the examples, for lengths
around the lane count, carries of three dtypes, a condition reading consts, values computed
before and after the loop, an unbatched closure; the lane form in the source, and programs
it does not take still right."""
import math

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cpu import flow_lanes

RNG = np.random.default_rng(31)


def _bisect(a, b):
    """The root of x^3 + a x - b in a bracket halved until narrower than 1e-9 (a > 0)."""
    r = jnp.abs(b) + a + 1.0

    def cond(s):
        lo, hi, it = s
        return (hi - lo > 1e-9) & (it < 200)

    def body(s):
        lo, hi, it = s
        mid = 0.5 * (lo + hi)
        neg = mid * mid * mid + a * mid - b < 0
        return jnp.where(neg, mid, lo), jnp.where(neg, hi, mid), it + 1

    lo, hi, it = lax.while_loop(cond, body, (-r, r, 0))
    return 0.5 * (lo + hi), it


def _bisect_loop(a, b):
    lo, hi, it = -(abs(b) + a + 1.0), abs(b) + a + 1.0, 0
    while hi - lo > 1e-9 and it < 200:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if mid * mid * mid + a * mid - b < 0 else (lo, mid)
        it += 1
    return 0.5 * (lo + hi), it


@pytest.mark.parametrize("n", [2, 5, 16, 17, 35, 300])
def test_bisection_per_example_matches_a_python_loop(n):
    a, b = RNG.uniform(0.1, 3.0, n), RNG.normal(0.0, 5.0, n)
    b[0] = 0.0  # a root at 0: the bracket's halves all the way down
    f = numbax.jit(numbax.vmap(_bisect))
    root, trips = f(a, b)
    want = [_bisect_loop(x, y) for x, y in zip(a, b, strict=True)]
    np.testing.assert_array_equal(np.asarray(root), [w[0] for w in want])
    np.testing.assert_array_equal(np.asarray(trips), [w[1] for w in want])
    assert f"np.empty({flow_lanes.LANES}, " in f.lower(a, b).as_text()


def test_carries_of_three_dtypes_consts_and_values_around_the_loop():
    """Collatz steps: an int carry, a bool carry, a float one; the condition reads a batched
    const (the cap) and the body an unbatched one (the closure's scale); a value made before
    the loop is used after it, and a literal output."""
    scale = 0.5

    def collatz(start, cap):
        twice = start * 2  # before the loop, read after it

        def cond(c):
            k, _, steps, _ = c
            return (k != 1) & (steps < cap)

        def body(c):
            k, odd_seen, steps, total = c
            odd = k % 2 == 1
            k = jnp.where(odd, 3 * k + 1, k // 2)
            return k, odd_seen | odd, steps + 1, total + scale * k

        k, odd_seen, steps, total = lax.while_loop(
            cond, body, (start, jnp.bool_(False), jnp.int32(0), jnp.float64(0.0)))
        return k + twice, odd_seen, steps, total, 7

    starts = np.arange(1, 51, dtype=np.int64)
    caps = np.where(np.arange(50) % 3 == 0, 5, 1000).astype(np.int32)
    got = numbax.jit(numbax.vmap(collatz))(starts, caps)

    def loop(start, cap):
        k, odd_seen, steps, total = int(start), False, 0, 0.0
        while k != 1 and steps < cap:
            odd = k % 2 == 1
            k = 3 * k + 1 if odd else k // 2
            odd_seen, steps, total = odd_seen or odd, steps + 1, total + scale * k
        return k + 2 * int(start), odd_seen, steps, total, 7

    want = [loop(s, c) for s, c in zip(starts, caps, strict=True)]
    for j, column in enumerate(zip(*want, strict=True)):
        np.testing.assert_array_equal(np.asarray(got[j]), np.array(column), err_msg=str(j))
    assert got[2].dtype == np.int32 and got[1].dtype == np.bool_
    lowered = numbax.jit(numbax.vmap(collatz)).lower(starts, caps).as_text()
    assert f"np.empty({flow_lanes.LANES}, " in lowered


def test_inside_another_map_and_under_jvp():
    """Lanes inside an outer map's loop (vmap of vmap), and the jvp of the loop (its tangent
    carries are lanes too), against the eager results and a Python loop."""
    def newton(a):
        def cond(c):
            return (jnp.abs(c[0] * c[0] - a) > 1e-13 * a) & (c[1] < 60)
        x, _ = lax.while_loop(cond, lambda c: (0.5 * (c[0] + a / c[0]), c[1] + 1), (a, 0))
        return x

    a = RNG.uniform(0.5, 40.0, (3, 21))
    nested = numbax.jit(numbax.vmap(numbax.vmap(newton)))
    np.testing.assert_array_equal(np.asarray(nested(a)), np.asarray(
        numbax.vmap(numbax.vmap(newton))(a)))
    np.testing.assert_allclose(nested(a), np.sqrt(a), rtol=1e-12)
    t = RNG.normal(size=21)
    primal, tangent = numbax.jit(lambda a, t: numbax.jvp(numbax.vmap(newton), (a,), (t,)))(
        a[0], t)
    np.testing.assert_allclose(primal, np.sqrt(a[0]), rtol=1e-12)
    np.testing.assert_allclose(tangent, t / (2 * np.sqrt(a[0])), rtol=1e-9)


def test_programs_with_arrays_keep_the_per_example_loop():
    """A carry with an axis (and a body with a reduction) is not a lane program: each example
    runs its own loop, as before."""
    def norm_steps(v):
        def body(c):
            return c[0] * 0.5, c[1] + 1
        return lax.while_loop(lambda c: jnp.sum(c[0] * c[0]) > 1.0, body, (v, 0))

    v = RNG.normal(size=(40, 3)) * 10
    x, n = numbax.jit(numbax.vmap(norm_steps))(v)
    want_n = [math.ceil(max(0.0, math.log2(np.sum(r * r)) / 2)) if np.sum(r * r) > 1 else 0
              for r in v]
    np.testing.assert_array_equal(np.asarray(n), want_n)
    np.testing.assert_array_equal(np.asarray(x), v * 0.5 ** np.asarray(want_n)[:, None])
    text = numbax.jit(numbax.vmap(norm_steps)).lower(v).as_text()
    assert f"np.empty({flow_lanes.LANES}, " not in text


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "complex64", "int8", "uint32",
                                   "bool"])
def test_lane_arrays_of_narrow_complex_integer_and_boolean_carries(dtype):
    """Each example runs its own count of steps (a batched bound): jit's lanes give eager's
    batched loop's values, in the carry's dtype."""
    import ml_dtypes

    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    steps = (np.arange(37) % 5).astype(np.int32)
    if dt == np.bool_:
        a = np.arange(37) % 3 == 0

        def f(a, n):
            return lax.while_loop(lambda c: c[1] < n, lambda c: (~c[0], c[1] + 1), (a, 0))[0]
    else:
        a = (np.arange(37) % 3 + 1).astype(dt)

        def f(a, n):
            return lax.while_loop(lambda c: c[1] < n,
                                  lambda c: (c[0] * a + a, c[1] + 1), (a, 0))[0]

    got = numbax.jit(numbax.vmap(f))(a, steps)
    assert got.dtype == dt
    np.testing.assert_array_equal(np.asarray(got), np.asarray(numbax.vmap(f)(a, steps)))
    assert f"np.empty({flow_lanes.LANES}, " in numbax.jit(numbax.vmap(f)).lower(a, steps).as_text()
