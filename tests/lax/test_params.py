"""lax's parameter classes (Precision, dot algorithms, accuracy, rounding, gather/scatter
modes) and the constructor helpers of lax/creation.py: transformations and bad input."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import lax
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.test_util import check_grads

A = np.random.default_rng(0).normal(size=(3, 4))
B = np.random.default_rng(1).normal(size=(4, 2))


def test_precision_is_carried_through_grad_vmap_and_jit():
    f = lambda a, b: lax.dot(a, b, precision=("highest", "high"))  # noqa: E731
    np.testing.assert_allclose(numbax.jit(f)(A, B), A @ B)
    check_grads(f, (A, B), order=2, modes=("fwd", "rev"))
    got = numbax.vmap(f, in_axes=(0, None))(np.stack([A, 2 * A]), B)
    np.testing.assert_allclose(got, np.stack([A @ B, 2 * A @ B]))
    jaxpr = numbax.make_jaxpr(f)(A, B)
    assert jaxpr.eqns[0].params["precision"] == (lax.Precision.HIGHEST, lax.Precision.HIGH)


def test_f64_preset_differentiates_through_its_casts():
    a32, b32 = A.astype(np.float32), B.astype(np.float32)
    f = lambda a, b: lax.dot(a, b, precision="F64_F64_F64")  # noqa: E731
    out = f(a32, b32)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, (A.astype(np.float32).astype(np.float64)
                                     @ B.astype(np.float32).astype(np.float64)), rtol=1e-6)
    g = numbax.grad(lambda a: lax.dot(a, b32, precision="F64_F64_F64").sum())(a32)
    np.testing.assert_allclose(g, np.broadcast_to(b32.sum(1), (3, 4)), rtol=1e-6)


def test_bad_precision_and_algorithms():
    with pytest.raises(NumbaxValueError, match="Precision argument must be one of"):
        lax.dot(A, B, precision="bogus")
    with pytest.raises(NumbaxValueError, match="Precision argument"):
        lax.dot(A, B, precision=(lax.Precision.HIGH, "fastest"))  # mixed pair: JAX refuses
    with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
        lax.dot(A, B, precision=lax.DotAlgorithmPreset.TF32_TF32_F32)
    with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
        lax.dot(A, B, precision=lax.DotAlgorithm(np.float32, np.float32, np.float32))
    with pytest.raises(ValueError, match="not a valid Precision"):
        lax.Precision("HIGHEST")
    assert lax.DotAlgorithmPreset.F16_F16_F32.supported_lhs_types == (np.float16,)
    assert lax.DotAlgorithmPreset.DEFAULT.accumulation_type is None


def test_accuracy_tolerance_and_rounding_bad_input():
    np.testing.assert_allclose(lax.exp(A, accuracy=lax.Tolerance(rtol=1e-6)), np.exp(A))
    with pytest.raises(NotImplementedError, match="Accuracy x not supported"):
        lax.exp(A, accuracy="x")
    with pytest.raises(ValueError, match="non-negative"):
        lax.Tolerance(atol=-1.0)
    with pytest.raises(ValueError, match="At least one"):
        lax.Tolerance()
    with pytest.raises(ValueError, match="rounding_method"):
        lax.round(A, 3)
    with pytest.raises(ValueError, match="Unknown gather mode"):
        lax.GatherScatterMode.from_any("wrap")


def test_integer_pow_refuses_negative_powers_of_integers():
    with pytest.raises(TypeError, match=r"negative powers, got integer_pow\(i64\[3\], -1\)"):
        lax.integer_pow(np.array([1, 2, 3]), -1)
    with pytest.raises(TypeError, match="negative powers"):
        numbax.jit(lambda x: x ** -2)(np.array([1, 2, 3]))
    np.testing.assert_allclose(lax.integer_pow(A, -2), A ** -2.0)


def test_creation_helpers_bad_input():
    with pytest.raises(NumbaxTypeError, match="shape"):
        lax.full_like(A, 1.0, shape="x")
    with pytest.raises(NumbaxValueError, match="non-negative"):
        lax.empty((2, -1), np.float32)
    with pytest.raises(NumbaxValueError, match="rank"):
        lax.broadcast_to_rank(A, 1)
    with pytest.raises(NumbaxValueError, match="does not broadcast"):
        lax.broadcast_like(np.ones(3), np.ones((2, 4)))
    with pytest.raises(TypeError, match="padding"):
        lax.padtype_to_pads((5,), (3,), (1,), 3)
    with pytest.raises(NumbaxValueError, match="Incompatible shapes"):
        lax.broadcast_shapes((2, 3), (3, 2))


def test_creation_helpers_under_transformations():
    f = lambda x: lax.broadcast_like(x, np.zeros((2, 3))) * lax.full_like(x, 2.0)[0]  # noqa
    np.testing.assert_allclose(numbax.jit(f)(np.arange(3.0)), 2 * np.tile(np.arange(3.0),
                                                                           (2, 1)))
    check_grads(lambda x: lax.broadcast_to_rank(x, 3) * lax.reciprocal(x), (A[0] + 3,),
                order=2)
    got = numbax.vmap(lambda x: lax.full_like(x, 7, shape=(2,)))(A)
    np.testing.assert_array_equal(got, np.full((3, 2), 7.0))


def test_platform_dependent_and_composite_bad_input_and_grad():
    with pytest.raises(NotImplementedError, match="no branch for platform 'cpu'"):
        lax.platform_dependent(1.0, tpu=lambda x: x)
    with pytest.raises(ValueError, match="unknown platform"):
        lax.platform_dependent(1.0, metal=lambda x: x)
    with pytest.raises(TypeError, match="name"):
        lax.composite(lambda x: x, name=3)
    fma = lax.composite(lambda x, y: x * y + 1.0, name="my.fma")
    np.testing.assert_allclose(numbax.grad(fma)(2.0, 3.0), 3.0)
