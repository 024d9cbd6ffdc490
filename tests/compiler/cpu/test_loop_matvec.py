"""Matrix-vector products inside compiled loops (cpu/loop_matvec.py, runtime/matvec.py): gemv
into the loop's own buffer, on row blocks of the loop's threads where the matrix is large
enough. Checked against numpy in float64 for every orientation of the matrix, on one thread
and on two, and the generated kernels are read to see which path each took."""
import warnings

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax

RNG = np.random.default_rng(0)


def _kernel_text(f, *args) -> str:
    return f.lower(*args).as_text().split("def driver")[0]


def _descend(a, b, x0, steps):
    def body(i, x):
        return x - 0.1 * numbax.grad(lambda x: jnp.sum((a @ x - b) ** 2))(x)
    return lax.fori_loop(0, steps, body, x0)


def _descend_numpy(a, b, x0, steps):
    a, x = a.astype(np.float64), x0.astype(np.float64)
    for _ in range(steps):
        x = x - 0.1 * (2 * (a @ x - b) @ a)
    return x


@pytest.mark.parametrize("threads", [1, 2])
def test_least_squares_descent_matches_numpy_on_row_blocks_and_in_one_call(threads):
    a = (RNG.standard_normal((1000, 200)) * 0.05).astype(np.float32)
    b = (RNG.standard_normal(1000) * 0.05).astype(np.float32)
    x0 = np.zeros(200, np.float32)
    f = numbax.jit(_descend, static_argnums=3)
    text = _kernel_text(f, a, b, x0, 50)
    parallel, serial = text.split("def kernel_serial")
    # a @ x on its rows' blocks, r @ a as partial sums; the one-thread twin: gemv into buffers
    assert "mv.rows_block(" in parallel and "mv.part_block(" in parallel
    assert "mv." not in serial and serial.count("np.dot(") == 2
    with numbax.config.override("cpu_threads", threads), warnings.catch_warnings():
        warnings.simplefilter("error")  # (no NumbaWarning: the kernel is cached on disk)
        got = np.asarray(f(a, b, x0, 50))
    np.testing.assert_allclose(got, _descend_numpy(a, b, x0, 50), rtol=2e-4, atol=1e-6)


# product: every way the matrix can be stored against the product's rows
_ORIENTATIONS = {
    "a @ v": lambda a, v: a @ v[:a.shape[1]],
    "a.T @ v": lambda a, v: a.T @ v[:a.shape[0]],
    "v @ a": lambda a, v: v[:a.shape[0]] @ a,
    "v @ a.T": lambda a, v: v[:a.shape[1]] @ a.T,
    "a @ v[:, None]": lambda a, v: a @ v[:a.shape[1], None],
    "v[None] @ a": lambda a, v: v[None, :a.shape[0]] @ a,
    # a 3-D matrix contracted over two axes, the vector's axes paired in the other order
    "dot_general 3-D": lambda a, v: lax.dot_general(
        a, v[:a.shape[1] * a.shape[2]].reshape(a.shape[2], a.shape[1]),
        (((1, 2), (1, 0)), ((), ()))),
}
# (matrix shapes: large enough for threads, and small enough for loops instead of BLAS)
_SHAPES = {
    "large": {"a.T @ v": (160, 640), "v @ a.T": (160, 640), "dot_general 3-D": (20, 32, 160)},
    "small": {"a.T @ v": (30, 43), "v @ a.T": (30, 43), "dot_general 3-D": (3, 4, 5)},
}
# (products of at most 256 multiply-adds over at most 16 elements are sums of products:
# passes.expand_small_dots)
_DEFAULT_SHAPE = {"large": (640, 160), "small": (43, 30)}


def _numpy_orientation(name, a, v):
    a, v = a.astype(np.float64), v.astype(np.float64)
    if name == "dot_general 3-D":
        return np.einsum("ijk,kj->i", a, v[:a.shape[1] * a.shape[2]].reshape(a.shape[2],
                                                                             a.shape[1]))
    return _ORIENTATIONS[name](a, v)


