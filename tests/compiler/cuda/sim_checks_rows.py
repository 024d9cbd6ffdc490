"""Checks of the row-group kernel variants (compiler/cuda/rows.py RowPlan) and of the fast float32
logistic and literal shifts, under the CUDA simulator (and on a real card through
benchmarks/bench_cuda.py --check). numpy (float64 where it matters) is the truth.

The simulator's Config (row_threads=64, row_block_max=64, row_slots=4) picks: rows of up to 128
elements -> a group of <= 32 lanes per row, several rows per block ("warp"); 129..256 -> one
64-thread block per row with the row in registers ("block"); wider -> re-read per pass
("loop"). A real card's Config moves the boundaries (512 and 16384) but renders the same
code, except that warp shuffles replace the simulator's shared-memory exchanges."""
from __future__ import annotations

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax._src.compiler.cuda.config import Config
from numbax._src.compiler.cuda.rows import RowPlan
from tests.compiler.cuda.sim_checks import check, close, gjit

RNG = np.random.default_rng(21)
SIM = Config(sim=True)
# (rows, width): narrow with 1, 2, 16 and 32 lanes per row (full and padded slots, a last block
# with missing rows), one block per row in registers (padded), and the re-reading loop
NARROW = ((3, 1), (5, 3), (7, 50), (9, 128))
WIDE = ((3, 200), (2, 300))


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _lse(x):
    m = x.max(-1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(-1, keepdims=True)))[..., 0]


@check
def rows_plans_cover_the_variants():
    kinds = {w: RowPlan(SIM, w).kind for _, w in NARROW + WIDE}
    want = {1: "warp", 3: "warp", 50: "warp", 128: "warp", 200: "block", 300: "loop"}
    assert kinds == want, kinds
    assert [RowPlan(SIM, w).group for w in (1, 3, 50, 128)] == [1, 1, 16, 32]
    real = Config(sim=False)
    assert [RowPlan(real, w).kind for w in (128, 512, 513, 4096, 4097, 16384)] == \
        ["warp", "warp", "block", "block", "loop", "loop"]  # 256 threads x 16 in registers


@check
def rows_softmax_narrow_and_wide():
    f = gjit(lambda x: numbax.nn.softmax(x, axis=-1))
    for shape in NARROW + WIDE:
        for dt, tol in ((np.float32, 2e-6), (np.float64, 1e-13)):
            x = (RNG.normal(size=shape) * 3).astype(dt)
            try:
                close(f(x), _softmax(x.astype(np.float64)).astype(dt), rtol=tol, atol=tol)
            except AssertionError as e:
                raise AssertionError(f"softmax {shape} {np.dtype(dt).name}: {e}") from None


@check
def rows_logsumexp():
    g = gjit(lambda x: numbax.nn.logsumexp(x, axis=-1))
    for shape in NARROW + WIDE:
        x = RNG.normal(size=shape)
        close(g(x), _lse(x), rtol=1e-13, atol=1e-13)
        x32 = x.astype(np.float32)
        close(g(x32), _lse(x.astype(np.float32).astype(np.float64)).astype(np.float32),
              rtol=2e-6, atol=2e-6)
    z = RNG.normal(size=(3, 4, 50))  # two trailing axes reduced together
    close(gjit(lambda x: numbax.nn.logsumexp(x, axis=(1, 2)))(z),
          _lse(z.reshape(3, 200)), rtol=1e-13)
    # log_softmax: an outer pass (per-row scalars) between row passes
    close(gjit(lambda x: numbax.nn.log_softmax(x, axis=-1))(x),
          x - _lse(x)[:, None], rtol=1e-12, atol=1e-12)


@check
def rows_max_min_int_bool_accumulators():
    dts = (np.int32, np.int64, np.uint8, np.uint32, np.int16)
    for n, shape in enumerate(NARROW + WIDE):
        for dt in (dts[n % 5], dts[(n + 2) % 5]):  # every dtype on narrow and wide rows
            lo = 0 if np.dtype(dt).kind == "u" else -100
            a = RNG.integers(lo, 100, shape).astype(dt)
            for fn, ref in ((jnp.max, np.max), (jnp.min, np.min), (jnp.sum, np.sum)):
                try:
                    close(gjit(lambda a, fn=fn: fn(a, axis=-1))(a), ref(a, axis=-1))
                except AssertionError as e:
                    raise AssertionError(f"{fn.__name__} {shape} {np.dtype(dt).name}: {e}") \
                        from None
        b = RNG.integers(-3, 3, shape)
        close(gjit(lambda a: jnp.any(a > 1, axis=-1))(b), np.any(b > 1, axis=-1))
        close(gjit(lambda a: jnp.all(a > -3, axis=-1))(b), np.all(b > -3, axis=-1))
        x = RNG.normal(size=shape).astype(np.float32)
        close(gjit(lambda a: jnp.max(a, axis=-1) - jnp.min(a, axis=-1))(x),
              x.max(-1) - x.min(-1))
        close(gjit(lambda a: jnp.prod(a, axis=-1))(x[:, :40] * 0.5 + 1),
              np.prod(x[:, :40] * np.float32(0.5) + 1, axis=-1), rtol=1e-5)
    # signed zeros: every lane of a row must agree on the max (0.0 vs -0.0 ties)
    z = np.array([[0.0, -0.0] * 25, [-0.0] * 50], np.float32)
    got = np.asarray(gjit(lambda a: a - jnp.max(a, axis=-1, keepdims=True))(z))
    np.testing.assert_array_equal(got, z - z.max(-1, keepdims=True))


