"""Library primitives inside compiled control flow (lowerings/flow_arrays.py): loop bodies
holding a gather, a scatter, take_along_axis, argmax/argmin, a cumulative scan, LU, a
triangular solve or Cholesky stay one compiled loop (no host loop in the driver) and give the
numbers of a numpy loop."""
import numpy as np
import pytest
import scipy.linalg

import numbax
import numbax.numpy as jnp
from numbax import lax

RNG = np.random.default_rng(7)


def _compiled(f, *args) -> bool:
    """Whether jit(f) runs its loop compiled: no host loop (`h0`) called by the driver."""
    return "h0(" not in numbax.jit(f).lower(*args).as_text().split("def driver")[1]


def _check(f, want, *args, rtol=1e-6, atol=1e-6):
    assert _compiled(f, *args)
    got = numbax.jit(f)(*args)
    for g, w in zip(numbax.tree_util.tree_leaves(got), numbax.tree_util.tree_leaves(want),
                    strict=True):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), w, rtol=rtol, atol=atol)


def test_gather_in_a_scan_embedding_lookup_clip_and_fill():
    emb = RNG.standard_normal((10, 4))
    tokens = np.array([3, 0, 9, 12, -2, 5], np.int32)  # 12 is out of bounds, -2 counts back

    def f(emb, tokens):
        def step(h, t):
            clipped = emb[jnp.clip(t, 0, 9)]
            filled = emb.at[t].get(mode="fill", fill_value=-7.0)
            return jnp.tanh(h + clipped), filled
        return lax.scan(step, jnp.zeros(4), tokens)

    h, rows = np.zeros(4), []
    for t in tokens:
        h = np.tanh(h + emb[min(max(t, 0), 9)])
        rows.append(emb[t] if -10 <= t < 10 else np.full(4, -7.0))
    _check(f, (h, np.stack(rows)), emb, tokens)


def test_gather_of_two_axes_and_of_a_middle_axis_in_a_loop():
    x = RNG.standard_normal((5, 6, 3))
    i, j = np.array([0, 4, 2]), np.array([5, 1, 1])

    def f(x):
        def body(k, acc):
            return acc + x[i, j] * k + x[:, j, 1].sum()
        return lax.fori_loop(0, 4, body, jnp.zeros((3, 3)))

    acc = np.zeros((3, 3))
    for k in range(4):
        acc = acc + x[i, j] * k + x[:, j, 1].sum()
    _check(f, acc, x)


@pytest.mark.parametrize("op", ["add", "set", "mul", "min", "max"])
def test_scatter_in_a_fori_loop_with_repeated_indices(op):
    idx = np.array([1, 3, 1, 0, 3, 3])
    upd = RNG.standard_normal(6)

    def f(x):
        return lax.fori_loop(0, 3, lambda k, x: getattr(x.at[idx], op)(upd * (k + 1)), x)

    x = RNG.standard_normal(5)
    want = x.copy()
    for k in range(3):
        for n, r in enumerate(idx):  # in index order, as ufunc.at combines
            u = upd[n] * (k + 1)
            want[r] = {"add": want[r] + u, "set": u, "mul": want[r] * u,
                       "min": min(want[r], u), "max": max(want[r], u)}[op]
    _check(f, want, x)


def test_scatter_along_a_middle_axis_and_dropped_rows():
    idx = np.array([0, 2, 7])  # 7 is out of bounds: dropped

    def f(x, u):
        def body(k, x):
            y = x.at[:, idx].add(u, mode="drop")
            return y.at[idx, 0].set(-1.0, mode="drop")
        return lax.fori_loop(0, 2, body, x)

    x, u = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 3))
    want = x.copy()
    for _ in range(2):
        for n, c in enumerate(idx):
            if c < 5:
                want[:, c] += u[:, n]
        for r in idx:
            if r < 4:
                want[r, 0] = -1.0
    _check(f, want, x, u)


