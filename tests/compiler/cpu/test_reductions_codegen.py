"""Reduction kernels: vectorised accumulators, NaN semantics, row groups (softmax, logsumexp)."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler import fusion, passes, registry
from numbax._src.compiler.cpu import loops, outline

from .kernel_text import called, modules

RNG = np.random.default_rng(0)
M = RNG.normal(size=(37, 41))
M_SPECIAL = M.copy()
M_SPECIAL[3, 5] = np.nan
M_SPECIAL[7, :] = np.inf
M_SPECIAL[9, 2] = -np.inf


def _softmax(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def _logsumexp_rows(x):
    m = jnp.max(x, axis=-1)
    return jnp.log(jnp.sum(jnp.exp(x - m[:, None]), axis=-1)) + m


def _logsumexp(x):
    m = jnp.max(x)
    return jnp.log(jnp.sum(jnp.exp(x - m))) + m


_JIT = {name: numbax.jit(f, static_argnums=1) for name, f in [
    ("sum", lambda x, ax: jnp.sum(x, axis=ax)), ("max", lambda x, ax: jnp.max(x, axis=ax)),
    ("min", lambda x, ax: jnp.min(x, axis=ax)), ("prod", lambda x, ax: jnp.prod(x, axis=ax))]}
_NP = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}


@pytest.mark.parametrize("name", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
@pytest.mark.filterwarnings("ignore:overflow")
def test_reduction_matches_numpy(name, axis, dtype):
    x = (M * 3).astype(dtype) if dtype != np.float64 else M
    if name == "prod":
        x = (np.abs(x) % 2 + 0.5).astype(dtype) if dtype != np.int32 else np.sign(x).astype(dtype)
    got = np.asarray(_JIT[name](x, axis))
    want = _NP[name](x, axis=axis)
    assert got.dtype == want.dtype
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol)


@pytest.mark.parametrize("name", ["sum", "max", "min"])
@pytest.mark.parametrize("axis", [None, 1])
def test_nan_and_inf_propagate_like_numpy(name, axis):
    got = np.asarray(_JIT[name](M_SPECIAL, axis))
    with np.errstate(invalid="ignore"):
        want = _NP[name](M_SPECIAL, axis=axis)
    np.testing.assert_allclose(got, want, rtol=1e-13)  # nan and ±inf positions must match


def test_nan_in_a_long_vector_is_not_lost_by_vector_lanes():
    x = RNG.normal(size=100_003)
    for pos in (0, 7, 50_000, 100_002):
        y = x.copy()
        y[pos] = np.nan
        assert np.isnan(np.asarray(_JIT["max"](y, None)))
        assert np.isnan(np.asarray(_JIT["min"](y, None)))
    np.testing.assert_allclose(np.asarray(_JIT["sum"](x, None)), np.sum(x), rtol=1e-12)


def test_empty_axes():
    empty = np.zeros((0, 4))
    np.testing.assert_array_equal(np.asarray(_JIT["sum"](empty, 0)), np.zeros(4))
    np.testing.assert_array_equal(np.asarray(_JIT["prod"](empty, 0)), np.ones(4))
    np.testing.assert_array_equal(np.asarray(_JIT["sum"](empty.T, 1)), np.zeros(4))


def _np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_softmax_and_logsumexp_rows_match_numpy(dtype):
    x = (M * 10).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(np.asarray(numbax.jit(_softmax)(x)), _np_softmax(x), rtol=tol)
    m = x.max(-1)
    want = np.log(np.exp(x - m[:, None]).sum(-1)) + m
    np.testing.assert_allclose(np.asarray(numbax.jit(_logsumexp_rows)(x)), want, rtol=tol)
    want1 = np.log(np.exp(x - x.max()).sum()) + x.max()
    np.testing.assert_allclose(np.asarray(numbax.jit(_logsumexp)(x)), want1, rtol=tol)


def test_softmax_row_with_nan_and_inf():
    x = M_SPECIAL[:10]
    with np.errstate(invalid="ignore"):
        want = _np_softmax(x)
    np.testing.assert_array_equal(np.isnan(np.asarray(numbax.jit(_softmax)(x))), np.isnan(want))


def test_softmax_is_one_kernel_over_rows():
    big = np.zeros((512, 1024))  # codegen_cpu.PRANGE_MIN elements: large enough for prange
    text = numbax.jit(_softmax).lower(big).as_text()
    [kernel] = called(text)
    assert kernel.count("for i0 in prange(m0):") == 1
    assert kernel.count("for i1 in range(m1):") == 3  # max (one vectorised accumulator),
    assert kernel.count("rd.max_(") == 1  # sum of exp, write; no NaN flag beside the max
    assert "stop = " not in kernel and " != " not in kernel
    assert kernel.count("fm.exp_f64(") == 1  # exp once: the output row keeps it (in cache)
    assert "np.empty((512, 1024)" in text.split("def driver(")[1]  # only the output


def _row_function(x, f) -> bool:
    """Whether f's jitted kernel runs each row in a function of its own (outline.row_functions),
    from both its prange and its serial variant."""
    [module, _driver] = modules(numbax.jit(f).lower(x).as_text())
    calls = module.count("        kernel_row(i0, ")
    assert calls in (0, 2), calls  # kernel and kernel_serial share one row function
    return calls == 2


@pytest.fixture
def outlining(monkeypatch):
    """Row functions on, whatever the host (they are on where Numba's target lacks AVX-512)."""
    monkeypatch.setattr(outline, "ON_THIS_HOST", True)


def test_no_row_functions_where_the_target_has_avx512(monkeypatch):
    monkeypatch.setattr(outline, "ON_THIS_HOST", False)
    assert not _row_function(np.zeros((600, 512), np.float32), _softmax)


def test_wide_fastmath_rows_run_a_function_a_row(outlining):
    wide, narrow = outline.OUTLINE_MIN_WIDTH, outline.OUTLINE_MIN_WIDTH - 1
    assert _row_function(np.zeros((600, wide), np.float32), _softmax)
    assert not _row_function(np.zeros((600, narrow), np.float32), _softmax)
    # no fastmath call in the rows: nothing to keep in registers
    assert not _row_function(np.zeros((600, wide), np.float32),
                             lambda x: x - jnp.max(x, axis=-1, keepdims=True))
    # rows of whole float32 blocks keep their block loops inline
    assert not _row_function(np.zeros((300, loops.BLOCK), np.float32), _logsumexp_rows)
    assert _row_function(np.zeros((300, loops.BLOCK), np.float64), _logsumexp_rows)
    # a map with a broadcast operand (a loop nest of rows, not a row group) ...
    assert _row_function(np.zeros((600, wide), np.float32), _tanh_bias)
    # ... but not a reduction into outputs every row adds to
    assert not _row_function(np.zeros((600, wide), np.float32),
                             lambda x: jnp.sum(jnp.tanh(x + x[0]), axis=0))


def _tanh_bias(x):
    return jnp.tanh(x + x[0]) * 2.0


def test_rows_under_two_outer_loops(outlining):
    """Rows of a 3-d array (attention-shaped softmax, a map over a bias row): the row function
    takes both outer indices, so each row's vector loops stand alone."""
    x = RNG.normal(size=(3, 5, outline.OUTLINE_MIN_WIDTH + 44)).astype(np.float32)
    b = RNG.normal(size=x.shape[-1]).astype(np.float32)
    for f, want in [(_softmax, _np_softmax(x.astype(np.float64))),
                    (lambda v: jnp.tanh(v + b), np.tanh(x + b))]:
        [module, _driver] = modules(numbax.jit(f).lower(x).as_text())
        assert module.count("            kernel_row(i0, i1, ") == 2
        np.testing.assert_allclose(np.asarray(numbax.jit(f)(x)), want, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("width", [outline.OUTLINE_MIN_WIDTH, 1000])
@pytest.mark.parametrize("rows", [3, 700])  # the serial variant, and rows enough for prange
def test_rows_in_functions_of_their_own_match_numpy(width, rows, outlining):
    x = RNG.normal(size=(rows, width)).astype(np.float32) * 4
    x[1, 7], x[2, :] = np.nan, -np.inf
    with np.errstate(invalid="ignore"):
        want = _np_softmax(x.astype(np.float64))
        want_lse = np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1)) + x.max(-1)
    assert _row_function(x, _softmax)
    np.testing.assert_allclose(np.asarray(numbax.jit(_softmax)(x)), want, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(numbax.jit(_logsumexp_rows)(x)), want_lse,
                               rtol=2e-6)
    assert _row_function(x, _tanh_bias)
    with np.errstate(invalid="ignore"):
        want_tanh = np.tanh(x + x[0]) * 2.0
    np.testing.assert_allclose(np.asarray(numbax.jit(_tanh_bias)(x)), want_tanh, rtol=2e-6,
                               atol=1e-6)
    column_sums = numbax.jit(lambda v: jnp.sum(jnp.tanh(v + v[0]), axis=0))(x)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(np.asarray(column_sums), np.tanh(x + x[0]).sum(0),
                                   rtol=2e-5, atol=1e-4)


