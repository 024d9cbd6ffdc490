"""The CPU's vectorised float32 trigonometric and hyperbolic functions (sin, cos, tan, arcsin,
arccos, arctan, arctan2, sinh, cosh: cpu/runtime/fastmath_trig.py) within 1 ulp of the
correctly rounded result over the whole float32 range, C99's special cases included, and the
float64 arctangents within 2 ulp of libm's. Truth: libm's float64 functions (glibc reduces
any argument exactly), rounded to float32 for the float32 ones."""
import functools

import numpy as np
import pytest
from numba import njit

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cpu.runtime import fastmath_trig as tg

from .test_fastmath import special_values, ulp_distance

F32 = np.float32


@functools.cache
def _loop(name):
    fn = getattr(tg, f"{name}_f32")

    @njit(error_model="numpy")
    def loop(x, out):
        for i in range(x.shape[0]):
            out[i] = fn(x[i])
    return loop


@njit(error_model="numpy")
def _atan2_loop(y, x, out):
    for i in range(x.shape[0]):
        out[i] = tg.atan2_f32(y[i], x[i])


def _apply(name, x):
    out = np.empty_like(x)
    _loop(name)(x, out)
    return out


def _truth(name, *xs):
    with np.errstate(invalid="ignore", over="ignore"):
        return getattr(np, name)(*(x.astype(np.float64) for x in xs)).astype(F32)


def _near_quarter_turns() -> np.ndarray:
    """float32 values closest to multiples k pi/2 (where the reduced argument is tiny and a
    short reduction loses every digit), for k small and k spread over every exponent, with
    their neighbours."""
    rng = np.random.default_rng(7)
    k = np.concatenate([np.arange(1, 20001, dtype=np.float64),
                        np.floor(np.exp2(rng.uniform(15, 127, 20000)))])
    x = (k * (np.pi / 2)).astype(F32)
    x = x[np.isfinite(x)]
    return np.concatenate([x, np.nextafter(x, F32(np.inf)), np.nextafter(x, F32(0))])


def _samples() -> np.ndarray:
    rng = np.random.default_rng(20261205)
    bits = rng.integers(0, 2**32, 400_000, dtype=np.uint64).astype(np.uint32).view(F32)
    tiny = F32(2.0**-12)
    edges = np.array([tiny, np.nextafter(tiny, F32(0)), np.nextafter(tiny, F32(1)),
                      np.pi / 4, np.pi / 2, np.pi, 2 * np.pi, 1e6, 1.6e6, 2.0**20, 2.0**24,
                      2.0**50, 2.0**100], F32)
    x = np.concatenate([bits[np.isfinite(bits)], rng.uniform(-10, 10, 100_000).astype(F32),
                        rng.uniform(-1e5, 1e5, 100_000).astype(F32), _near_quarter_turns(),
                        edges, special_values(F32)])
    return np.concatenate([x, -x])


# numpy's name -> fastmath_trig's
NAMES = {"sin": "sin", "cos": "cos", "tan": "tan", "arcsin": "asin", "arccos": "acos",
         "arctan": "atan", "sinh": "sinh", "cosh": "cosh"}


@pytest.mark.parametrize("name", list(NAMES))
def test_within_one_ulp_of_the_correctly_rounded_value(name):
    x = _samples()
    if name in ("arcsin", "arccos"):  # where they are finite, and its ends
        inside = np.random.default_rng(2).uniform(-1, 1, 300_000).astype(F32)
        x = np.concatenate([x, inside, np.nextafter(F32([1, -1]), F32(0)), F32([1, -1])])
    got, want = _apply(NAMES[name], x), _truth(name, x)
    dist = ulp_distance(got, want)
    worst = int(np.argmax(dist))
    assert dist.max() <= 1, f"{dist.max()} ulp at x={x[worst]!r}: {got[worst]!r} vs {want[worst]!r}"
    # not 1 ulp off everywhere: almost always the correctly rounded value itself
    assert (dist > 0).mean() < 1e-4


@pytest.mark.parametrize("name", ["arcsin", "arccos", "sinh", "cosh", "tan"])
def test_other_functions_special_values(name):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1.5, 100.0, 1e-45], F32)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x.astype(np.float64)).astype(F32)
    got = _apply(NAMES[name], x)
    assert ulp_distance(got, want).max() == 0  # nan where numpy's is, infinities, zeros
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_special_values(name):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45], F32)
    got = _apply(name, x)
    if name == "sin":  # sin keeps the zero's sign and returns tiny arguments as they are
        np.testing.assert_array_equal(got[[0, 1, 5, 6]], x[[0, 1, 5, 6]])
        assert np.signbit(got[1]) and not np.signbit(got[0])
    else:
        np.testing.assert_array_equal(got[[0, 1, 5, 6]], np.ones(4, F32))
    assert np.isnan(got[2:5]).all()


def test_jitted_sine_and_cosine_of_float32_use_them():
    x = np.random.default_rng(3).uniform(-50, 50, 4096).astype(F32)
    f = numbax.jit(lambda x: (jnp.sin(x), jnp.cos(x)))
    text = f.lower(x).as_text()
    assert "tg.sin_f32(" in text and "tg.cos_f32(" in text
    s, c = f(x)
    assert s.dtype == F32 and c.dtype == F32
    assert ulp_distance(np.asarray(s), _truth("sin", x)).max() <= 1
    assert ulp_distance(np.asarray(c), _truth("cos", x)).max() <= 1
    # a loop body's sine is the same function
    g = numbax.jit(lambda x: lax.fori_loop(0, 3, lambda i, v: jnp.sin(v) + 0.5, x))
    want = x
    for _ in range(3):
        want = (_truth("sin", want) + F32(0.5)).astype(F32)
    np.testing.assert_allclose(np.asarray(g(x)), want, rtol=3e-7, atol=3e-7)


