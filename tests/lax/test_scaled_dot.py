"""lax.scaled_dot (lax/scaled_dot.py) against JAX 0.10.2's outputs on CPU (recorded below:
float32 operands, power-of-two scales), eagerly, under jit and vmap, with its errors."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax

RNG = np.random.default_rng(0)
LHS = RNG.normal(size=(3, 8)).astype(np.float32)
RHS = RNG.normal(size=(8, 2)).astype(np.float32)
LS = (2.0 ** RNG.integers(-2, 3, size=(3, 2))).astype(np.float32)
RS = (2.0 ** RNG.integers(-2, 3, size=(2, 2))).astype(np.float32)
BL = RNG.normal(size=(2, 2, 4)).astype(np.float32)
BR = RNG.normal(size=(2, 4, 3)).astype(np.float32)

# jax.lax.scaled_dot(LHS, RHS, lhs_scale=LS, rhs_scale=RS): bfloat16 by default
JAX_BF16 = [[-0.265625, 0.79296875], [0.8359375, -0.326171875], [-0.93359375, 0.62890625]]
# ... preferred_element_type=float32
JAX_F32 = [[-0.26627349853515625, 0.7927737236022949], [0.8348608016967773,
           -0.32672154903411865], [-0.9343185424804688, 0.6275978088378906]]
# ... no scales, float32
JAX_UNSCALED = [[-0.13313674926757812, 1.3333163261413574], [1.1093273162841797,
                -1.3068861961364746], [-0.4671592712402344, 1.1412734985351562]]
# batched (2, 2, 4) @ (2, 4, 3), lhs scales BLS, rhs scales all 2, float32
BLS = np.array([[[0.5, 2.0], [1.0, 4.0]], [[2.0, 1.0], [0.25, 1.0]]], np.float32)
JAX_BATCHED = [[[11.579460144042969, 8.973831176757812, -7.532661437988281],
                [-15.633995056152344, -1.7657909393310547, 21.138301849365234]],
               [[3.037994384765625, -0.8267440795898438, -5.319252014160156],
                [-2.1348648071289062, 0.7824325561523438, 1.4634475708007812]]]
JAX_JAXPR = """{ lambda ; a:f32[3,8] b:f32[8,2] c:f32[3,2] d:f32[2,2]. let
    e:bf16[3,2] = scaled_dot[
      dimension_numbers=(((1,), (0,)), ((), ()))
      preferred_element_type=bfloat16
    ] a b c d
  in (e,) }"""


def _f32(lhs, rhs, ls, rs):
    return lax.scaled_dot(lhs, rhs, lhs_scale=ls, rhs_scale=rs,
                          preferred_element_type=jnp.float32)


def test_matches_jax_eagerly_and_under_jit():
    for f in (lambda *a: lax.scaled_dot(a[0], a[1], lhs_scale=a[2], rhs_scale=a[3]),):
        for run in (f, numbax.jit(f)):
            out = run(LHS, RHS, LS, RS)
            assert out.dtype == jnp.bfloat16
            np.testing.assert_array_equal(np.asarray(out, np.float32), JAX_BF16)
    np.testing.assert_array_equal(_f32(LHS, RHS, LS, RS), JAX_F32)
    np.testing.assert_array_equal(numbax.jit(_f32)(LHS, RHS, LS, RS), JAX_F32)
    np.testing.assert_array_equal(
        lax.scaled_dot(LHS, RHS, preferred_element_type=jnp.float32), JAX_UNSCALED)
    assert str(numbax.make_jaxpr(lambda *a: lax.scaled_dot(
        a[0], a[1], lhs_scale=a[2], rhs_scale=a[3]))(LHS, RHS, LS, RS)) == JAX_JAXPR


def test_batched_dimensions_and_vmap():
    got = _f32(BL, BR, BLS, np.full((2, 2, 3), 2.0, np.float32))
    np.testing.assert_array_equal(got, JAX_BATCHED)
    stacked = np.stack([LHS, 2 * LHS])
    got = numbax.vmap(lambda a: _f32(a, RHS, LS, RS))(stacked)
    np.testing.assert_array_equal(got, [JAX_F32, 2 * np.array(JAX_F32, np.float32)])


def test_bad_arguments_raise_jaxs_type_errors():
    with pytest.raises(TypeError, match="does not support 0-rank and 1-rank"):
        lax.scaled_dot(LHS[0], RHS)
    with pytest.raises(TypeError, match="must be divisible by its scale's dim size 3"):
        lax.scaled_dot(LHS, RHS, lhs_scale=np.ones((3, 3), np.float32))
    with pytest.raises(TypeError, match="does not match RHS contracting dim 0 of size 6"):
        lax.scaled_dot(LHS, RHS[:6])
    with pytest.raises(TypeError, match=r"scale's dim size \(1\) must be at least 2"):
        lax.scaled_dot(LHS, RHS, lhs_scale=np.ones((3, 8), np.float32))
    with pytest.raises(TypeError, match="LHS dim 0 of size 3 does not match scale dim size 2"):
        lax.scaled_dot(LHS, RHS, lhs_scale=np.ones((2, 2), np.float32))
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'scaled_dot'"):
        numbax.grad(lambda a: _f32(a, RHS, LS, RS).sum())(LHS)
