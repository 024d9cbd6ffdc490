"""weak_type flags of numpy functions on Python scalars, as JAX 0.10.2 (x64) gives them."""
import numpy as np
import pytest

import numbax.numpy as jnp

WEAK = {  # JAX 0.10.2, jax_enable_x64: (dtype, weak_type)
    "less": (lambda: jnp.less(1, 2), "bool", True),
    "equal": (lambda: jnp.equal(1, 2), "bool", True),
    "isnan": (lambda: jnp.isnan(1.0), "bool", True),
    "isnan_int": (lambda: jnp.isnan(1), "bool", True),
    "isfinite": (lambda: jnp.isfinite(1.0), "bool", True),
    "isinf": (lambda: jnp.isinf(1.0), "bool", False),
    "isposinf": (lambda: jnp.isposinf(1.0), "bool", False),
    "isclose": (lambda: jnp.isclose(1.0, 1.0), "bool", False),
    "hypot": (lambda: jnp.hypot(3.0, 4.0), "float64", True),
    "gcd": (lambda: jnp.gcd(4, 6), "int64", True),
    "lcm": (lambda: jnp.lcm(4, 6), "int64", True),
    "real": (lambda: jnp.real(1.0), "float64", True),
    "imag": (lambda: jnp.imag(1.0), "float64", True),
    "imag_c": (lambda: jnp.imag(1j), "float64", True),
    "reciprocal": (lambda: jnp.reciprocal(2.0), "float64", True),
    "modf0": (lambda: jnp.modf(1.5)[0], "float64", True),
    "modf1": (lambda: jnp.modf(1.5)[1], "float64", True),
    "logical_and_int": (lambda: jnp.logical_and(1, 0), "bool", True),
    "logical_and_bool": (lambda: jnp.logical_and(True, False), "bool", False),
    "logical_not_bool": (lambda: jnp.logical_not(True), "bool", False),
    "isreal": (lambda: jnp.isreal(1.0), "bool", True),
    "iscomplex": (lambda: jnp.iscomplex(1.0), "bool", True),
    "heaviside": (lambda: jnp.heaviside(1.0, 0.5), "float64", True),
    "divmod0": (lambda: jnp.divmod(3.0, 2.0)[0], "float64", True),
    "floor_divide": (lambda: jnp.floor_divide(3, 2), "int64", True),
    "remainder": (lambda: jnp.remainder(3, 2), "int64", True),
    "logaddexp": (lambda: jnp.logaddexp(1.0, 2.0), "float64", True),
    "float_power": (lambda: jnp.float_power(2, 3), "float64", True),
    "sinc": (lambda: jnp.sinc(1.0), "float64", True),
    "i0": (lambda: jnp.i0(1.0), "float64", True),
    "array_true": (lambda: jnp.array(True), "bool", False),
    "asarray_true": (lambda: jnp.asarray(True), "bool", False),
    "array_int": (lambda: jnp.array(1), "int64", True),
    "asarray_float": (lambda: jnp.asarray(1.0), "float64", True),
}


@pytest.mark.parametrize("name", sorted(WEAK))
def test_weak_type_matches_jax(name):
    fn, dtype, weak = WEAK[name]
    out = fn()
    assert out.dtype == np.dtype(dtype)
    assert out.weak_type is weak


def test_strong_operand_gives_strong_result():
    assert jnp.less(jnp.float32(1), 2).weak_type is False
    assert jnp.hypot(jnp.asarray([3.0]), 4.0).weak_type is False