def test_logsumexp_is_two_passes_in_one_kernel():
    text = numbax.jit(_logsumexp).lower(M).as_text()
    [kernel] = called(text)
    # a full reduction of a contiguous 37x41 array: one flat loop per pass (m0 = n0 * n1),
    # max (one accumulator: llvm.maximum vectorises) and sum of exp
    assert "m0 = n0 * n1" in kernel and "def kernel_serial(" in kernel
    assert kernel.count("for i0 in range(m0):") == 2
    assert "for i1" not in kernel
    assert ".reshape((1517,))" in text.split("def driver(")[1]
    assert "# fastmath: only in reduction accumulators" in text


def test_row_group_partition_shape():
    jaxpr = passes.simplify(numbax.make_jaxpr(_logsumexp_rows)(M).jaxpr)
    nodes = fusion.partition(jaxpr, lambda e: registry.fusible(e, "cpu"))
    assert len(nodes) == 1
    assert [kind for kind, _ in nodes[0].passes] == ["row", "row", "outer"]


def test_reduction_of_bad_axis_raises():
    with pytest.raises(ValueError, match="axis"):
        numbax.jit(lambda x: jnp.sum(x, axis=5))(M)


# ----------------------------------------------------------------------------- parallel chunks


@pytest.fixture
def forced_parallel(monkeypatch):
    """Renders full reductions as if Numba had 8 threads, with tiny thresholds."""
    monkeypatch.setattr(loops, "PAR_REDUCE_THREADS", 8)
    monkeypatch.setattr(loops, "PAR_REDUCE_MIN", 1000)
    monkeypatch.setattr(loops, "PAR_REDUCE_MIN_HEAVY", 1000)
    monkeypatch.setattr(loops, "PAR_REDUCE_CHUNK_MIN", 100)
    return loops


