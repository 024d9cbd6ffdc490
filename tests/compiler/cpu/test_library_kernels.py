"""Library primitives under jit (loop kernels, views, BLAS, LAPACK) against eager numpy."""

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler import passes
from numbax._src.compiler.cpu.runtime import blas, library
from numbax._src.compiler.cpu.runtime import threads as threads_rt
from numbax._src.config import config
from numbax._src.lax import indexing as element  # the element gather/scatter
from numbax._src.lax.along_axis import scatter_add_along_axis, take_along_axis

RNG = np.random.default_rng(0)


def _jaxpr_prims(f, *args):
    lowered = numbax.jit(f).lower(*args)
    return [e.primitive.name for e in lowered.jaxpr.eqns]


# ----------------------------------------------------------------------------- dot_general


def test_transpose_feeding_dot_becomes_dimension_numbers():
    a, b = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 4))
    f = lambda a, b: a.T @ b  # noqa: E731
    assert _jaxpr_prims(f, a, b) == ["dot_general"]
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(a, b)), a.T @ b, rtol=1e-13)
    g = lambda a, b: a @ b.T.T  # noqa: E731
    np.testing.assert_allclose(np.asarray(numbax.jit(g)(a.T, b)), a.T @ b, rtol=1e-13)


def test_transpose_of_dot_swaps_operands():
    a, b = RNG.normal(size=(6, 3)), RNG.normal(size=(3, 4))
    f = lambda a, b: (a @ b).T  # noqa: E731
    assert _jaxpr_prims(f, a, b) == ["dot_general"]
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(a, b)), (a @ b).T, rtol=1e-13)


def test_batched_and_unfoldable_transposes():
    # (contracting 20 elements: shorter batched products become loops, passes.expand_small_dots)
    x, y = RNG.normal(size=(2, 3, 4, 20)), RNG.normal(size=(2, 20, 6))
    # a permutation that reorders free dimensions must stay a transpose
    f = lambda x, y: lax.dot_general(jnp.transpose(x, (0, 2, 1, 3)), y,  # noqa: E731
                                     (((3,), (1,)), ((0,), (0,))))
    want = np.einsum("bijk,bkl->bjil", x, y)
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(x, y)), want, rtol=1e-12)
    assert "transpose" in _jaxpr_prims(f, x, y)
    g = lambda x, y: jnp.swapaxes(  # noqa: E731
        lax.dot_general(x[:, 0], y, (((2,), (1,)), ((0,), (0,)))), 1, 2)
    np.testing.assert_allclose(np.asarray(numbax.jit(g)(x, y)),
                               np.swapaxes(np.einsum("bik,bkl->bil", x[:, 0], y), 1, 2),
                               rtol=1e-12)
    assert "transpose" not in _jaxpr_prims(g, x, y)


def test_gradient_of_matmul_chain_has_no_transposes():
    w, x = RNG.normal(size=(4, 3)), RNG.normal(size=(5, 4))
    f = lambda w, x: jnp.sum(jnp.tanh(x @ w) ** 2)  # noqa: E731
    g = numbax.jit(numbax.grad(f))
    got = np.asarray(g(w, x))
    eps = 1e-6
    num = np.zeros_like(w)
    for i in np.ndindex(*w.shape):
        d = np.zeros_like(w)
        d[i] = eps
        num[i] = (np.sum(np.tanh(x @ (w + d)) ** 2) - np.sum(np.tanh(x @ (w - d)) ** 2)) / 2 / eps
    np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-8)
    assert "transpose" not in _jaxpr_prims(numbax.grad(f), w, x)


def test_fold_transposes_pass_keeps_types():
    jaxpr = numbax.make_jaxpr(lambda a, b: (a.T @ b).T)(np.ones((3, 2)), np.ones((3, 4))).jaxpr
    out = passes.dce(passes.fold_transposes(jaxpr))
    assert [e.primitive.name for e in out.eqns] == ["dot_general"]
    assert out.outvars[0].aval.shape == (4, 2)


