"""Leftover differences from JAX 0.10.2 (session 32c): lax.map's batch_size, scan's weak ys,
jvp's tangent dtypes, fori_loop's reverse mode with traced bounds, and Ref's len/bounds.
Expected values and error classes were taken from JAX 0.10.2."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import dtypes, lax

# ----------------------------------------------------------------------------- lax.map


@pytest.mark.parametrize("batch_size", [3, 10, 7, 0, 1])
def test_map_batch_size_matches_unbatched(batch_size):
    ys = lax.map(lambda x: x * 2, jnp.arange(7.0), batch_size=batch_size)
    assert ys.shape == (7,)
    assert ys.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0]  # JAX's values


def test_map_batch_size_pytree_outputs():
    ys, sums = lax.map(lambda x: (x * 2, x.sum()), jnp.arange(14.0).reshape(7, 2),
                       batch_size=3)
    assert ys.tolist() == (2 * np.arange(14.0).reshape(7, 2)).tolist()
    assert sums.tolist() == [1.0, 5.0, 9.0, 13.0, 17.0, 21.0, 25.0]


def test_map_batch_size_vmaps_batches_and_remainder():
    shapes = []

    def f(x):
        shapes.append(x.shape)
        return x + 1

    y = lax.map(f, jnp.ones((10, 3, 4)), batch_size=3)
    assert y.shape == (10, 3, 4) and float(y.sum()) == 240.0
    assert shapes == [(3, 4), (3, 4)]  # JAX's docstring: the batch body, then the remainder


def test_map_batch_size_under_jit_and_grad():
    def loss(w):
        return lax.map(lambda x: jnp.sin(w * x), jnp.arange(5.0), batch_size=2).sum()

    xs = np.arange(5.0)
    assert np.allclose(numbax.jit(loss)(0.5), np.sin(0.5 * xs).sum())
    assert np.allclose(numbax.grad(loss)(0.5), (xs * np.cos(0.5 * xs)).sum())


# ----------------------------------------------------------------------------- scan weak ys


def _weak(tree):
    return [bool(x.weak_type) for x in numbax.tree_util.tree_leaves(tree)]


def test_scan_ys_keep_weak_type_as_in_jax():
    # JAX 0.10.2 keeps stacked ys weak when the per-step y is weak (and strong otherwise).
    assert _weak(lax.scan(lambda c, x: (c + 1.0, c * 2), 0.0, None, length=3)) == [True, True]
    assert _weak(lax.scan(lambda c, x: (c, x * 2), 0.0, jnp.arange(3.0))) == [True, False]
    assert _weak(numbax.jit(lambda: lax.map(lambda x: 2.0, jnp.arange(3.0)))()) == [True]
    assert _weak(numbax.vmap(lambda a: lax.scan(lambda c, _: (c, a * 2.0), 0.0, None,
                                                 length=3))(jnp.ones(2))) == [True, False]


# ----------------------------------------------------------------------------- jvp dtypes


@pytest.mark.parametrize("primal, tangent", [
    (1, 1.0),
    (np.int32(1), np.float32(1.0)),
    (1.0, 1),
])
def test_jvp_rejects_tangent_of_wrong_dtype(primal, tangent):
    with pytest.raises(TypeError, match="tangent leaf 0"):
        numbax.jvp(lambda x: x * 2, (primal,), (tangent,))


def test_jvp_takes_a_float_tangent_of_another_precision():
    # JAX (x64 on) refuses float32 primals with float64 tangents; numbax defaults to 64 bits,
    # where JAX's default jnp.ones tangent is float32, so it takes them (docs/sharp_bits.md)
    out, t = numbax.jvp(lambda x: x * 2, (np.float32(1.5),), (np.float64(1.0),))
    assert float(out) == 3.0 and float(t) == 2.0


def test_jvp_int_primal_takes_float0_tangent():
    out, t = numbax.jvp(lambda x: x * 2, (np.int32(1),), (np.zeros((), dtypes.float0),))
    assert int(out) == 2 and t.dtype == dtypes.float0
    out, t = numbax.jvp(lambda x: x * 2, (1.0,), (1.0,))
    assert float(out) == 2.0 and float(t) == 2.0


# ----------------------------------------------------------------------------- fori_loop


def _power(n):
    return lambda x: lax.fori_loop(0, n, lambda i, c: c * x, 1.0)


def test_fori_loop_reverse_mode_refuses_traced_bound():
    with pytest.raises(ValueError, match="Reverse-mode differentiation"):
        numbax.jit(numbax.grad(lambda x, n: _power(n)(x)))(2.0, 3)
    with pytest.raises(ValueError, match="Reverse-mode differentiation"):
        numbax.jit(numbax.grad(lambda x: _power(jnp.asarray(3) + 0)(x)))(2.0)


def test_fori_loop_reverse_mode_with_concrete_bounds():
    n = jnp.asarray(3)  # closed over: concrete, so a scan (JAX: 12.0)
    assert float(numbax.jit(numbax.grad(_power(n)))(2.0)) == 12.0
    assert float(numbax.jit(numbax.grad(_power(np.asarray(3))))(2.0)) == 12.0
    assert float(numbax.grad(_power(jnp.asarray(3)))(2.0)) == 12.0
    assert float(numbax.jit(numbax.grad(lambda x, n: _power(n)(x)), static_argnums=1)(
        2.0, 3)) == 12.0


# ----------------------------------------------------------------------------- Ref


def test_ref_len_and_out_of_bound_index():
    ref = numbax.new_ref(jnp.arange(6.0).reshape(2, 3))
    assert len(ref) == 2
    with pytest.raises(ValueError, match="Out of bound indexer: idx=3, dim=2"):
        ref[3]
    with pytest.raises(ValueError, match="Out of bound indexer: idx=3, dim=3"):
        ref[0, 3]
    with pytest.raises(ValueError, match="Out of bound indexer: idx=2, dim=2"):
        ref[2] = 1.0
    assert float(ref[1, -3]) == 3.0
    with pytest.raises(TypeError):
        len(numbax.new_ref(jnp.float32(1.0)))


def test_list_of_ref_stops_with_value_error():
    # JAX: list(ref) reads rows until the out-of-bound ValueError (numbax looped forever).
    with pytest.raises(ValueError):
        list(numbax.new_ref(jnp.arange(3.0)))
