"""Issue 21's jnp items: integer powers with negative exponents, and constructors' errors
naming the argument (var with ddof >= count is in test_quantiles.py)."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError


@pytest.mark.parametrize("call", [
    lambda: jnp.power(np.arange(3), -1), lambda: jnp.arange(3) ** -1,
    lambda: jnp.power(np.arange(3), np.array([1, -2, 0])), lambda: jnp.power(2, -1),
    lambda: jnp.asarray(np.int8(3)) ** np.int64(-2),
], ids=["literal", "operator", "concrete-array", "python-ints", "numpy-scalar"])
def test_integer_negative_powers_raise_like_numpy(call):
    with pytest.raises(ValueError, match="negative integer powers"):
        call()


def test_integer_powers_when_exponent_is_traced():
    x = np.arange(-5, 6)
    n = np.arange(0, 8)
    table = numbax.vmap(lambda e: x ** e)(n)  # the exponent is traced (a batch tracer)
    np.testing.assert_array_equal(table, x[None, :] ** n[:, None])
    # Traced negative exponents: the integer part of the true power.
    xs = np.array([-3, -2, -1, 0, 1, 2, 3])
    neg = numbax.vmap(lambda e: xs ** e)(np.array([-3, -2]))
    np.testing.assert_array_equal(neg, [[0, 0, -1, 0, 1, 0, 0], [0, 0, 1, 0, 1, 0, 0]])
    f = numbax.jit(lambda a, e: a ** e)
    np.testing.assert_array_equal(f(xs, np.full(7, -3)), neg[0])
    np.testing.assert_allclose(jnp.power(2.0, -1), 0.5)
    np.testing.assert_allclose(jnp.arange(1.0, 3.0) ** -1, [1.0, 0.5])


@pytest.mark.parametrize("call,cls,match", [
    (lambda: jnp.arange(None), NumbaxTypeError, "start is None"),
    (lambda: jnp.arange(3 + 1j), NumbaxValueError, "start is complex"),
    (lambda: jnp.arange(1, 4 + 2j), NumbaxValueError, "stop is complex"),
    (lambda: jnp.arange("3"), NumbaxTypeError, "start is '3' of type str"),
    (lambda: jnp.linspace(0, 1, 2.5), NumbaxTypeError, "num is 2.5 of type float"),
    (lambda: jnp.linspace(0, 1, "5"), NumbaxTypeError, "num is '5' of type str"),
    (lambda: jnp.eye("3"), NumbaxTypeError, "N is '3' of type str"),
    (lambda: jnp.eye(3, 2.5), NumbaxTypeError, "M is 2.5"),
    (lambda: jnp.eye(3, k=1.5), NumbaxTypeError, "k is 1.5"),
    (lambda: jnp.concatenate(None), NumbaxTypeError, "arrays has type NoneType"),
    (lambda: jnp.concatenate(3), NumbaxTypeError, "arrays has type int"),
    (lambda: jnp.einsum("ij->->", np.ones((2, 2))), NumbaxValueError, "more than one '->'"),
], ids=["arange-None", "arange-complex", "arange-complex-stop", "arange-str",
        "linspace-float", "linspace-str", "eye-str", "eye-M", "eye-k", "concat-None",
        "concat-int", "einsum-arrows"])
def test_constructor_errors_name_the_argument(call, cls, match):
    with pytest.raises(cls, match=match):
        call()


def test_valid_forms_still_work():
    np.testing.assert_array_equal(jnp.concatenate(np.arange(6).reshape(2, 3)),
                                  np.concatenate(np.arange(6).reshape(2, 3)))
    np.testing.assert_array_equal(jnp.arange(np.float64(3.5)), np.arange(3.5))
    np.testing.assert_array_equal(jnp.eye(np.int64(2)), np.eye(2))
    np.testing.assert_array_equal(jnp.linspace(0, 1, np.int32(3)), np.linspace(0, 1, 3))