@pytest.mark.parametrize("threads", [0, 1, 2])
def test_blas_thread_control_gives_same_numbers(threads, monkeypatch):
    a, b = RNG.normal(size=(64, 64)).astype(np.float32), RNG.normal(size=(64, 64))
    old = config.cpu_threads
    try:
        config.update("cpu_threads", threads)
        assert blas.blas_threads(10) == 1  # small products: one thread, whatever the cap
        assert library.gemm_threads(10) == 1
        # (Numba's workers spinning after an earlier test's kernel would give BLAS one thread)
        monkeypatch.setattr(threads_rt, "pool_spinning", lambda: False)
        monkeypatch.setattr(threads_rt, "busy", lambda: False)
        assert blas.blas_threads(1 << 40) == threads
        monkeypatch.setattr(threads_rt, "busy", lambda: True)
        assert blas.blas_threads(1 << 30) == (threads or 1)
        assert library.gemm_threads(1 << 30) == (threads or 1)
        # a product of LONG_MACS and more takes every core on a busy machine too
        assert blas.blas_threads(1 << 40) == threads
        assert library.gemm_threads(1 << 40) == (threads or threads_rt.pool_size())
        with config.override("cpu_matmul", "blas"):  # the products this rule governs
            got = numbax.jit(lambda a, b: (a @ a, b @ b))(a, b)
    finally:
        config.update("cpu_threads", old)
    np.testing.assert_allclose(np.asarray(got[0]), a @ a, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(got[1]), b @ b, rtol=1e-12)


def test_cpu_threads_caps_numba_threads_in_parallel_programs():
    import numba

    seen = []
    x = RNG.normal(size=1 << 20)
    f = numbax.jit(lambda x: jnp.tanh(x) * 2.0)
    old = config.cpu_threads
    try:
        config.update("cpu_threads", 1)
        got = f(x)
        seen.append(numba.get_num_threads())
    finally:
        config.update("cpu_threads", old)
    np.testing.assert_allclose(np.asarray(got), np.tanh(x) * 2.0, rtol=1e-14)
    assert "prange" in numbax.jit(lambda x: jnp.tanh(x) * 2.0).lower(x).as_text()
    assert seen == [numba.config.NUMBA_NUM_THREADS]  # restored after the call


# ----------------------------------------------------------------------------- linalg


