"""Accuracy of the vectorisable scalar math in numbax._src.compiler.fastmath against numpy."""
import functools
import math

import numpy as np
import pytest
from numba import njit

from numbax._src.compiler.cpu.runtime import fastmath as fm
from numbax._src.compiler.cpu.runtime import fastmath_erf as fe

MAX_ULP = 2
N_LOG_UNIFORM = 200_000
N_FOCUS = 100_000
# Where each function does its interesting work (range reduction, region switches, edges).
FOCUS = {
    "exp": {np.float64: (-746.0, 710.0), np.float32: (-104.0, 89.0)},
    "log": {np.float64: (0.0, 4.0), np.float32: (0.0, 4.0)},
    "log1p": {np.float64: (-1.0, 3.0), np.float32: (-1.0, 3.0)},
    "expm1": {np.float64: (-40.0, 710.0), np.float32: (-18.0, 89.0)},
    "tanh": {np.float64: (-23.0, 23.0), np.float32: (-11.0, 11.0)},
    "logistic": {np.float64: (-750.0, 40.0), np.float32: (-110.0, 20.0)},
    "erf": {np.float64: (-7.0, 7.0), np.float32: (-5.0, 5.0)},
}
SMALL_FOCUS = (-1.5, 1.5)
EDGE_STEPS = 8
# Points with an exact result beyond 0, inf and nan (log(1) = 0, log1p(-1) = -inf, ...).
EXACT_POINTS = {"log": (1.0, -1.0), "log1p": (-1.0, -2.0)}
# An 80-bit longdouble rounds to a correctly rounded float64 in all but near-tie cases.
HAVE_LONGDOUBLE = np.finfo(np.longdouble).nmant >= 63
_erf_ufunc = np.frompyfunc(math.erf, 1, 1)


def _wide(x):
    return x.astype(np.longdouble if HAVE_LONGDOUBLE else np.float64)


def _logistic_ref(x):
    w = _wide(x)
    return 1 / (1 + np.exp(-w))


REFERENCES = {
    "exp": lambda x: np.exp(_wide(x)),
    "log": lambda x: np.log(_wide(x)),
    "log1p": lambda x: np.log1p(_wide(x)),
    "expm1": lambda x: np.expm1(_wide(x)),
    "tanh": lambda x: np.tanh(_wide(x)),
    "logistic": _logistic_ref,
    "erf": lambda x: _erf_ufunc(x.astype(np.float64)).astype(np.float64),
}


def reference(name, x):
    """The correctly rounded (to within near-ties) result, in x's dtype."""
    with np.errstate(all="ignore"):
        return np.asarray(REFERENCES[name](x)).astype(x.dtype)


def ulp_distance(a, b):
    """Per-element distance in units in the last place; nan vs nan counts 0, nan vs number inf.

    Floats map to integers that count representable values (sign-magnitude bits turned
    two's complement), so neighbours differ by 1 and -0.0, +0.0 both map to 0.
    """
    a = np.asarray(a)
    b = np.asarray(b, dtype=a.dtype)
    itype = np.int64 if a.dtype == np.float64 else np.int32
    keys = []
    for v in (a, b):
        bits = v.view(itype).astype(np.int64)
        sign_min = np.int64(np.iinfo(itype).min)
        keys.append(np.where(bits < 0, sign_min - bits, bits))
    ka, kb = keys
    # Exact in int64 when close; float for the far cases where int64 could wrap.
    rough = np.abs(ka.astype(np.float64) - kb.astype(np.float64))
    dist = np.where(rough < 2.0**62, np.abs(ka - kb).astype(np.float64), rough)
    a_nan, b_nan = np.isnan(a), np.isnan(b)
    dist = np.where(a_nan | b_nan, np.inf, dist)
    return np.where(a_nan & b_nan, 0.0, dist)


@functools.cache
def mapped(name, dtype):
    """An njit loop applying fm.<name>_<f32|f64> (fe.* for the error functions); the call is
    inlined, as in generated code."""
    fn = getattr(fe if name.startswith("erf") else fm,
                 f"{name}_{'f64' if dtype is np.float64 else 'f32'}")

    @njit(error_model="numpy")
    def loop(x, out):
        for i in range(x.shape[0]):
            out[i] = fn(x[i])

    def apply(x):
        out = np.empty_like(x)
        loop(x, out)
        return out

    return apply