def test_parallel_full_reduction_is_called_only_with_threads(forced_parallel, monkeypatch):
    x = RNG.normal(size=(40, 50))
    text = numbax.jit(_logsumexp).lower(x).as_text()
    [kernel] = called(text)
    assert "@njit(parallel=True" in kernel
    assert kernel.count("for ic in prange(nchunk):") == 2  # max pass, sum-of-exp pass
    # up to 2 chunks per thread (8) of PAR_REDUCE_CHUNK_MIN (100) elements or more
    assert "def kernel(a0, o0, n0, n1, nchunk):" in kernel and "chunk = -(-m0 // nchunk)" in kernel
    assert "k0_par(a0.reshape((2000,)), t0, 40, 50, th.chunks(2000, 100, n))" in modules(text)[-1]
    assert "lo = np.uint64(min(ic * chunk, m0))" in kernel  # unsigned: no wraparound code
    assert kernel.count("for ic in range(nchunk):") == 2  # serial combine of the partials
    monkeypatch.setattr(forced_parallel, "PAR_REDUCE_THREADS", 1)  # one thread: serial
    numbax.clear_caches()  # jit wrappers of one function share their compiled programs
    [kernel] = called(numbax.jit(_logsumexp).lower(x).as_text())
    assert "def kernel_serial(" in kernel and "prange" not in kernel
    monkeypatch.setattr(forced_parallel, "PAR_REDUCE_THREADS", 8)
    numbax.clear_caches()
    [small] = called(numbax.jit(_logsumexp).lower(x[:10]).as_text())
    assert "def kernel_serial(" in small  # below PAR_REDUCE_MIN


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.bool_])
def test_parallel_full_reductions_match_numpy(forced_parallel, dtype):
    x = RNG.normal(size=(45, 61)) * 10
    x = (x > 0) if dtype == np.bool_ else x.astype(dtype)
    fns = {"sum": (jnp.sum, np.sum), "max": (jnp.max, np.max), "min": (jnp.min, np.min)}
    if dtype == np.bool_:
        fns = {"any": (jnp.any, np.any), "all": (jnp.all, np.all)}
    for name, (f, g) in fns.items():
        got = np.asarray(numbax.jit(f)(x))
        want = g(x)
        assert got.dtype == want.dtype, name
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)
    if dtype in (np.float64, np.float32):
        want = np.log(np.exp(x - x.max()).sum()) + x.max()
        np.testing.assert_allclose(np.asarray(numbax.jit(_logsumexp)(x)), want,
                                   rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("pos", [0, 1500, 2744])
def test_parallel_reduction_nan_and_inf(forced_parallel, pos):
    x = RNG.normal(size=2745)
    y = x.copy()
    y[pos] = np.nan
    for f in (jnp.max, jnp.min, jnp.sum, _logsumexp):
        assert np.isnan(np.asarray(numbax.jit(f)(y)))
    y[pos] = np.inf
    assert np.asarray(numbax.jit(jnp.max)(y)) == np.inf
    assert np.asarray(numbax.jit(jnp.sum)(y)) == np.inf
    assert np.asarray(numbax.jit(jnp.min)(-y)) == -np.inf
    y[pos] = -np.inf
    np.testing.assert_allclose(np.asarray(numbax.jit(jnp.max)(y)), np.max(y))


# ----------------------------------------------------------------------------- lanes, flattening


@pytest.mark.parametrize("n,dtype", [(0, np.float64), (1, np.float32), (17, np.float64),
                                     (33, np.int32), (1000, np.float32)])
def test_lane_unrolled_max_min_remainders(n, dtype):
    x = (RNG.normal(size=n) * 100).astype(dtype)
    if n == 0:
        for f in (jnp.sum, jnp.prod):
            np.testing.assert_array_equal(np.asarray(numbax.jit(f)(x)), f(x))
        return
    for f, g in ((jnp.max, np.max), (jnp.min, np.min)):
        got = np.asarray(numbax.jit(f)(x))
        assert got.dtype == g(x).dtype and got == g(x)


@pytest.mark.parametrize("name,axis,keepdims", [
    ("sum", None, True), ("max", None, False), ("min", 0, True), ("max", 2, False),
    ("sum", (0, 1), False), ("max", (1, 2), True), ("min", (0, 2), False),
    ("max", (0, 1, 2), True)])
def test_all_axes_and_keepdims_3d(name, axis, keepdims):
    x = RNG.normal(size=(5, 6, 37))
    x[2, 3, 4] = np.nan if name != "sum" else x[2, 3, 4]
    f = getattr(jnp, name)
    got = np.asarray(numbax.jit(lambda v: f(v, axis=axis, keepdims=keepdims))(x))
    want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_flattened_full_reduction_of_a_non_contiguous_input():
    x = RNG.normal(size=(60, 70))
    f = numbax.jit(lambda v: jnp.max(v.T[::2] * 2.0) + jnp.sum(v[:, 1:]))
    np.testing.assert_allclose(np.asarray(f(x)), np.max(x.T[::2] * 2) + np.sum(x[:, 1:]),
                               rtol=1e-12)


def test_row_broadcast_along_trailing_axes_is_not_flattened():
    x = RNG.normal(size=(8, 9, 10))
    b = RNG.normal(size=10)
    f = numbax.jit(lambda v, w: jnp.max(v + w, axis=(1, 2)))
    text = f.lower(x, b).as_text()
    assert ".reshape((8, 90))" not in text
    np.testing.assert_allclose(np.asarray(f(x, b)), np.max(x + b, axis=(1, 2)), rtol=1e-12)
    g = numbax.jit(lambda v: jnp.max(v, axis=(1, 2)))
    assert ".reshape((8, 90))" in g.lower(x).as_text()
    np.testing.assert_allclose(np.asarray(g(x)), np.max(x, axis=(1, 2)), rtol=1e-12)


def test_sum_of_exp_pass_vectorises_in_llvm_ir():
    """The 2-pass logsumexp kernel: the fm.exp_f64 + rd.add pass compiles to vector code."""
    import re

    x = RNG.normal(size=4099)
    src = numbax.jit(_logsumexp).lower(x).as_text().split("# driver")[0]
    ns: dict = {}
    exec(compile(src, "<kernel>", "exec"), ns)  # no __file__: compiled fresh, not from disk
    out = np.empty(())
    ns["kernel_serial"](x, out, *x.shape)
    np.testing.assert_allclose(out, np.log(np.exp(x - x.max()).sum()) + x.max(), rtol=1e-13)
    ir = "\n".join(ns["kernel_serial"].inspect_llvm().values())
    assert re.search(r"<\d+ x double>", ir)  # vector lanes (SSE2 at least on x86-64)
    assert not re.search(r"call .*@(llvm\.)?exp(\.f64)?\(", ir)  # no scalar libm exp


# ----------------------------------------------------------------------------- float32 blocks


@pytest.mark.parametrize("n", [1, loops.BLOCK - 1, loops.BLOCK, loops.BLOCK + 1,
                               3 * loops.BLOCK + 7, 2**18 + 1234])
def test_float32_sums_in_blocks_count_every_element_once(n, monkeypatch):
    # integer-valued floats sum exactly in float32 in any order: the result shows whether a
    # block boundary (or a parallel chunk's) dropped or repeated an element
    monkeypatch.setattr(loops, "PAR_REDUCE_THREADS", 2)
    x = RNG.integers(-100, 101, n).astype(np.float32)
    x[-1] = 1000.0
    rows = np.stack([x, -x, x * 2])
    total = numbax.jit(jnp.sum)
    per_row = numbax.jit(lambda v: jnp.sum(v, axis=-1))
    assert np.asarray(total(x)) == np.float32(x.astype(np.float64).sum())
    np.testing.assert_array_equal(np.asarray(per_row(rows)),
                                  rows.astype(np.float64).sum(-1).astype(np.float32))


def test_float32_sums_add_blocks_in_float32_and_widen_each_block():
    x = RNG.normal(size=(300, 5000)).astype(np.float32) * 1e3 + 1e4  # large, far from zero
    f = numbax.jit(lambda v: (jnp.sum(v, axis=-1), jnp.sum(jnp.exp(v / 1e4))))
    text = f.lower(x).as_text()
    assert "for blk in range(" in text and "np.float64(acc0b)" in text
    # whole blocks loop a constant count (LLVM interleaves their vector accumulators), then
    # the tail once
    assert f"for jb in range(np.uint64({loops.BLOCK})):" in text
    assert "in range(bend, " in text
    short = numbax.jit(lambda v: jnp.sum(v, axis=-1)).lower(x[:, :1000]).as_text()
    assert "acc0b" in short and "for blk in" not in short  # a shorter row is one block
    rows, total = (np.asarray(r) for r in f(x))
    exact = x.astype(np.float64).sum(-1)
    assert np.abs(rows - exact).max() <= 4 * np.spacing(np.float32(exact.max()))
    np.testing.assert_allclose(total, np.exp(x.astype(np.float64) / 1e4).sum(), rtol=1e-6)
    for g in (lambda v: jnp.sum(v.astype(np.float64)), lambda v: jnp.prod(v, axis=-1),
              jnp.max):  # float64 sums, products and max keep their one accumulator
        assert "for blk in range(" not in numbax.jit(g).lower(x).as_text()


@pytest.mark.parametrize("n", [2, 40, 5000])
def test_compiled_max_min_of_signed_zeros_follow_ieee(n):
    """llvm.maximum/minimum: the max of +0 and -0 is +0 and the min -0 in any order (XLA's
    results; numpy's depend on the order), in rows and in full reductions."""
    for first in (0.0, -0.0):
        x = np.full((3, n), -first, np.float32)
        x[:, 0] = first
        got_max = np.asarray(numbax.jit(lambda v: jnp.max(v, axis=1))(x))
        got_min = np.asarray(numbax.jit(jnp.min)(x))
        assert not np.signbit(got_max).any() and np.signbit(got_min)