def _spd(*batch, n=4):
    a = RNG.normal(size=(*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("batch", [(), (3,)])
def test_linalg_under_jit_matches_numpy(batch):
    from numbax.lax import linalg as ll

    a = _spd(*batch)
    r = RNG.normal(size=(*batch, 4, 3))
    L = np.linalg.cholesky(a)

    def f(a, r):
        lo = ll.cholesky(a)
        x = ll.triangular_solve(lo, r, left_side=True, lower=True)
        q, rr = ll.qr(r, full_matrices=False)
        v, w = ll.eigh(a)
        s = ll.svd(r, compute_uv=False)
        lu, piv, perm = ll.lu(a)
        return lo, x, q @ rr, w, (v * w[..., None, :]) @ jnp.swapaxes(v, -1, -2), s, lu, perm

    got = [np.asarray(o) for o in numbax.jit(f)(a, r)]
    eager = [np.asarray(o) for o in f(a, r)]
    for g, e in zip(got, eager):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[0], L, rtol=1e-12)
    np.testing.assert_allclose(got[1], np.linalg.solve(L, r), rtol=1e-10)
    np.testing.assert_allclose(got[2], r, atol=1e-12)
    np.testing.assert_allclose(got[3], np.linalg.eigvalsh(a), rtol=1e-12)
    np.testing.assert_allclose(got[4], a, rtol=1e-10)
    np.testing.assert_allclose(got[5], np.linalg.svd(r, compute_uv=False), rtol=1e-12)


def test_cholesky_not_positive_definite_gives_nan_under_jit():
    from numbax.lax import linalg as ll

    a = np.stack([_spd(), -np.eye(4)])
    got = np.asarray(numbax.jit(ll.cholesky)(a))
    np.testing.assert_allclose(got[0], np.linalg.cholesky(a[0]), rtol=1e-12)
    assert np.isnan(got[1]).all()


def test_linalg_bad_input_under_jit_names_the_argument():
    from numbax.lax import linalg as ll

    with pytest.raises(ValueError, match=r"cholesky: x has shape \(3, 4\)"):
        numbax.jit(ll.cholesky)(np.ones((3, 4)))


# ----------------------------------------------------------------------------- kernels_cpu

X = RNG.normal(size=(4, 5, 3))
XI = RNG.integers(-5, 5, size=(4, 5, 3)).astype(np.int32)
XN = X.copy()
XN[1, 2, 0] = np.nan
IDX = np.array([[0, 1], [3, 4], [-1, 2], [4, 0], [2, 7], [1, 1], [1, 1]], np.int32)
UPD = RNG.normal(size=(7, 3))

KERNEL_CASES = {
    "slice": (lambda x: lax.slice(x, (1, 0, 0), (4, 5, 3), (2, 2, 1)), (X,)),
    "slice_rows": (lambda x: lax.slice(x, (1, 0, 0), (3, 5, 3)), (XI,)),
    "rev": (lambda x: lax.rev(x, (0, 2)), (X,)),
    "concatenate": (lambda x, y: lax.concatenate([x, y, x], 1), (X, X[:, :2] * 2)),
    "iota": (lambda x: x + lax.broadcasted_iota(np.float64, (4, 5, 3), 1), (X,)),
    "pad": (lambda x: lax.pad(x, -1.5, ((1, -1, 1), (-2, 2, 0), (0, 0, 2))), (X,)),
    "dynamic_slice": (lambda x, i, j: lax.dynamic_slice(x, (i, j, 0), (2, 3, 3)),
                      (X, np.int32(3), np.int32(-4))),
    "dynamic_update_slice": (lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 1, 1)),
                             (X, UPD[:2, :2].reshape(2, 2, 1) + 0 * X[:2, :2, :1],
                              np.int64(9))),
    "argmax": (lambda x: lax.argmax(x, 1, np.int32), (XN,)),
    "argmin": (lambda x: lax.argmin(x, 2, np.int64), (XN,)),
    "argmax_int": (lambda x: lax.argmax(x, 0, np.int32), (XI,)),
    "cumsum": (lambda x: lax.cumsum(x, 1, reverse=True), (X,)),
    "cumsum_int32": (lambda x: lax.cumsum(x * 1000000, 0), (XI,)),
    "cumprod": (lambda x: lax.cumprod(x, 2), (X,)),
    "cummax": (lambda x: lax.cummax(x, 1, reverse=True), (XN,)),
    "gather_clip": (lambda x, i: element.gather(x, i, (0, 1)), (X, IDX)),
    "gather_fill": (lambda x, i: element.gather(x, i, (0, 1), mode="fill"), (X, IDX)),
    "gather_fill_int": (lambda x, i: element.gather(x, i, (0, 1), mode="fill"), (XI, IDX)),
    "gather_fill_value": (lambda x, i: element.gather(x, i, (2, 0), mode="fill", fill_value=7.0),
                          (X, IDX[:, ::-1] % 5)),
    "gather_middle_axis": (lambda x, i: element.gather(x, i[:, :1], (1,)), (X, IDX)),
    "scatter_add_drop": (lambda x, i, u: element.scatter_add(x, i, u, (0, 1)), (X, IDX, UPD)),
    "scatter_add_clip": (lambda x, i, u: element.scatter_add(x, i, u, (0, 1), mode="clip"),
                         (X, IDX, UPD)),
    "scatter_add_axes": (lambda x, i, u: element.scatter_add(x, i, u, (2, 1)),
                         (X, IDX[:, ::-1] % 3, RNG.normal(size=(7, 4)))),
    "scatter_set": (lambda x, i, u: element.scatter(x, i, u, (0, 1)), (X, IDX[:4], UPD[:4])),
    "scatter_max": (lambda x, i, u: element.scatter_max(x, i, u, (0, 1)), (XN, IDX, UPD)),
    "scatter_mul_int": (lambda x, i, u: element.scatter_mul(x, i, u, (0, 1), mode="clip"),
                        (XI, IDX, RNG.integers(-3, 4, size=(7, 3)).astype(np.int32))),
    "take_along_axis": (lambda x, i: take_along_axis(x, i, 1),
                        (X, RNG.integers(-5, 5, size=(4, 6, 1)))),
    "take_along_axis_last": (lambda x, i: take_along_axis(x, i, 2),
                             (XI, RNG.integers(0, 3, size=(1, 5, 2)).astype(np.int32))),
    "scatter_add_along_axis": (lambda u, i: scatter_add_along_axis(u, i, 1, 4),
                               (X, RNG.integers(-4, 4, size=(4, 5, 3)))),
}