def special_values(dtype):
    info = np.finfo(dtype)
    tiny_sub = info.smallest_subnormal
    vals = [0.0, 1.0, 2.0, 0.5, np.inf, np.nan, tiny_sub, 2 * tiny_sub,
            info.smallest_normal - tiny_sub, info.smallest_normal, info.max, info.eps]
    vals = np.array(vals, dtype=dtype)
    return np.concatenate([vals, -vals])


def edge_values(name, dtype):
    """Neighbours of the overflow, underflow and saturation thresholds."""
    lo, hi = FOCUS[name][dtype]
    centres = np.array([lo, hi, -1.0, 1.0, 0.5 * np.log(3.0), 2.5, 6.0, 4.0,
                        709.782712893384, -708.3964185322641, -745.1332191019411,
                        88.72283935546875, -87.33654022216797, -103.97207708,
                        -37.42994775023705, -17.328679513998633], dtype=dtype)
    out = [centres]
    for direction in (np.inf, -np.inf):
        v = centres
        for _ in range(EDGE_STEPS):
            v = np.nextafter(v, dtype(direction))
            out.append(v)
    return np.concatenate(out)


def samples(name, dtype):
    rng = np.random.default_rng(20261126)
    info = np.finfo(dtype)
    lo_exp = np.log2(float(info.smallest_subnormal))
    hi_exp = np.log2(float(info.max))
    mags = np.exp2(rng.uniform(lo_exp, hi_exp, N_LOG_UNIFORM))
    signs = rng.choice([-1.0, 1.0], N_LOG_UNIFORM)
    lo, hi = FOCUS[name][dtype]
    parts = [
        (mags * signs).astype(dtype),
        rng.uniform(lo, hi, N_FOCUS).astype(dtype),
        rng.uniform(*SMALL_FOCUS, N_FOCUS).astype(dtype),
        special_values(dtype),
        edge_values(name, dtype),
    ]
    with np.errstate(over="ignore"):
        return np.concatenate(parts)


NAMES = sorted(REFERENCES)
DTYPES = [np.float64, np.float32]


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("name", NAMES)
def test_max_ulp_error(name, dtype):
    x = samples(name, dtype)
    got = mapped(name, dtype)(x)
    want = reference(name, x)
    dist = ulp_distance(got, want)
    worst = int(np.argmax(dist))
    assert dist.max() <= MAX_ULP, (
        f"{name} {dtype.__name__}: {dist.max()} ulp at x={x[worst]!r}: "
        f"got {got[worst]!r}, want {want[worst]!r}")


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("name", NAMES)
def test_special_values_exact(name, dtype):
    """inf, nan, signed zeros and each function's exact points give numpy's result bit for bit."""
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, *EXACT_POINTS.get(name, ())], dtype=dtype)
    got = mapped(name, dtype)(x)
    want = reference(name, x)
    same = (got == want) & (np.signbit(got) == np.signbit(want))
    same |= np.isnan(got) & np.isnan(want)
    assert same.all(), f"{name}: x={x[~same]} got={got[~same]} want={want[~same]}"


def test_ulp_distance():
    one = np.float64(1.0)
    up = np.nextafter(one, 2.0)
    assert ulp_distance(np.array([one]), np.array([up]))[0] == 1
    assert ulp_distance(np.array([-0.0]), np.array([0.0]))[0] == 0
    tiny = np.finfo(np.float64).smallest_subnormal
    assert ulp_distance(np.array([-tiny]), np.array([tiny]))[0] == 2
    assert ulp_distance(np.array([np.nan]), np.array([np.nan]))[0] == 0
    assert ulp_distance(np.array([np.nan]), np.array([1.0]))[0] == np.inf
    big = ulp_distance(np.array([-np.inf]), np.array([np.inf]))[0]
    assert big > 2.0**63
    f = np.float32(3.0)
    assert ulp_distance(np.array([f]), np.array([np.nextafter(f, f - 1)]))[0] == 1


# ----------------------------------------------------------------------------- erf_inv
# Giles' double-precision approximation (the one XLA uses): within ERF_INV_F64_ULP of scipy's
# erfinv (Boost, itself within ~2 ulp); float32 goes through it and rounds once, so it is
# within 1 ulp of the correctly rounded value (scipy's own float32 erfinv: 3 ulp).
ERF_INV_F64_ULP = 8


