"""Loop nests inside compiled control flow (cpu/flow_runs.py) and index maps sunk through
cheap elementwise work (compiler/compose_maps.py): an RK4 step's columns are one nest over
rows with the stacks' loop inside it, arrays of two and more axes are read through flat views,
a stack read one slab at a time is the operand it stacked, and a loop whose threads would run
only small nests chooses one thread or several by timing its calls. Truth: numpy loops and
numbax's own eager run."""
from __future__ import annotations

import re

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cpu.runtime import busy_sites
from numbax._src.compiler.cpu.runtime import threads as th

from .kernel_text import modules

RNG = np.random.default_rng(11)


def _lorenz(y, stack):
    x, yy, z = y[:, 0], y[:, 1], y[:, 2]
    return stack([10 * (yy - x), x * (28 - z) - yy, x * yy - 8 / 3 * z], 1)


def _rk4(y, steps, stack, h=0.01):
    k1 = _lorenz(y, stack)
    k2 = _lorenz(y + h / 2 * k1, stack)
    k3 = _lorenz(y + h / 2 * k2, stack)
    k4 = _lorenz(y + h * k3, stack)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def _rk4_loop(y, steps=20):
    return lax.fori_loop(0, steps, lambda i, y: _rk4(y, steps, jnp.stack), y)


def _rk4_numpy(y, steps=20):
    for _ in range(steps):
        y = _rk4(y, steps, np.stack)
    return y


def _flow_kernel(text: str) -> str:
    return next(m for m in modules(text) if "def kernel(a" in m and "for v" in m)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_an_rk4_loop_is_one_nest_a_step_with_the_stacks_inside(dtype):
    y = RNG.standard_normal((257, 3)).astype(dtype)
    f = numbax.jit(_rk4_loop)
    kernel = _flow_kernel(f.lower(y).as_text())
    body = kernel.split("def kernel_serial")[0]
    # one loop over rows a step, the stacks' three columns a loop inside it, no select's
    # operands stored: the new state is the one array a step writes, and it takes turns in
    # two made before the loop (flow_scratch.alternating)
    assert len(re.findall(r"for v\d+ in p?range\(257\)", body)) == 1
    assert re.search(r"\n( +)for v\d+ in p?range\(257\):\n(?:\1 .*\n)*\1    for v\d+ in "
                     r"range\(3\):", body)
    assert body.count("np.empty(") == 2
    loop = body[body.index("for v"):]
    assert "np.empty(" not in loop and re.search(r"v\d+ = v\d+ if v\d+ else v\d+", loop)
    got = np.asarray(f(y))
    with numbax.disable_jit():
        eager = np.asarray(_rk4_loop(y))
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, _rk4_numpy(y.astype(np.float64)), **tol)
    np.testing.assert_allclose(got, eager, **tol)


def test_a_loop_over_a_strided_argument_reads_it_through_a_copy():
    # a transposed (Fortran-ordered) argument: the loop's flat views of it are of a copy
    x = np.asfortranarray(RNG.standard_normal((64, 5)))

    def f(x):
        return lax.fori_loop(0, 3, lambda i, c: c * 0.5 + x[:, 1:2] * c[:, ::-1], x)

    want = x.copy()
    for _ in range(3):
        want = want * 0.5 + x[:, 1:2] * want[:, ::-1]
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(x)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(x[::2, ::2])),
                               _loop_numpy(x[::2, ::2]), rtol=1e-12)


def _loop_numpy(x):
    c = x.copy()
    for _ in range(3):
        c = c * 0.5 + x[:, 1:2] * c[:, ::-1]
    return c