@pytest.mark.parametrize("name", sorted(KERNEL_CASES))
def test_kernel_matches_eager(name):
    f, args = KERNEL_CASES[name]
    eager = np.asarray(f(*args))
    got = np.asarray(numbax.jit(f)(*args))
    assert got.dtype == eager.dtype and got.shape == eager.shape
    np.testing.assert_array_equal(got, eager)
    text = numbax.jit(f).lower(*args).as_text()
    assert "call_impl" not in text


def test_gather_against_python_loop():
    got = np.asarray(numbax.jit(lambda x, i: element.gather(x, i, (0, 1), mode="fill"))(X, IDX))
    for b, (r, c) in enumerate(IDX):
        if 0 <= r < 4 and 0 <= c < 5:
            np.testing.assert_array_equal(got[b], X[r, c])
        else:
            assert np.isnan(got[b]).all()


@pytest.mark.parametrize("mode", ["fill", "clip"])
def test_large_gathers_on_threads_against_a_python_loop(mode):
    """Rows gathered on Numba's threads (kernels._gather_into): each output row is its index's
    row of x, or the fill value / the clamped row when out of bounds."""
    x = np.random.default_rng(3).standard_normal((300, 400)).astype(np.float32)
    idx = np.random.default_rng(4).integers(-20, 320, (900, 1))
    with numbax.config.override("cpu_threads", 2):
        got = np.asarray(numbax.jit(lambda a, i: element.gather(
            a, i, (0,), mode=mode, fill_value=-7.0))(x, idx))
    for b, (r,) in enumerate(idx):
        if mode == "clip":
            np.testing.assert_array_equal(got[b], x[min(max(r, 0), 299)])
        elif 0 <= r < 300:
            np.testing.assert_array_equal(got[b], x[r])
        else:
            assert (got[b] == -7.0).all()


def test_scatter_add_against_python_loop():
    got = np.asarray(numbax.jit(lambda x, i, u: element.scatter_add(x, i, u, (0, 1)))(X, IDX, UPD))
    want = X.copy()
    for (r, c), u in zip(IDX, UPD):
        if 0 <= r < 4 and 0 <= c < 5:
            want[r, c] += u
    np.testing.assert_allclose(got, want, rtol=1e-15)


def test_empty_operands():
    z = np.zeros((0, 3))
    got = numbax.jit(lambda x, i: element.gather(x, i, (0,), mode="fill", fill_value=2.0))(
        z, np.zeros((2, 1), np.int32))
    np.testing.assert_array_equal(np.asarray(got), np.full((2, 3), 2.0))
    got = numbax.jit(lambda x, i, u: element.scatter_add(x, i, u, (0,)))(
        np.ones((3, 2)), np.zeros((0, 1), np.int32), np.zeros((0, 2)))
    np.testing.assert_array_equal(np.asarray(got), np.ones((3, 2)))


def test_gather_bad_indices_dtype_names_argument():
    with pytest.raises((TypeError, ValueError), match="gather"):
        numbax.jit(lambda x, i: element.gather(x, i, (0,)))(X, np.zeros((2, 1)))


def test_take_along_axis_out_of_bounds_raises_like_eager():
    f = lambda x, i: take_along_axis(x, i, 0)  # noqa: E731
    bad = np.array([[5]] * 1 + [[0]] * 0).reshape(1, 1)
    x = np.arange(6.0).reshape(3, 2)
    with pytest.raises(IndexError):
        f(x, bad)
    with pytest.raises(IndexError, match="take_along_axis"):
        numbax.jit(f)(x, bad)


@pytest.mark.parametrize("case", ["ab", "aT_b", "bT_a", "v_a", "aT_v", "a_aT", "c64"])
def test_plain_matmuls_lower_to_np_dot(case):
    """Matrix/vector products without batch dims or casts call BLAS through lw.dot (a small
    matrix-vector product its loops, mv.top), with a transposed view where the contraction
    is over a matrix's first axis; same numbers."""
    a, b, v = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 4)), RNG.normal(size=5)
    fns = {"ab": lambda a, b: a @ b.T[:3], "aT_b": lambda a, b: a.T @ b,
           "bT_a": lambda a, b: b.T @ a, "v_a": lambda a, b: jnp.asarray(v) @ a,
           "aT_v": lambda a, b: a.T @ jnp.asarray(v), "a_aT": lambda a, b: a @ a.T,
           "c64": lambda a, b: a.T @ b}
    if case == "c64":
        a, b = (a + 1j * a).astype(np.complex64), (b - 2j * b).astype(np.complex64)
    want = fns[case](a, b)
    f = numbax.jit(fns[case])
    np.testing.assert_allclose(np.asarray(f(a, b)), want, rtol=1e-5 if case == "c64" else 1e-12)
    driver = f.lower(a, b).as_text().split("def driver(")[1]
    call = "mv.top(" if case in ("v_a", "aT_v") else "lw.dot("
    assert call in driver and "lw.dot_general(" not in driver