def test_take_along_axis_with_negative_indices_in_a_loop():
    x = RNG.standard_normal((3, 6))
    idx = np.array([[0, -1], [5, 2], [-6, 3]])

    def f(x):
        return lax.fori_loop(0, 3, lambda k, a: a + jnp.take_along_axis(x, idx, 1) * k,
                             jnp.zeros((3, 2)))

    _check(f, 3 * np.take_along_axis(x, idx, 1), x)


@pytest.mark.parametrize("axis", [0, 1])
def test_argmax_argmin_in_a_loop_ties_and_nans(axis):
    x = np.array([[1.0, 3.0, 3.0, -2.0], [np.nan, 0.0, np.nan, 5.0], [2.0, 2.0, -2.0, -2.0]])

    def f(x):
        def body(k, c):
            y = x * (k + 1)
            return c + (jnp.argmax(y, axis) * 10 + jnp.argmin(y, axis)).astype(jnp.int32)
        return lax.fori_loop(0, 2, body, jnp.zeros(x.shape[1 - axis], jnp.int32))

    want = 2 * (np.argmax(x, axis) * 10 + np.argmin(x, axis))  # numpy: first NaN wins too
    _check(f, want.astype(np.int32), x)


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.bool_])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_argmax_argmin_in_a_loop_are_loops_over_the_array(dtype, axis):
    # loops in memory order (flow_loops.arg_loops), no library call: each output starts at the
    # axis's first element and takes a larger (smaller) one or the first NaN, as the eager rule
    rng = np.random.default_rng(axis)
    x = (rng.standard_normal((3, 4, 5)) * 3).astype(dtype)
    if dtype == np.float32:
        x.flat[[7, 11, 40]] = np.nan
    scale = (lambda y, k: y) if dtype == np.bool_ else (lambda y, k: y * (k + 1))

    def f(x):
        def body(k, c):
            y = scale(x, k)
            return c + jnp.argmax(y, axis) * 10 + jnp.argmin(y, axis)
        return lax.fori_loop(0, 2, body, jnp.zeros(np.delete(x.shape, axis), jnp.int64))

    text = numbax.jit(f).lower(x).as_text()
    assert "fi.arg_extremum" not in text
    eager = np.asarray(lax.argmax(x, axis, np.int64)) * 10 + np.asarray(lax.argmin(x, axis,
                                                                                    np.int64))
    if dtype != np.float32:  # numpy's arg functions agree where there is no NaN
        np.testing.assert_array_equal(eager, np.argmax(x, axis) * 10 + np.argmin(x, axis))
    _check(f, 2 * eager, x)


@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_scans_in_a_loop(reverse):
    x = np.array([[0.5, -1.0, 2.0, 0.0], [3.0, 1.5, -0.5, 2.0]], np.float32)
    flip = (lambda a: a[:, ::-1]) if reverse else (lambda a: a)

    def f(x):
        def body(k, c):
            s, p, hi, lo = c
            return (s + lax.cumsum(x, 1, reverse=reverse), p * lax.cumprod(x, 1, reverse),
                    jnp.maximum(hi, lax.cummax(x * k, 1, reverse)),
                    jnp.minimum(lo, lax.cummin(x, 0, reverse)))
        zeros = jnp.zeros((2, 4), jnp.float32)
        return lax.fori_loop(0, 2, body, (zeros, zeros + 1, zeros - 9, zeros + 9))

    s = 2 * flip(np.cumsum(flip(x), 1, dtype=np.float32))
    p = flip(np.cumprod(flip(x), 1, dtype=np.float32)) ** 2
    hi = flip(np.maximum.accumulate(flip(x), 1))
    lo = np.minimum(9, (np.minimum.accumulate(x[::-1], 0)[::-1] if reverse else
                        np.minimum.accumulate(x, 0)))
    _check(f, (s, p, np.maximum(hi, 0), lo), x, rtol=1e-6)


