"""jax.ad (numbax.ad) and VJP.with_refs (vjp_object.py): the markers choose, per argument,
a cotangent returned, added into a Ref, or skipped; values recorded from JAX 0.10.2."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp


def _f(x, y):
    return (jnp.sin(x) * y).sum()


X = np.arange(3.0)
# JAX 0.10.2 (float32): f_vjp(1.0) of _f at (arange(3.), 2.0)
JAX_CT_X = [2.0, 1.0806046, -0.8322937]
JAX_CT_Y = 1.7507684


def test_namespace_holds_jaxs_four_classes():
    assert sorted(vars(numbax.ad)) == ["DidntWant", "DontWant", "GradRef", "GradValue"]
    # results are empty pytree nodes, markers are leaves (as in JAX)
    assert numbax.tree.leaves([numbax.ad.DidntWant(), numbax.ad.GradRef()]) == []
    assert numbax.tree.leaves(numbax.ad.DontWant()) == [numbax.ad.DontWant()]
    assert repr(numbax.ad.GradValue()) == "GradValue()"


def test_with_refs_returns_accumulates_or_skips():
    _, f_vjp = numbax.vjp(_f, X, 2.0)
    ct_x, skipped = f_vjp.with_refs(numbax.ad.GradValue(), numbax.ad.DontWant())(1.0)
    np.testing.assert_allclose(ct_x, JAX_CT_X, rtol=1e-6)
    assert skipped == numbax.ad.DidntWant()
    ref = numbax.new_ref(np.ones(3))
    marker, ct_y = f_vjp.with_refs(ref, numbax.ad.GradValue())(1.0)
    assert marker == numbax.ad.GradRef()
    np.testing.assert_allclose(ref[...], 1.0 + np.array(JAX_CT_X), rtol=1e-6)
    np.testing.assert_allclose(ct_y, JAX_CT_Y, rtol=1e-6)
    both = f_vjp.with_refs()(1.0)  # no markers: every cotangent returned
    np.testing.assert_allclose(both[0], JAX_CT_X, rtol=1e-6)


def test_with_refs_refuses_a_wrong_structure_or_marker():
    _, f_vjp = numbax.vjp(_f, X, 2.0)
    with pytest.raises(ValueError, match="maybe_ct_refs has structure"):
        f_vjp.with_refs(numbax.ad.GradValue())
    with pytest.raises(TypeError, match="leaf 1 is a float"):
        f_vjp.with_refs(numbax.ad.GradValue(), 1.0)