def test_plain_matmul_with_an_empty_contraction():
    a, b = np.ones((3, 0), np.float32), np.ones((0, 4), np.float32)
    got = numbax.jit(lambda a, b: a @ b)(a, b)
    np.testing.assert_array_equal(np.asarray(got), np.zeros((3, 4), np.float32))


@pytest.mark.parametrize("fn", [
    lambda v: lax.dynamic_slice(v, (), ()), lambda v: lax.dynamic_slice(v, (), ()) * 2,
    lambda v: lax.slice(v, (), ()) + 1, lambda v: lax.pad(v, 0.0, ()) - 1,
    lambda v: lax.transpose(v, ()) * 3,
], ids=["dynamic_slice", "dynamic_slice-fused", "slice", "pad", "transpose"])
def test_library_rules_keep_zero_d_results_zero_d(fn):
    """Found by the fuzzer (issue 21): np.ascontiguousarray turns a 0-d result into shape
    (1,), so jit(dynamic_slice) of a scalar returned f64[1] and a consumer failed to compile."""
    x = np.array(1.5)
    got, want = numbax.jit(fn)(x), fn(jnp.asarray(x))
    assert got.shape == () and float(got) == float(want)


def test_blas_call_sets_every_loaded_openblas_and_restores_it():
    """numpy's OpenBLAS and scipy's own (scipy.linalg's LAPACK, Numba's np.dot) are two
    libraries with two thread pools; a call under the thread rule sets both."""
    api = blas._find_blas_api()
    if not api:
        pytest.skip("no OpenBLAS loaded")
    before = [get_n() for _, get_n in api]
    seen = blas.blas_call(lambda: [get_n() for _, get_n in api], 1)
    assert seen == [1] * len(api)
    assert [get_n() for _, get_n in api] == before
    with pytest.raises(ZeroDivisionError):  # restored when the call raises, too
        blas.blas_call(lambda: 1 / 0, 1)
    assert [get_n() for _, get_n in api] == before
    # numpy's and scipy's are both found where both wheels bundle one (the CI's install)
    names = {path for path in open("/proc/self/maps").read().split() if "openblas" in path}
    assert len(api) == len({n for n in names if n.endswith(".so") or ".so." in n})


def test_numpy_products_set_numpys_openblas_alone():
    """np.dot and np.matmul run on numpy's own OpenBLAS: a product under the thread rule
    sets that library's count alone (scipy's is another pool, and setting it cost another
    1.3 us a call), and restores it, when the call raises too."""
    import ctypes

    numpys = blas._find_numpy_api()
    if numpys is None:
        pytest.skip("numpy's OpenBLAS is not told apart here")
    address = ctypes.cast(numpys[1], ctypes.c_void_p).value
    gets = [g for _, g in blas._find_blas_api()]
    mine = [ctypes.cast(g, ctypes.c_void_p).value == address for g in gets]
    assert mine.count(True) == 1
    before = [g() for g in gets]
    want = 1 if numpys[1]() != 1 else 2
    inside = blas.numpy_blas_call(lambda: [g() for g in gets], want)
    assert inside == [want if m else b for m, b in zip(mine, before)]
    assert [g() for g in gets] == before
    with pytest.raises(ZeroDivisionError):
        blas.numpy_blas_call(lambda: 1 / 0, want)
    assert [g() for g in gets] == before
    x = RNG.normal(size=(40, 30)).astype(np.float32)
    v = RNG.normal(size=30).astype(np.float32)
    np.testing.assert_allclose(blas.numpy_blas_call(np.dot, want, x, v),
                               x.astype(np.float64) @ v, rtol=1e-4, atol=1e-5)