@check
def rows_nan_and_inf():
    f = gjit(lambda x: numbax.nn.softmax(x, axis=-1))
    mx = gjit(lambda x: (jnp.max(x, axis=-1), jnp.min(x, axis=-1), jnp.sum(x, axis=-1)))
    for shape in NARROW[1:] + WIDE:
        x = RNG.normal(size=shape).astype(np.float32)
        x[0, shape[1] - 1] = np.nan   # the last element: a padding-slot lane
        x[-1, 0] = np.nan
        if shape[0] > 2:
            x[1] = -np.inf           # softmax of an all -inf row: NaN (numpy agrees)
        with np.errstate(invalid="ignore"):
            close(f(x), _softmax(x.astype(np.float64)).astype(np.float32), rtol=2e-6,
                  atol=2e-6)
            for got, want in zip(mx(x), (x.max(-1), x.min(-1), x.sum(-1, dtype=np.float64)
                                         .astype(np.float32)), strict=True):
                close(got, want, rtol=1e-6)


@check
def rows_epilogues_inputs_and_outputs():
    # a (W,) bias broadcast along rows, a 0-d input, several per-row outputs, layer norm's
    # mean/var passes: narrow, block-in-registers and loop widths
    def layer_norm(x, b, t):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
        y = (x - mu) / jnp.sqrt(var + 1e-5) * t + b
        return y, mu[:, 0], jnp.max(y, axis=-1)

    for shape in ((5, 3), (7, 50), (3, 200), (2, 300)):
        x = RNG.normal(size=shape)
        b = RNG.normal(size=shape[1])
        mu = x.mean(-1, keepdims=True)
        y = (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * 1.5 + b
        got = gjit(layer_norm)(x, b, 1.5)
        for g, w in zip(got, (y, mu[:, 0], y.max(-1)), strict=True):
            close(g, w, rtol=1e-12, atol=1e-12)


def _ulps(got, want):
    """Distance in float32 ulps between a float32 result and a float64 truth."""
    w = want.astype(np.float32)
    spacing = np.spacing(np.abs(w)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / np.maximum(spacing, np.float64(1.4e-45))


@check
def logistic_float32_fast_form():
    x = np.concatenate([np.linspace(-100, 100, 81), [-88.5, -87.5, -20, -1e-3, 0.0, -0.0, 1e-3,
                                                    15, 17, 30, np.inf, -np.inf, np.nan]])
    x32 = x.astype(np.float32)
    got = np.asarray(gjit(numbax.nn.sigmoid)(x32))
    assert got.dtype == np.float32, got.dtype
    with np.errstate(over="ignore"):
        want = 1 / (1 + np.exp(-x32.astype(np.float64)))
    ok = ~np.isnan(x32)
    assert np.isnan(got[~ok]).all(), got[~ok]
    u = _ulps(got[ok], want[ok])
    assert u.max() <= 4, (u.max(), x32[ok][np.argmax(u)])
    # float64 keeps the division form
    close(gjit(numbax.nn.sigmoid)(x), np.where(np.isnan(x), np.nan, want), rtol=1e-15)


@check
def literal_shifts_match_cpu():
    lax = numbax.lax
    for dt in (np.int32, np.uint32, np.int64, np.uint8):
        bits = np.dtype(dt).itemsize * 8
        lo = 0 if np.dtype(dt).kind == "u" else -1000
        x = RNG.integers(lo, 1000, 10).astype(dt)
        for k in (0, 1, bits // 2 + 1, bits - 1, bits, bits + 3):
            for f in (lax.shift_left, lax.shift_right_logical, lax.shift_right_arithmetic):
                g = lambda a, f=f, k=k, dt=dt: f(a, np.array(k, dt))  # noqa: E731 - literal
                close(gjit(g)(x), np.asarray(numbax.jit(g)(x)), rtol=0, atol=0)