def test_integer_cumsum_wraps_in_its_dtype():
    x = np.array([2**30, 2**30, 5], np.int32)
    f = lambda x: lax.fori_loop(0, 1, lambda k, c: lax.cumsum(x), x)  # noqa: E731
    _check(f, np.cumsum(x, dtype=np.int32), x)


def _kalman_numpy(F, H, Q, R, zs):
    m, P = np.zeros(4), np.eye(4)
    ms = []
    for z in zs:
        m, P = F @ m, F @ P @ F.T + Q
        S = H @ P @ H.T + R
        K = P @ H.T @ np.linalg.inv(S)
        m = m + K @ (z - H @ m)
        P = (np.eye(4) - K @ H) @ P
        ms.append(m)
    return np.stack(ms)


def test_kalman_filter_scan_with_an_inverse_stays_compiled():
    F = np.eye(4) + 0.1 * np.eye(4, k=2)
    H, Q, R = np.eye(2, 4), 0.01 * np.eye(4), 0.1 * np.eye(2)
    zs = RNG.standard_normal((50, 2))

    def f(zs):
        def step(carry, z):
            m, P = carry
            m, P = F @ m, F @ P @ F.T + Q
            S = H @ P @ H.T + R
            K = P @ H.T @ jnp.linalg.inv(S)
            m = m + K @ (z - H @ m)
            return (m, (jnp.eye(4) - K @ H) @ P), m
        return lax.scan(step, (jnp.zeros(4), jnp.eye(4)), zs)[1]

    _check(f, _kalman_numpy(F, H, Q, R, zs), zs, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lu_solve_det_inverse_in_a_loop(dtype):
    a = (RNG.standard_normal((3, 5, 5)) + 5 * np.eye(5)).astype(dtype)
    a[1, 0, 0] = 0.0  # a pivot that must swap rows
    b = RNG.standard_normal((3, 5, 2)).astype(dtype)

    def f(a, b):
        def body(k, c):  # (the step's matrix depends on k: nothing leaves the loop)
            x, d, inv, lus, _, _ = c
            ak = a * (k + 1).astype(dtype)
            lu, piv, perm = lax.linalg.lu(ak)
            return (x + jnp.linalg.solve(ak, b), d + jnp.linalg.det(ak),
                    inv + jnp.linalg.inv(ak), lus + lu, piv, perm)
        int_rows = jnp.zeros((3, 5), jnp.int32)
        return lax.fori_loop(0, 2, body, (b * 0, jnp.zeros(3, dtype), a * 0, a * 0,
                                          int_rows, int_rows))

    wide = a.astype(np.float64)
    factors = [scipy.linalg.lu_factor(m) for m in wide]  # LAPACK's getrf
    lus = sum(np.stack([scipy.linalg.lu_factor(m * s)[0] for m in wide]) for s in (1, 2))
    want = (1.5 * np.linalg.solve(wide, b), 33 * np.linalg.det(wide),
            1.5 * np.linalg.inv(wide), lus)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    pivots = np.stack([piv for _, piv in factors]).astype(np.int32)
    perms = np.array([_perm(piv) for piv in pivots], np.int32)
    _check(f, (*(w.astype(dtype) for w in want), pivots, perms), a, b, rtol=tol, atol=tol)


def _perm(piv):
    """The row permutation that LAPACK's pivots (row i swapped with piv[i], in order) make."""
    perm = list(range(len(piv)))
    for i, p in enumerate(piv):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a", [True, False])
def test_triangular_solve_in_a_loop(left_side, lower, transpose_a):
    a = RNG.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    b = RNG.standard_normal((2, 4, 3) if left_side else (2, 3, 4))

    def f(a, b):
        def body(k, x):
            return x + lax.linalg.triangular_solve(a, b * k, left_side=left_side, lower=lower,
                                                   transpose_a=transpose_a)
        return lax.fori_loop(0, 3, body, b * 0)

    want = []
    for m, r in zip(a, b, strict=True):
        t = np.tril(m) if lower else np.triu(m)
        t = t.T if transpose_a else t
        want.append(np.linalg.solve(t, r) if left_side else np.linalg.solve(t.T, r.T).T)
    _check(f, 3 * np.stack(want), a, b, rtol=1e-10)


def test_unit_diagonal_triangular_solve_ignores_the_diagonal():
    a = np.tril(RNG.standard_normal((4, 4))) + np.diag([5.0, np.nan, 7.0, 0.0])
    b = RNG.standard_normal((4, 2))

    def f(a, b):
        return lax.fori_loop(0, 3, lambda k, x: lax.linalg.triangular_solve(
            a, x, left_side=True, lower=True, unit_diagonal=True), b)

    unit = np.linalg.inv(np.tril(a, -1) + np.eye(4))
    _check(f, unit @ unit @ unit @ b, a, b, rtol=1e-10)


def test_cholesky_in_a_loop_and_nans_for_a_matrix_not_positive_definite():
    m = RNG.standard_normal((5, 5))
    spd = m @ m.T + 5 * np.eye(5)
    bad = spd.copy()
    bad[2, 2] = -50.0
    stack = np.stack([spd, bad])

    def f(s):
        return lax.fori_loop(0, 3, lambda k, c: c + jnp.linalg.cholesky(s * (k + 1)), s * 0)

    got = numbax.jit(f)(stack)
    assert _compiled(f, stack)
    want = sum(np.linalg.cholesky(spd * k) for k in (1, 2, 3))
    np.testing.assert_allclose(np.asarray(got[0]), want, rtol=1e-12)
    assert np.isnan(np.asarray(got[1])).all()  # as the eager (LAPACK) factor gives
    assert np.isnan(np.asarray(jnp.linalg.cholesky(bad))).all()


def test_reversal_in_a_loop():
    x = RNG.standard_normal((3, 4))
    f = lambda x: lax.fori_loop(0, 3, lambda k, a: jnp.flip(a, 1) * 2 + jnp.flip(a), x)  # noqa
    want = x
    for _ in range(3):
        want = want[:, ::-1] * 2 + want[::-1, ::-1]
    _check(f, want, x)


def test_sorts_argsorts_and_medians_in_a_loop_nans_last_ties_stable():
    x = np.array([[3.0, np.nan, -0.0, 1.0, 0.0, 1.0, -np.inf], [2.0, 2.0, 2.0, -1.0, 5.0, 0.5,
                                                                 np.nan]])

    def f(x):
        def body(k, c):
            s, order, med = c
            y = x + 0.0 * k  # (the step's operand depends on k: nothing leaves the loop)
            return (s + jnp.sort(y, axis=1), jnp.argsort(y, axis=1).astype(jnp.int32),
                    med + jnp.median(y[:, :6], axis=1))
        return lax.fori_loop(0, 2, body, (jnp.zeros(x.shape), jnp.zeros(x.shape, jnp.int32),
                                          jnp.zeros(2)))

    want = (2 * np.sort(x, axis=1), np.argsort(x, axis=1, kind="stable").astype(np.int32),
            2 * np.median(x[:, :6], axis=1))
    _check(f, want, x)


def test_integer_sort_along_the_first_axis_in_a_loop():
    x = RNG.integers(-5, 5, (6, 3)).astype(np.int32)
    f = lambda x: lax.fori_loop(0, 2, lambda k, a: jnp.sort(a * -1, axis=0), x)  # noqa: E731
    _check(f, np.sort(-np.sort(-x, axis=0), axis=0), x)


def test_top_k_in_a_loop_ties_to_the_lower_index_and_nans_first():
    x = np.array([[1.0, 4.0, 4.0, np.nan, 2.0], [0.0, -1.0, 0.0, 3.0, 3.0]])

    def f(x):
        def body(k, c):
            values, indices = lax.top_k(x + 0.0 * k, 3)
            return c[0] + values, indices
        return lax.fori_loop(0, 2, body, (jnp.zeros((2, 3)), jnp.zeros((2, 3), jnp.int32)))

    order = np.array([[3, 1, 2], [3, 4, 0]])  # JAX's lax.top_k of these rows
    _check(f, (2 * np.take_along_axis(x, order, 1), order.astype(np.int32)), x)


def test_a_new_shape_reuses_the_compiled_runtime_functions(tmp_path):
    """Loop kernels pass the runtime's library functions their shapes, counts and flags as
    values: one compiled specialisation serves every shape of a dtype and rank (a literal
    shape made one per shape, each a compile of up to seconds)."""
    from numbax._src.compiler.cpu.runtime import flow_index, flow_linalg

    def f(x):
        def body(k, c):
            y = x + 0.0 * k
            lu = lax.linalg.lu(y[:, :2])[0]
            low = lax.linalg.triangular_solve(jnp.tril(lu[:2]) + 3.0 * jnp.eye(2), y[:2, :2],
                                              left_side=True, lower=True)
            grown = y[0].at[jnp.argmax(y, axis=0)].add(y[1])
            return (c[0] + jnp.sort(y, axis=1)[:, :2] + lax.top_k(y, 2)[0] + lu,
                    jnp.cumsum(grown), low)
        return lax.fori_loop(0, 2, body, (jnp.zeros((x.shape[0], 2)), x[0], x[:2, :2]))

    for rows, cols in [(2, 5), (3, 4)]:
        x = RNG.standard_normal((rows, cols))
        _, lower, upper = scipy.linalg.lu(x[:, :2])
        packed = np.tril(lower, -1)  # LAPACK's form: L below the diagonal, U on and above
        packed[:2] += upper
        grown = x[0].copy()
        np.add.at(grown, np.argmax(x, axis=0), x[1])
        low = scipy.linalg.solve_triangular(np.tril(packed[:2]) + 3.0 * np.eye(2), x[:2, :2],
                                            lower=True)
        want = (2 * (np.sort(x, axis=1)[:, :2] + -np.sort(-x, axis=1)[:, :2] + packed),
                np.cumsum(grown), low)
        with numbax.config.override("cache_dir", str(tmp_path)):  # (compiled here, not loaded:
            _check(f, want, x, rtol=1e-12, atol=1e-12)  # a loaded kernel calls no dispatcher)
    for runtime in (flow_index.sort1, flow_index.top_k, flow_linalg.lu,
                    flow_linalg.triangular_solve, flow_index.cumulative, flow_index.scatter):
        assert runtime.signatures, runtime  # (the program used it)
        assert not [s for s in runtime.signatures if "Literal" in str(s)], runtime.signatures


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_in_a_loop(side):
    table = np.array([-1.0, 0.0, 0.0, 2.5, 7.0, np.nan])
    v = np.array([-2.0, 0.0, 1.0, 7.0, 9.0, np.nan])

    def f(table, v):
        return lax.fori_loop(0, 3, lambda k, c: c + jnp.searchsorted(table, v + 0.0 * k,
                                                                      side=side),
                             jnp.zeros(6, jnp.int64))

    _check(f, 3 * np.searchsorted(table, v, side=side), table, v)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("entries", [1, 100, 1000])
def test_searchsorted_of_many_values_in_a_loop(side, entries):
    # the table counted (up to 128 entries) or searched in blocks, duplicates and NaNs in both
    rng = np.random.default_rng(entries)
    table = np.sort(rng.integers(-50, 50, entries).astype(np.float32))
    if entries > 1:
        table[-1] = np.nan
    v = rng.integers(-60, 60, 700).astype(np.float32)
    v[:3] = [np.nan, table[0], -np.inf]

    def f(table, v):
        return lax.fori_loop(0, 2, lambda k, c: c + jnp.searchsorted(table, v + 0.0 * k,
                                                                      side=side),
                             jnp.zeros(700, jnp.int64))

    _check(f, 2 * np.searchsorted(table, v, side=side), table, v)


def test_cumlogsumexp_in_a_loop_with_infinities():
    x = np.array([-np.inf, 0.0, 1.5, -np.inf, 3.0, -2.0])

    def f(x):
        return lax.fori_loop(0, 2, lambda k, c: c + lax.cumlogsumexp(x * (k + 1), 0,
                                                                     reverse=True),
                             jnp.zeros(6))

    want = sum(np.logaddexp.accumulate((x * k)[::-1])[::-1] for k in (1, 2))
    _check(f, want, x, rtol=1e-12)


def test_table_lookups_beside_key_splits_in_a_threaded_loop(tmp_path):
    """A loop kernel compiled on threads from an empty cache, whose body splits a key three
    ways (two `.ravel()`s) and reads a table twice: Numba's parallel pass failed on the
    gathers' constant arrays ("key already in dictionary"); their sizes are tuples now."""
    table = jnp.arange(5.0, dtype=jnp.float32)

    def f(s, key):
        def body(i, c):
            s, key = c
            key, k1, _ = numbax.random.split(key, 3)
            low, high = table[(s * 0).astype(jnp.int32)], table[(s * 0 + 1).astype(jnp.int32)]
            return s + low + high + numbax.random.uniform(k1, s.shape, jnp.float32), key
        return lax.fori_loop(0, 3, body, (s, key))[0]

    s, key = np.zeros((256, 256), np.float32), numbax.random.PRNGKey(0)
    old = numbax.config.cpu_threads
    try:
        numbax.config.update("cpu_threads", 2)
        with numbax.config.override("cache_dir", str(tmp_path)):
            got = numbax.jit(f)(s, key)
            assert "np.array([" not in numbax.jit(f).lower(s, key).as_text()
    finally:
        numbax.config.update("cpu_threads", old)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(f(s, key)))