def test_lapack_calls_in_a_jitted_program_run_under_the_thread_rule(monkeypatch):
    """A Cholesky between kernels runs with BLAS's threads as `blas_threads` says (one while
    Numba's workers may spin), and gives the eager result."""
    from numbax._src.compiler.cpu import backend

    calls = []
    real = blas.blas_call
    monkeypatch.setattr(blas, "blas_call",
                        lambda fn, n, *args: calls.append(n) or real(fn, n, *args))
    monkeypatch.setattr(threads_rt, "pool_spinning", lambda: True)
    a = RNG.normal(size=(40, 40))
    k = a @ a.T + 40 * np.eye(40)
    f = numbax.jit(lambda k: jnp.linalg.cholesky(jnp.exp(k * 1e-3) + 40 * jnp.eye(40)))
    got = f(k)
    assert calls and set(calls) == {1}
    np.testing.assert_allclose(np.asarray(got),
                               np.linalg.cholesky(np.exp(k * 1e-3) + 40 * np.eye(40)),
                               rtol=1e-12)
    assert blas.lapack_macs([np.ones((3, 5, 4))]) == 3 * 5 * 4 * 4
    assert blas.lapack_macs([np.ones(7), np.ones((6, 6))]) == 216
    assert isinstance(backend.LapackCall(None, {}, ()), backend.EagerCall)