def _erf_inv_samples(dtype):
    rng = np.random.default_rng(20261126)
    info = np.finfo(dtype)
    near_one = 1 - np.exp2(rng.uniform(np.log2(float(info.eps)) - 1, 0, N_FOCUS))
    tiny = np.exp2(rng.uniform(np.log2(float(info.smallest_subnormal)), 0, N_FOCUS))
    x = np.concatenate([rng.uniform(-1, 1, N_LOG_UNIFORM), near_one, -near_one, tiny, -tiny,
                        np.nextafter(dtype(1), dtype(0)) * np.ones(1)]).astype(dtype)
    return x[np.abs(x) < 1]


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
def test_erf_inv_accuracy(dtype):
    import scipy.special

    x = _erf_inv_samples(dtype)
    got = mapped("erf_inv", dtype)(x)
    if dtype is np.float64:
        want, bound = scipy.special.erfinv(x), ERF_INV_F64_ULP
    else:  # scipy in float64, rounded once: correctly rounded but for near-ties
        want, bound = scipy.special.erfinv(x.astype(np.float64)).astype(np.float32), 1
    dist = ulp_distance(got, want)
    worst = int(np.argmax(dist))
    assert dist.max() <= bound, (dtype, x[worst], got[worst], want[worst], dist.max())


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
def test_erf_inv_special_values(dtype):
    x = np.array([0.0, -0.0, 1.0, -1.0, 1.5, -2.0, np.inf, -np.inf, np.nan], dtype=dtype)
    got = mapped("erf_inv", dtype)(x)
    want = np.array([0.0, -0.0, np.inf, -np.inf] + [np.nan] * 5, dtype=dtype)
    same = ((got == want) & (np.signbit(got) == np.signbit(want))) | (
        np.isnan(got) & np.isnan(want))
    assert same.all(), (x[~same], got[~same])


@functools.cache
def _ldexp_loop():
    from numbax._src.compiler.cpu.runtime import scalars as sc

    @njit(error_model="numpy")
    def loop(p, k, out):
        for i in range(p.shape[0]):
            out[i] = sc.ldexp(p[i], k[i])

    return loop


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
def test_ldexp_rounds_as_numpys(dtype):
    """exp's last step p * 2**k on AVX-512 targets (`fastmath.SCALEF`): over every k exp's
    clamped range reaches (overflow to inf, subnormal results, underflow to 0) and p across
    exp's polynomial range [1/sqrt 2, sqrt 2] plus nan, numpy's ldexp bit for bit."""
    int_type = np.int64 if dtype == np.float64 else np.int32
    lowest = -1080 if dtype == np.float64 else -155
    ks = np.arange(lowest, 1030 if dtype == np.float64 else 135, dtype=int_type)
    p = np.random.default_rng(7).uniform(2 ** -0.5, 2 ** 0.5, (200, ks.size)).astype(dtype)
    p[1, ::2] = np.nan
    k = np.broadcast_to(ks, p.shape).ravel().copy()
    p = p.ravel()
    got = np.empty_like(p)
    _ldexp_loop()(p, k, got)
    with np.errstate(over="ignore"):
        want = np.ldexp(p, k)
    bits = np.int64 if dtype == np.float64 else np.int32
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    assert np.array_equal(got[finite].view(bits), want[finite].view(bits))
    assert np.isinf(want).any() and (want == 0).any()  # the range reaches both ends
    assert ((want != 0) & (np.abs(want) < np.finfo(dtype).tiny)).any()


def test_exp_without_avx512_gives_the_same_bits():
    """A process whose Numba target is AVX2 (no vscalef) scales exp's result by two
    multiplies and gets this process's results bit for bit, subnormal ones too."""
    import subprocess
    import sys

    x = np.concatenate([np.linspace(-110, 100, 20001), [-745.5, -708.6, 709.9, -87.4, -103.5]])
    code = (
        "import sys, numpy as np\n"
        "from numba import njit\n"
        "from numbax._src.compiler.cpu.runtime import fastmath as fm\n"
        "assert not fm.SCALEF\n"
        "@njit(error_model='numpy')\n"
        "def f(x, o, o32):\n"
        "    for i in range(x.shape[0]):\n"
        "        o[i] = fm.exp_f64(x[i]); o32[i] = fm.exp_f32(np.float32(x[i]))\n"
        "x = np.frombuffer(sys.stdin.buffer.read(), np.float64)\n"
        "o = np.empty_like(x); o32 = np.empty(x.size, np.float32); f(x, o, o32)\n"
        "sys.stdout.buffer.write(o.tobytes() + o32.tobytes())\n"
    )
    env = {**__import__("os").environ, "NUMBA_CPU_NAME": "haswell",
           "NUMBA_CPU_FEATURES": "+64bit,+avx,+avx2,+fma,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+f16c"}
    out = subprocess.run([sys.executable, "-c", code], input=x.tobytes(), capture_output=True,
                         env=env, check=False)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    there = np.frombuffer(out.stdout[:x.nbytes], np.float64)
    there32 = np.frombuffer(out.stdout[x.nbytes:], np.float32)
    here, here32 = mapped("exp", np.float64)(x), mapped("exp", np.float32)(x.astype(np.float32))
    assert np.array_equal(there.view(np.int64), here.view(np.int64))
    assert np.array_equal(there32.view(np.int32), here32.view(np.int32))