def test_other_dtypes_keep_their_forms():
    x64 = np.linspace(-20, 20, 1001)
    np.testing.assert_allclose(np.asarray(numbax.jit(jnp.sin)(x64)), np.sin(x64), rtol=1e-15,
                               atol=1e-15)
    z = (x64[:50] + 1j * x64[50:100]).astype(np.complex64)
    np.testing.assert_allclose(np.asarray(numbax.jit(jnp.cos)(z)), np.cos(z), rtol=2e-6)
    text = numbax.jit(jnp.sin).lower(x64).as_text()
    assert "tg.sin_f32(" not in text


def test_arctangent_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0], F32)
    got = _apply("atan", x)
    np.testing.assert_array_equal(got[:4], _truth("arctan", x[:4]))
    assert np.signbit(got[1]) and not np.signbit(got[0]) and np.isnan(got[4])
    assert ulp_distance(got[5:], _truth("arctan", x[5:])).max() == 0  # pi/4


def test_two_argument_arctangent_over_every_quadrant_and_c99s_special_cases():
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, -3e38], F32)
    grid_y, grid_x = (g.ravel() for g in np.meshgrid(special, special))
    rng = np.random.default_rng(11)
    bits = rng.integers(0, 2**32, 600_000, dtype=np.uint64).astype(np.uint32).view(F32)
    y = np.concatenate([grid_y, bits[:300_000], rng.uniform(-5, 5, 200_000).astype(F32)])
    x = np.concatenate([grid_x, bits[300_000:], rng.uniform(-5, 5, 200_000).astype(F32)])
    got = np.empty_like(x)
    _atan2_loop(y, x, got)
    want = _truth("arctan2", y, x)
    dist = ulp_distance(got, want)
    worst = int(np.argmax(dist))
    assert dist.max() <= 1, f"{dist.max()} ulp at y={y[worst]!r}, x={x[worst]!r}"
    n = grid_x.size  # the special cases exactly, zeros' and pi's signs too (nan's aside)
    assert dist[:n].max() == 0
    real = ~np.isnan(want[:n])
    np.testing.assert_array_equal(np.signbit(got[:n][real]), np.signbit(want[:n][real]))


def test_jitted_float32_functions_use_them():
    x = np.random.default_rng(5).uniform(-0.99, 0.99, 4096).astype(F32)
    fns = {name: getattr(jnp, name) for name in NAMES}
    f = numbax.jit(lambda x: {name: fn(x) for name, fn in fns.items()})
    text = f.lower(x).as_text()
    got = f(x)
    for name, short in NAMES.items():
        assert f"tg.{short}_f32(" in text, name
        assert got[name].dtype == F32
        assert ulp_distance(np.asarray(got[name]), _truth(name, x)).max() <= 1, name


def test_jitted_arctangents_of_float32_use_them():
    rng = np.random.default_rng(4)
    y, x = rng.standard_normal((2, 4096)).astype(F32)
    f = numbax.jit(lambda y, x: (jnp.arctan2(y, x), jnp.arctan(x)))
    text = f.lower(y, x).as_text()
    assert "tg.atan2_f32(" in text and "tg.atan_f32(" in text
    a2, a1 = f(y, x)
    assert a2.dtype == F32 and a1.dtype == F32
    assert ulp_distance(np.asarray(a2), _truth("arctan2", y, x)).max() <= 1
    assert ulp_distance(np.asarray(a1), _truth("arctan", x)).max() <= 1


@njit(error_model="numpy")
def _atan64_loops(y, x, atan2_out, atan_out):
    for i in range(x.shape[0]):
        atan2_out[i] = tg.atan2_f64(y[i], x[i])
        atan_out[i] = tg.atan_f64(x[i])


def test_float64_arctangents_within_two_ulp_over_every_quadrant():
    rng = np.random.default_rng(13)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 5e-324, -1e308],
                       np.float64)
    grid_y, grid_x = (g.ravel() for g in np.meshgrid(special, special))
    bits = rng.integers(0, 2**63, 600_000, dtype=np.int64).view(np.float64)
    bits = np.where(np.isfinite(bits), bits, 1.0) * rng.choice([-1.0, 1.0], bits.size)
    splits = np.array([7 / 16, 11 / 16, 19 / 16, 39 / 16])  # the reduction's intervals
    edges = np.concatenate([splits, *(np.nextafter(splits, k) for k in (0.0, np.inf))])
    y = np.concatenate([grid_y, bits[:300_000], rng.uniform(-5, 5, 200_000), edges])
    x = np.concatenate([grid_x, bits[300_000:], rng.uniform(-5, 5, 200_000), edges[::-1]])
    got2, got1 = np.empty_like(x), np.empty_like(x)
    _atan64_loops(y, x, got2, got1)
    for got, want in ((got2, np.arctan2(y, x)), (got1, np.arctan(x))):
        dist = ulp_distance(got, want)
        worst = int(np.argmax(dist))
        assert dist.max() <= 2, f"{dist.max()} ulp at y={y[worst]!r}, x={x[worst]!r}"
        n = grid_x.size  # the special cases exactly, with their zeros' signs
        assert dist[:n].max() == 0
        real = ~np.isnan(want[:n])
        np.testing.assert_array_equal(np.signbit(got[:n][real]), np.signbit(want[:n][real]))
    y64, x64 = y[-1000:], x[-1000:]
    assert "tg.atan2_f64(" in numbax.jit(jnp.arctan2).lower(y64, x64).as_text()
    assert ulp_distance(np.asarray(numbax.jit(jnp.arctan2)(y64, x64)),
                        np.arctan2(y64, x64)).max() <= 2