def test_lapack_results_come_back_row_major_by_blocks():
    """LAPACK's column-major results are copied to row order by blocks (`linalg_blas.relaid`,
    which also makes LU's column-major operand), other outputs as np.asarray gives them; a
    jitted LU of a matrix large enough for the blocks gives eager's bits."""
    from numbax._src.compiler.cpu.runtime import copies
    from numbax._src.lax import linalg_blas

    for dtype in (np.float64, np.float32, np.int16, np.complex64, np.complex128):
        f = np.asfortranarray(RNG.normal(size=(260, 190)).astype(dtype))
        for want in (np.dtype(dtype), np.dtype(np.complex128)):
            got = copies.row_major(f, want)
            assert got.flags.c_contiguous and got.dtype == want
            np.testing.assert_array_equal(got, f.astype(want))
        back = linalg_blas.relaid(np.ascontiguousarray(f), "F")
        assert back.flags.f_contiguous
        np.testing.assert_array_equal(back, f)
    x = RNG.normal(size=(240, 240))  # below LAPACK_THREADED_MACS: one thread, as eager here
    lu, piv, perm = numbax.jit(numbax.lax.linalg.lu)(x)
    for got, want in zip((lu, piv, perm), blas.blas_call(numbax.lax.linalg.lu, 1, x)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_layout_copies_take_threads_only_when_their_lapack_call_does(monkeypatch):
    """Inside a jitted program's LAPACK call, `relaid` takes at most the threads the call got:
    one where the rule gave the call one (Numba's workers may spin), the cores where BLAS keeps
    its own count; outside, the cores. The copy's bytes bound it too (COPY_THREAD_BYTES)."""
    from numbax._src import core
    from numbax._src.compiler.cpu import backend
    from numbax._src.lax import linalg_blas

    seen = []
    probe = core.Primitive("copy_threads_probe")
    monkeypatch.setitem(core.impl_rules, probe,
                        lambda x: seen.append(linalg_blas.copy_threads(1 << 40)) or [x])
    call = backend.LapackCall(probe, {}, (np.dtype(np.float64),))
    cores = min(linalg_blas.COPY_THREADS_MAX, linalg_blas.host_threads.cores())
    for rule, want in ((1, 1), (0, cores), (2, min(2, cores))):
        monkeypatch.setattr(blas, "lapack_threads", lambda args, wait=True, n=rule: n)
        call(np.ones(3))
        assert seen.pop() == want
    assert linalg_blas.copy_threads(1 << 40) == cores  # the limit ends with the call
    assert linalg_blas.copy_threads(linalg_blas.COPY_THREAD_BYTES - 1) == 1


def test_long_lapack_calls_wait_for_spinning_workers(monkeypatch):
    """Above LAPACK_THREADED_MACS, a call made while Numba's workers may spin waits for them
    when its one-thread time is LAPACK_WAIT_PAYS times the wait or more, then takes BLAS's
    threads; a shorter one runs on one thread at once."""
    state = {"left": 0.002}
    slept = []
    monkeypatch.setattr(threads_rt, "spin_left_s", lambda: state["left"])
    monkeypatch.setattr(threads_rt, "busy", lambda: False)
    monkeypatch.setattr(blas.time, "sleep",
                        lambda s: slept.append(s) or state.update(left=0.0))
    n_short = round((blas.LAPACK_MACS_PER_S * blas.LAPACK_WAIT_PAYS * 0.002) ** (1 / 3)) - 8
    n_long = round((blas.LAPACK_MACS_PER_S * blas.LAPACK_WAIT_PAYS * 0.002) ** (1 / 3)) + 8
    assert n_short ** 3 >= blas.LAPACK_THREADED_MACS
    with config.override("cpu_threads", 0):
        assert blas.lapack_threads([np.empty((40, 40))]) == 1 and not slept
        assert blas.lapack_threads([np.empty((n_short, n_short))]) == 1 and not slept
        # float32 runs twice as fast on one thread: the same size does not wait
        assert blas.lapack_threads([np.empty((n_long, n_long), np.float32)]) == 1
        assert not slept
        assert blas.lapack_threads([np.empty((n_long, n_long))]) == 0  # BLAS's own count
        assert slept == [0.002]
        assert blas.lapack_threads([np.empty((n_short, n_short))]) == 0  # nothing spins now


def test_only_lapack_calls_wait_for_spinning_workers(monkeypatch):
    """In a jitted program, a long LAPACK call made while Numba's workers may spin waits for
    them; another eager step on as large an operand (a bfloat16 value's bitcast, a sort) runs
    at once (it had slept out the window after every kernel: 3.4 ms a call on 16 cores)."""
    import ml_dtypes

    slept = []
    monkeypatch.setattr(threads_rt, "spin_left_s", lambda: 0.002)
    monkeypatch.setattr(threads_rt, "busy", lambda: False)
    monkeypatch.setattr(blas.time, "sleep", lambda s: slept.append(s))
    x = RNG.normal(size=(700, 700))
    spd = x @ x.T / 700 + np.eye(700)
    half = numbax.jit(lambda v: jnp.sort(v * 2, axis=1))
    with config.override("cpu_threads", 0):
        np.testing.assert_array_equal(np.asarray(half(x)), np.sort(x * 2, axis=1))
        bf = x.astype(ml_dtypes.bfloat16)
        got = numbax.jit(lambda v: v * 2)(bf)
        np.testing.assert_array_equal(np.asarray(got), (bf.astype(np.float32) * 2).astype(
            ml_dtypes.bfloat16))
        assert not slept
        chol = numbax.jit(lambda a: jnp.linalg.cholesky(a * 1.0))
        np.testing.assert_allclose(np.asarray(chol(spd)), np.linalg.cholesky(spd), rtol=1e-10)
        assert slept == [0.002]


@pytest.mark.parametrize("matmul", ["numbax", "blas"])
def test_batched_products_with_batch_axes_not_leading(matmul):
    """Attention's heads: the batch axis second in one operand and first in the other. The
    strided stacks are copied once into whole matrices, so every product runs on the GEMM
    (or BLAS) whole; the numbers are einsum's."""
    x = RNG.normal(size=(6, 40, 24)).astype(np.float32)  # (heads, queries, width)
    y = RNG.normal(size=(40, 6, 24)).astype(np.float32)  # (keys, heads, width)
    dims = (((2,), (2,)), ((0,), (1,)))
    assert library._whole_matrices(np.transpose(y, (1, 0, 2))).flags.c_contiguous
    with config.override("cpu_matmul", matmul):
        (got,) = library.dot_general(x, y, dims, np.dtype(np.float32))
    np.testing.assert_allclose(got, np.einsum("hqd,khd->hqk", x, y), rtol=1e-5, atol=1e-5)
    heads = numbax.jit(numbax.vmap(lambda q, k: numbax.nn.softmax(q @ k.T, -1) @ k,
                                   in_axes=(0, 1)))
    want = []
    for q, k in zip(x.astype(np.float64), np.transpose(y, (1, 0, 2)).astype(np.float64)):
        s = np.exp(q @ k.T - (q @ k.T).max(-1, keepdims=True))
        want.append(s / s.sum(-1, keepdims=True) @ k)
    np.testing.assert_allclose(np.asarray(heads(x, y)), np.stack(want), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", [0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("mode", ["clip", "drop"])
def test_scatter_rows_on_threads_give_the_serial_bits(op, mode, monkeypatch):
    """The threaded row scatter (each thread the rows of its block, every update in index
    order) gives the one-thread result bit for bit, with duplicate and out-of-bounds rows."""
    from numbax._src.compiler.cpu.runtime import kernels

    table = RNG.normal(size=(50, 7)).astype(np.float32)
    table[3, 2] = np.nan
    idx = RNG.integers(-5, 56, size=(400, 1))
    upd = RNG.normal(size=(400, 7)).astype(np.float32)
    monkeypatch.setattr(threads_rt, "threads_for", lambda work, site=None: 1)
    serial = kernels.scatter(table, idx, upd, op, (0,), mode)
    monkeypatch.setattr(threads_rt, "threads_for", lambda work, site=None: 2)
    np.testing.assert_array_equal(kernels.scatter(table, idx, upd, op, (0,), mode), serial)
    for parts in (3, 8, 64):  # more row blocks than rows, too
        got = table.copy()
        kernels._scatter_rows_parallel(got, np.array([50]), idx, upd, op, mode == "drop",
                                       parts)
        np.testing.assert_array_equal(got, serial)
    if op == 1:  # against numpy's unbuffered add, out-of-bounds rows clipped or dropped
        want = table.copy()
        keep = (idx[:, 0] >= 0) & (idx[:, 0] < 50) if mode == "drop" else slice(None)
        np.add.at(want, np.clip(idx[keep, 0], 0, 49), upd[keep])
        np.testing.assert_array_equal(serial, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int8, np.bool_])
@pytest.mark.parametrize("threads", [1, 2])
def test_rows_added_in_a_loop_of_their_own_give_numpys_add_at(dtype, threads, monkeypatch):
    """Adds take their own row loop (kernels._combine_row): numpy's unbuffered add, duplicate
    rows in index order, int8 wrapping and bools or-ed as np.add.at has them."""
    from numbax._src.compiler.cpu.runtime import kernels

    def draw(shape):
        if dtype == np.bool_:
            return RNG.normal(size=shape) > 0
        if np.issubdtype(dtype, np.integer):  # int8 sums of a few rows wrap
            return RNG.integers(-100, 100, size=shape).astype(dtype)
        return RNG.normal(size=shape).astype(dtype)

    table, upd = draw((40, 33)), draw((500, 33))
    idx = RNG.integers(0, 40, size=(500, 1))
    monkeypatch.setattr(threads_rt, "threads_for", lambda work, site=None: threads)
    want = table.copy()
    np.add.at(want, idx[:, 0], upd)
    np.testing.assert_array_equal(kernels.scatter(table, idx, upd, 1, (0,), "clip"), want)


@pytest.mark.parametrize("method", ["set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("mode", ["drop", "clip"])
def test_scalar_scatters_with_repeats_combine_in_index_order(method, mode):
    # one indexed axis, one element a row: the op-specialised loop (kernels._scalar_scatter);
    # a Python loop over the updates in order is the truth (repeats, NaNs, out of bounds,
    # negative indices)
    rng = np.random.default_rng(21)
    n, m = 300, 50_000
    idx = rng.integers(-n - 4, n + 4, m)
    upd = rng.standard_normal(m).astype(np.float32) * 0.01 + 1.0
    upd[rng.integers(0, m, 20)] = np.nan
    base = rng.standard_normal(n).astype(np.float32)
    f = numbax.jit(lambda x, i, u: getattr(x.at[i], method)(u, mode=mode))
    got = np.asarray(f(base, idx, upd))
    want = base.copy()
    ops = {"set": lambda a, b: b, "add": np.add, "multiply": np.multiply,
           "min": lambda a, b: a if np.isnan(a) else b if np.isnan(b) else min(a, b),
           "max": lambda a, b: a if np.isnan(a) else b if np.isnan(b) else max(a, b)}
    for i, u in zip(idx.tolist(), upd):
        i = i + n if i < 0 else i  # (negative indices count from the end, as in numpy)
        if not 0 <= i < n:
            if mode == "drop":
                continue
            i = min(max(i, 0), n - 1)
        want[i] = np.float32(ops[method](want[i], u))
    np.testing.assert_array_equal(got, want)