def test_erfc_f32_within_one_ulp():
    """erfc_f32 (float64 inside) against libm's float64 erfc rounded to float32: within 1 ulp
    across the sign change, the tail down to the last subnormal (x ~ 10.05, where computing
    1 - erf would have lost every digit), the float range and the special values."""
    rng = np.random.default_rng(20261130)
    x = np.concatenate([
        rng.uniform(-5.0, 11.0, N_FOCUS), rng.uniform(*SMALL_FOCUS, N_FOCUS),
        np.exp2(rng.uniform(-149, 127, N_LOG_UNIFORM)) * rng.choice([-1.0, 1.0], N_LOG_UNIFORM),
        np.nextafter(np.float32(10.0546875), np.float32(np.inf)) + np.arange(-64, 64) * 2e-4,
    ]).astype(np.float32)
    x = np.concatenate([x, special_values(np.float32)])
    got = mapped("erfc", np.float32)(x)
    want = np.frompyfunc(math.erfc, 1, 1)(x.astype(np.float64)).astype(np.float64)
    want = want.astype(np.float32)
    dist = ulp_distance(got, want)
    worst = int(np.argmax(dist))
    assert dist.max() <= 1, f"{dist.max()} ulp at x={x[worst]!r}: got {got[worst]!r}"
    assert (got[(x > 9.5) & (x < 10.0)] > 0).all()  # subnormal results, not 0


@functools.cache
def _pow_loop():
    @njit(error_model="numpy")
    def loop(x, y, out):
        for i in range(x.shape[0]):
            out[i] = fm.pow_f32(x[i], y[i])

    return loop


def test_pow_f32_within_one_ulp_and_c99_special_cases():
    """pow_f32 against float64 power rounded to float32 (correctly rounded but for near-ties):
    within 1 ulp over random bases of every magnitude and sign with half-integer and real
    exponents; and on the grid of special values (zeros, ±1, infinities, nan, odd and even
    integers, subnormals) the same bits as numpy's float32 power, signs of zero included."""
    rng = np.random.default_rng(20261130)
    n = N_FOCUS
    x = np.concatenate([rng.uniform(0.0, 10.0, n), rng.uniform(-10.0, 10.0, n),
                        np.exp2(rng.uniform(-149, 127, n)) * rng.choice([-1.0, 1.0], n)])
    y = np.concatenate([rng.uniform(-5.0, 5.0, n), np.round(rng.uniform(-12.0, 12.0, n)) / 2,
                        rng.uniform(-3.0, 3.0, n)])
    x, y = x.astype(np.float32), y.astype(np.float32)
    got = np.empty_like(x)
    _pow_loop()(x, y, got)
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
    dist = ulp_distance(got, want)
    worst = int(np.argmax(dist))
    assert dist.max() <= 1, f"{dist.max()} ulp at {x[worst]!r} ** {y[worst]!r}: {got[worst]!r}"

    special = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, 2.5, -2.5,
                        np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3e38, -3e38, 1e10, -1e10],
                       np.float32)
    xs, ys = (a.ravel() for a in np.meshgrid(special, special))
    got = np.empty_like(xs)
    _pow_loop()(xs, ys, got)
    with np.errstate(all="ignore"):
        want = np.power(xs, ys)
    exact = np.isfinite(want) & (np.abs(want) > 0) & (np.abs(want) != 1)  # rounded values
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | np.isnan(got) & np.isnan(want)
    assert (same | exact).all(), [(a, b, g, w) for a, b, g, w, s, e in zip(
        xs, ys, got, want, same, exact, strict=True) if not (s or e)][:8]
    assert ulp_distance(got[exact], want[exact]).max() <= 1