@pytest.mark.parametrize("mode", ["clip", "fill", "drop"])
def test_single_elements_gathered_and_scattered_in_a_loop(mode):
    """A vector's elements read and updated by index inside a loop (the one-axis,
    one-element loops of flow_index.gather/scatter): out-of-bounds indices clamped, filled or
    dropped, each update kind combined in index order, duplicates included; jit == eager
    bit for bit, and against a numpy loop."""
    x = RNG.standard_normal(50)
    idx = np.concatenate([RNG.integers(0, 50, 40), [-3, 50, 57, 7, 7]]).astype(np.int32)
    upd = RNG.standard_normal(45)
    get = "fill" if mode == "fill" else "clip"
    put = "drop" if mode == "drop" else "clip"

    def f(x, idx, upd):
        def body(i, c):
            read = c.at[idx].get(mode=get, fill_value=-1.0)
            c = c.at[idx].add(upd * read, mode=put)
            c = c.at[idx].min(upd + 0.5, mode=put).at[idx].max(upd - 2.0, mode=put)
            return c.at[idx].multiply(1.001, mode=put).at[idx[:3]].set(read[:3], mode=put)
        return lax.fori_loop(0, 3, body, x)

    assert _compiled(f, x, idx, upd)
    got = numbax.jit(f)(x, idx, upd)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(f(x, idx, upd)))

    def loop(c):
        wrapped = np.where(idx < 0, idx + 50, idx)  # (`.at[]` counts negative ones back)
        for _ in range(3):
            inside = wrapped < 50
            clamped = np.minimum(wrapped, 49)
            read = np.where(inside, c[clamped], -1.0) if mode == "fill" else c[clamped]
            keep = inside if mode == "drop" else np.ones(len(idx), bool)
            at, u = clamped[keep], upd[keep]
            np.add.at(c, at, u * read[keep])
            np.minimum.at(c, at, u + 0.5)
            np.maximum.at(c, at, u - 2.0)
            np.multiply.at(c, at, 1.001)
            first = keep[:3]
            c[clamped[:3][first]] = read[:3][first]
        return c

    np.testing.assert_allclose(np.asarray(got), loop(x.copy()), rtol=1e-12, atol=1e-12)