@pytest.mark.parametrize("size", ["large", "small"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(_ORIENTATIONS))
def test_every_orientation_matches_numpy_on_one_and_two_threads(name, dtype, size):
    shape = _SHAPES[size].get(name, _DEFAULT_SHAPE[size])
    product = _ORIENTATIONS[name]
    a = RNG.standard_normal(shape).astype(dtype)
    v = RNG.standard_normal(6000).astype(dtype)

    def run(a, v):  # three steps, each product read by the next step's carry
        def step(acc, i):
            y = product(a, v * (1 + i.astype(dtype)))
            return acc + y, y[..., :3]
        return lax.scan(step, jnp.zeros_like(product(a, v)), jnp.arange(3))

    expected = sum(_numpy_orientation(name, a, v * (1 + i)) for i in range(3))
    f = numbax.jit(run)
    text = _kernel_text(f, a, v)
    threaded = "mv.rows_block(" in text or "mv.part_block(" in text
    assert threaded == (a.nbytes >= 400_000)  # the matrix streamed at 10 GB/s pays from 40 us
    assert ("_small(" in text) == (size == "small")  # loops, not a BLAS call
    tol = 2e-4 if dtype == np.float32 else 1e-10
    for threads in (1, 2):
        with numbax.config.override("cpu_threads", threads):
            acc, firsts = f(a, v)
        np.testing.assert_allclose(np.asarray(acc), expected, rtol=tol, atol=tol)
        np.testing.assert_allclose(np.asarray(firsts)[-1],
                                   _numpy_orientation(name, a, v * 3)[..., :3], rtol=tol, atol=tol)


def test_a_recurrent_networks_small_products_are_loops():
    """A vanilla RNN over one sequence (hidden 32, inputs 24): its two matrix-vector products a
    step are loops, not BLAS calls; checked against a numpy loop."""
    w = RNG.standard_normal((32, 32)) * 0.2
    u = RNG.standard_normal((32, 24)) * 0.2
    xs = RNG.standard_normal((40, 24))

    def run(w, u, xs):
        def step(h, x):
            h = jnp.tanh(w @ h + u @ x)
            return h, h[0]
        return lax.scan(step, jnp.zeros(32), xs)

    jitted = numbax.jit(run)
    assert _kernel_text(jitted, w, u, xs).count("mv.rows_small(") == 2
    h, firsts = np.zeros(32), []
    for x in xs:
        h = np.tanh(w @ h + u @ x)
        firsts.append(h[0])
    got_h, got_firsts = jitted(w, u, xs)
    np.testing.assert_allclose(np.asarray(got_h), h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(got_firsts), firsts, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [200, 300])  # a carry written back, a carry taking turns
def test_power_iteration_whose_carry_is_the_product(n):
    q, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    a = (q * np.linspace(0.5, 1.0, n)) @ q.T  # eigenvalues in [0.5, 1]: no overflow
    a = a.astype(np.float32)
    x0 = RNG.standard_normal(n).astype(np.float32)
    f = numbax.jit(lambda a, x: lax.fori_loop(0, 30, lambda i, x: a @ x, x))
    expected = np.linalg.matrix_power(a.astype(np.float64), 30) @ x0
    for threads in (1, 2):
        with numbax.config.override("cpu_threads", threads):
            got = np.asarray(f(a, x0))
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-4 * np.abs(expected).max())


def test_products_stacked_by_a_scan_and_inside_a_parallel_map():
    a = RNG.standard_normal((300, 500)).astype(np.float32)
    vs = RNG.standard_normal((64, 500)).astype(np.float32)
    # each step's product is a row of the scan's output: it outlives its step
    stacked = numbax.jit(lambda a, vs: lax.scan(lambda c, v: (c + 1.0, a @ v), 0.0, vs)[1])
    # no carry: the scan's steps may run as a prange, each product one gemv of its own
    mapped = numbax.jit(lambda a, vs: lax.scan(lambda c, v: (c, jnp.tanh(a @ v)), None, vs)[1])
    expected = vs.astype(np.float64) @ a.T.astype(np.float64)
    for threads in (1, 2):
        with numbax.config.override("cpu_threads", threads):
            np.testing.assert_allclose(np.asarray(stacked(a, vs)), expected, rtol=1e-4,
                                       atol=1e-4)
            np.testing.assert_allclose(np.asarray(mapped(a, vs)), np.tanh(expected), rtol=1e-4,
                                       atol=1e-4)


def test_a_loop_entering_many_regions_tries_threads_on_a_busy_machine_only_if_they_pay():
    """Each of the descent's 400 regions a call may wait a scheduler slice at its join on a
    busy machine: its call site tries its parallel arm only from 400 regions' worth of serial
    time, not from the 4 ms a kernel of one region needs; and on its own thread count, not on
    a larger team left by an earlier kernel, whose idle threads would cost at every join."""
    from numbax._src.compiler.cpu.runtime import busy_sites
    from numbax._src.compiler.cpu.runtime import threads as th

    a = (RNG.standard_normal((1000, 200)) * 0.05).astype(np.float32)
    f = numbax.jit(_descend, static_argnums=3)
    driver = f.lower(a, a[:, 0], a[0], 200).as_text().split("# driver |")[1]
    assert "th.Site(max(th.PARALLEL_WORTH_S, 400 * th.REGION_WORTH_S))" in driver
    assert "before = th.use(n, 400)" in driver and 400 > th.TEAM_RAISE_MAX_REGIONS
    site = th.Site(max(th.PARALLEL_WORTH_S, 400 * th.REGION_WORTH_S))
    for _ in range(20):  # serial calls of 6 ms: above one region's worth, below 400's
        assert site.choose(busy=True) == busy_sites.SERIAL
        site.started -= 0.006
        busy_sites.measured(site, 1)


@pytest.mark.parametrize("name", sorted(_ORIENTATIONS))
def test_top_level_matrix_vector_products_on_row_blocks(name, monkeypatch):
    """At a program's top level a matrix of 4 MB or more runs on row blocks on Numba's threads
    (runtime/matvec.product, from library.dot), every orientation; on one thread np.dot."""
    from numbax._src.compiler.cpu.runtime import matvec

    calls = []
    for kernel in ("_rows_parallel", "_parts_parallel"):
        original = getattr(matvec, kernel)
        monkeypatch.setattr(matvec, kernel, lambda *a, k=original: (calls.append(1), k(*a)))
    shape = {"a.T @ v": (1024, 1100), "v @ a.T": (1024, 1100),
             "dot_general 3-D": (20, 64, 880)}.get(name, (1100, 1024))
    a = RNG.standard_normal(shape).astype(np.float32)
    v = RNG.standard_normal(60000).astype(np.float32)
    f = numbax.jit(_ORIENTATIONS[name])
    expected = _numpy_orientation(name, a, v)
    for threads in (1, 2):
        with numbax.config.override("cpu_threads", threads):
            got = np.asarray(f(a, v))
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-3)
        assert bool(calls) == (threads == 2)