def test_a_map_of_a_value_of_the_same_nest_starts_a_new_nest():
    # d[:1] broadcast over d's shape reads element 0 of d at every index: it cannot be the
    # scalar of the element the nest is at
    x = np.arange(6.0) + 1

    def body(i, c):
        d = c * 2.0
        return d + d[:1] * c[::-1]

    want = x.copy()
    for _ in range(3):
        d = want * 2.0
        want = d + d[:1] * want[::-1]
    got = numbax.jit(lambda x: lax.fori_loop(0, 3, body, x))(x)
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("shape", [(6, 4, 3), (1, 2, 3)])
def test_nests_over_three_axes_and_unit_axes_index_flat_views_right(shape):
    x = RNG.standard_normal(shape)

    def body(i, c):
        e = jnp.exp(c[:, :, 0]) + c[:, :, 2]  # (a, b)
        return jnp.stack([e, c[:, :, 1] * 2.0, e * c[:, :, 0]], 2) + c[:, :1, :]

    want = x.copy()
    for _ in range(2):
        e = np.exp(want[:, :, 0]) + want[:, :, 2]
        want = np.stack([e, want[:, :, 1] * 2.0, e * want[:, :, 0]], 2) + want[:, :1, :]
    got = numbax.jit(lambda x: lax.fori_loop(0, 2, body, x))(x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


def test_maps_sink_through_cheap_work_and_pick_a_stacks_operand():
    a, b = RNG.standard_normal((2, 500, 4))
    w = RNG.standard_normal(500)

    def f(a, b, w):
        s = jnp.stack([w, a[:, 0] * b[:, 1], w + 1.0], 1)  # (500, 3)
        t = (a - b) * 3.0
        return s[:, 0], s[:, 1] + t[:, 2], t[::2, 1:3]

    text = numbax.jit(f).lower(a, b, w).as_text()
    jaxpr = text.split("def driver")[1]
    assert "select_n" not in jaxpr  # each column of the stack is its operand
    assert "f64[500,4] = sub" not in jaxpr  # only t's read columns are computed
    for got, want in zip(numbax.jit(f)(a, b, w), (
            w, a[:, 0] * b[:, 1] + (a - b)[:, 2] * 3.0, ((a - b) * 3.0)[::2, 1:3]),
            strict=True):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


def test_work_read_whole_as_well_is_not_sunk_into_its_maps():
    # u is read whole by the sum: its map keeps reading u rather than recompute it
    a = RNG.standard_normal((300, 5))
    f = numbax.jit(lambda a: ((a * 2.0 + 1.0)[:, 3], (a * 2.0 + 1.0).sum()))
    jaxpr = f.lower(a).as_text().split("def driver")[1].split("\ndef ")[0]
    assert "f64[300] = add" not in jaxpr
    got = f(a)
    np.testing.assert_allclose(np.asarray(got[0]), a[:, 3] * 2.0 + 1.0, rtol=1e-12)
    np.testing.assert_allclose(float(got[1]), (a * 2.0 + 1.0).sum(), rtol=1e-12)


def test_a_loop_of_small_nests_times_its_calls_to_choose_its_threads():
    y = RNG.standard_normal((4096, 3))
    f = numbax.jit(lambda y: lax.fori_loop(0, 7, lambda i, y: _rk4(y, 7, jnp.stack), y))
    text = f.lower(y).as_text()
    driver = modules(text)[-1]
    kernel = _flow_kernel(text)
    if "prange(" not in kernel:
        pytest.skip("the nests' estimate gives no thread on this machine's settings")
    # a one-thread variant of plain loops, and a site that tries threads only where a call's
    # serial time reaches REGION_WORTH_S for each region it enters (7 steps, each a region
    # for each prange nest: the parallel variant does not nest its runs)
    parallel, serial = kernel.split("def kernel_serial(")
    assert "prange(" not in serial
    regions = 7 * parallel.count("prange(")
    assert f"th.Site({regions} * th.REGION_WORTH_S, quiet=True)" in driver
    assert re.search(r"bl\.blas_call\(k\d+_flow if n > 1 else k\d+_flow_serial, 1, ", driver)
    with numbax.config.override("cpu_threads", 0):
        results = [np.asarray(f(y)) for _ in range(4)]
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    np.testing.assert_allclose(results[0], _rk4_numpy_steps(y, 7), rtol=1e-12)


def _rk4_numpy_steps(y, steps):
    for _ in range(steps):
        y = _rk4(y, steps, np.stack)
    return y


def test_a_quiet_site_tries_threads_only_where_its_regions_would_pay(monkeypatch):
    now = {"t": 10.0}
    monkeypatch.setattr(busy_sites.time, "perf_counter", lambda: now["t"])

    def run(site, cost, calls, busy=False):
        arms = []
        for _ in range(calls):
            arm = site.choose(busy)
            now["t"] += cost[arm]
            busy_sites.measured(site, 4 if arm else 1)
            arms.append(arm)
        return arms

    regions = 200
    small = busy_sites.Site(regions * th.REGION_WORTH_S, quiet=True)
    # 200 regions of 3.5 us each: threads never tried (their compile is never paid)
    assert run(small, {0: regions * 3.5e-6, 1: 1e-6}, 50) == [0] * 50
    large = busy_sites.Site(regions * th.REGION_WORTH_S, quiet=True)
    arms = run(large, {0: regions * 1e-4, 1: regions * 3e-5}, 50)
    assert arms[:4] == [0, 0, 1, 1] and arms[-10:] == [1] * 10
    # on a busy machine a region's join may wait a scheduler slice: PARALLEL_WORTH_S at least
    busy = busy_sites.Site(1e-4, quiet=True)
    assert run(busy, {0: 1e-3, 1: 1e-5}, 20, busy=True) == [0] * 20


def test_threads_for_times_a_quiet_site_on_a_quiet_machine(monkeypatch):
    monkeypatch.setattr(th, "pool_size", lambda: 8)
    monkeypatch.setattr(th, "busy", lambda: False)
    monkeypatch.setattr(th, "free_cores", lambda: 8)
    with numbax.config.override("cpu_threads", 0):
        site = busy_sites.Site(0.0, quiet=True)
        assert th.threads_for(1e9, site) == 1 and site.started  # its first arm: serial
        busy_sites.measured(site, 1)
        plain = busy_sites.Site()
        assert th.threads_for(1e9, plain) == 8 and not plain.started


def _stacked(y):
    return jnp.stack([y[:, 1] * 2, y[:, 0] - y[:, 2], y[:, 2] + 1], 1)


# loops through the nests, views and sunk maps above, at the edges (truth: the eager run)
EDGES = {
    "no_rows": (lambda y: lax.fori_loop(0, 3, lambda i, y: _stacked(y), y), [(0, 3)]),
    "one_row": (lambda y: lax.fori_loop(0, 3, lambda i, y: _stacked(y), y), [(1, 3)]),
    "integers": (lambda y: lax.fori_loop(0, 4, lambda i, y: jnp.stack(
        [y[:, 1] + i, y[:, 0] * 3 - y[:, 2], y[:, 2] ^ y[:, 0]], 1), y), [(7, 3, "int")]),
    "booleans": (lambda b: lax.fori_loop(0, 3, lambda i, b: jnp.stack(
        [b[:, 1] & b[:, 0], ~b[:, 2], b[:, 0] | b[:, 1]], 1), b), [(9, 3, "bool")]),
    "while": (lambda y: lax.while_loop(lambda c: c[0] < 5, lambda c: (
        c[0] + 1, _stacked(c[1]) * 0.5), (0, y))[1], [(6, 3)]),
    "scan_over_xs": (lambda y, xs: lax.scan(
        lambda y, x: (_stacked(y) + x, y[:, 0] * x[:, 1]), y, xs), [(5, 3), (4, 5, 3)]),
    "reverse_scan": (lambda y, xs: lax.scan(lambda y, x: (_stacked(y) * x[:, :1], y.sum()),
                                            y, xs, reverse=True), [(5, 3), (4, 5, 3)]),
    "cond_in_loop": (lambda y: lax.fori_loop(0, 4, lambda i, y: lax.cond(
        i % 2 == 0, _stacked, lambda y: y[:, ::-1] * 2.0, y), y), [(8, 3)]),
    "three_axes": (lambda y: lax.fori_loop(0, 3, lambda i, y: jnp.stack(
        [y[..., 1], y[..., 0] * y[..., 1], jnp.sin(y[..., 0])], -1), y), [(4, 5, 3)]),
    "transposed_operand": (lambda y, w: lax.fori_loop(
        0, 3, lambda i, y: _stacked(y) + w.T[:, :3], y), [(6, 3), (4, 6)]),
    "stacks_as_outputs": (lambda y: lax.scan(lambda y, _: (_stacked(y), _stacked(y)[:, 1]), y,
                                             None, length=4), [(3, 3)]),
}


@pytest.mark.parametrize("name", list(EDGES))
def test_loops_at_the_edges_give_what_eager_gives(name):
    f, specs = EDGES[name]
    args = []
    for spec in specs:
        shape, kind = (spec[:-1], spec[-1]) if isinstance(spec[-1], str) else (spec, "float")
        x = RNG.standard_normal(shape)
        args.append(x > 0 if kind == "bool" else np.round(x * 3).astype(np.int64)
                    if kind == "int" else x)
    got = numbax.jit(f)(*args)
    with numbax.disable_jit():
        want = f(*args)
    for g, w in zip(numbax.tree_util.tree_leaves(got), numbax.tree_util.tree_leaves(want),
                    strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
        else:
            np.testing.assert_array_equal(g, w)
