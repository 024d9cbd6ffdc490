"""Complex division and ordering under jit follow numpy (Numba's own complex division raises
for a zero divisor; Numba has no complex ordering)."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp

A = np.array([1 + 2j, 3 - 1j, 0j, np.nan + 1j, 2 + np.nan * 1j, 1 + 1j, -0.0 + 0j, 1 + 1j])
B = np.array([0j, 1 + 0j, 0j, 1j, 2 + 0j, 1 + 2j, 0j, 1 + 1j])


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_division_by_zero_gives_inf_nan_as_numpy(dtype):
    a, b = A.astype(dtype), B.astype(dtype)
    with np.errstate(all="ignore"):
        want = a / b
    got = np.asarray(numbax.jit(lambda x, y: x / y)(a, b))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.complex64 else 1e-15)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_quotients_and_reciprocals_are_numpys_bit_for_bit(dtype):
    """Smith's division in the parts' own float type, as numpy: 1 / (inf + 0j) is 0 (Numba's
    gave nan), and reciprocal / x ** -1 of 0j give inf + nanj instead of raising
    ZeroDivisionError from the compiled kernel."""
    rng = np.random.default_rng(0)
    special = np.array([1 + 1j, 0j, np.inf + 0j, 1e30 + 1e-30j, -2 - 3j, complex(0, np.inf),
                        complex(np.nan, 1), 1e-40 + 1e-40j])
    x = np.concatenate([special, rng.normal(size=500) + 1j * rng.normal(size=500)]).astype(dtype)
    y = (rng.normal(size=x.size) + 1j * rng.normal(size=x.size)).astype(dtype)
    with np.errstate(all="ignore"):
        for f, want in ((lambda a, b: a / b, x / y), (lambda a, b: b / a, y / x),
                        (lambda a, b: jnp.reciprocal(a), 1 / x)):
            got = np.asarray(numbax.jit(f)(x, y))
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
        # x ** -1 at 0j: numbax's eager power gives nan + nanj there, as JAX's eager one does
        got = np.asarray(numbax.jit(lambda a: a ** -1)(x))
        np.testing.assert_array_equal(got[x != 0], (1 / x)[x != 0])


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("op", ["lt", "le", "gt", "ge"])
def test_ordering_is_lexicographic_as_numpy(dtype, op):
    import operator

    f = getattr(operator, op)
    a, b = A.astype(dtype), B.astype(dtype)
    with np.errstate(invalid="ignore"):  # numpy warns on NaN operands
        want = f(a, b)
    np.testing.assert_array_equal(np.asarray(numbax.jit(f)(a, b)), want)


_PARTS = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-38, 3.0, 710.0, -710.0, 1e300,
          5e-324, 1e-20, 3.4e38, 1.7e308]
_SPECIAL = np.array([complex(a, b) for a in _PARTS for b in _PARTS])


def _kinds(a):
    """nan, +inf, -inf or finite, per part."""
    return np.where(np.isnan(a), 2, np.where(np.isinf(a), 1 + 2 * np.signbit(a), 0))


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("name", ["exp", "exp2", "sin", "cos", "tan", "sinh", "cosh", "tanh",
                                  "arcsin", "arccos", "arctan", "arcsinh", "arccosh",
                                  "arctanh", "square", "power", "log", "log1p", "expm1",
                                  "sqrt", "log10"])
def test_special_complex_values_match_eager(name, dtype):
    """Found by the fuzzer (issue 21): Numba's cmath gave inf+nanj for exp(710+0j), nan+nanj
    for tanh(1j*inf), inf for log(1e308+1e308j), 0 for expm1(1e-20) and raised
    ZeroDivisionError for sqrt(5e-324j), where numpy follows C99 and avoids the overflow;
    complex operands of these now run numpy's implementation under jit."""
    fn = (lambda v: v ** dtype(2.5)) if name == "power" else getattr(jnp, name)
    x = _SPECIAL.astype(dtype)
    with np.errstate(all="ignore"):
        want = np.asarray(fn(jnp.asarray(x)))
        looped = numbax.jit(lambda v: numbax.lax.fori_loop(0, 1, lambda i, c: fn(c), v))
        for got in (numbax.jit(fn)(x), looped(x)):
            got = np.asarray(got)
            np.testing.assert_array_equal(_kinds(got.real), _kinds(want.real))
            np.testing.assert_array_equal(_kinds(got.imag), _kinds(want.imag))
            np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.complex64 else 1e-13)
