"""Complex division and ordering under jit follow numpy (Numba's own complex division raises
for a zero divisor; Numba has no complex ordering)."""
import numpy as np
import pytest

import numbax

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
@pytest.mark.parametrize("op", ["lt", "le", "gt", "ge"])
def test_ordering_is_lexicographic_as_numpy(dtype, op):
    import operator

    f = getattr(operator, op)
    a, b = A.astype(dtype), B.astype(dtype)
    with np.errstate(invalid="ignore"):  # numpy warns on NaN operands
        want = f(a, b)
    np.testing.assert_array_equal(np.asarray(numbax.jit(f)(a, b)), want)
