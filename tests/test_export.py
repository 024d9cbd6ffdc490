"""numbax.export (jax.export without serialization): an Exported calls, jits, differentiates
and vmaps as the function at its exported types; misuse raises JAX's error classes."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import export


def _exported(f, *specs, **kw):
    return export.export(numbax.jit(f, **kw))(*specs)


def test_exported_call_matches_the_function_under_every_transform():
    def f(x, w):
        return jnp.tanh(x @ w).sum() + (x ** 2).sum()

    spec_x = numbax.ShapeDtypeStruct((3, 4), np.float32)
    e = _exported(f, spec_x, np.zeros((4, 2), np.float32))
    assert e.fun_name == "f" and [str(a) for a in e.in_avals] == ["float32[3,4]", "float32[4,2]"]
    assert [str(a) for a in e.out_avals] == ["float32[]"]
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(4, 2)).astype(np.float32)
    want = np.tanh(x.astype(np.float64) @ w).sum() + (x.astype(np.float64) ** 2).sum()
    np.testing.assert_allclose(e.call(x, w), want, rtol=1e-5)
    np.testing.assert_allclose(numbax.jit(e.call)(x, w), want, rtol=1e-5)
    t = np.tanh(x.astype(np.float64) @ w)
    np.testing.assert_allclose(numbax.grad(e.call)(x, w), (1 - t ** 2) @ w.T + 2 * x,
                               rtol=1e-4, atol=1e-5)
    batch = rng.normal(size=(5, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(numbax.vmap(e.call, in_axes=(0, None))(batch, w),
                               [np.tanh(b.astype(np.float64) @ w).sum() + (b ** 2).sum()
                                for b in batch], rtol=1e-5)


def test_static_arguments_are_fixed_at_export():
    e = _exported(lambda x, n: x * n, numbax.ShapeDtypeStruct((2,), np.float64), 3,
                  static_argnums=1)
    np.testing.assert_array_equal(e.call(np.array([1.0, 2.0])), [3.0, 6.0])


def test_misuse_raises_jax_error_classes():
    spec = numbax.ShapeDtypeStruct((), np.float32)
    with pytest.raises(TypeError, match="must be the result of `jit`"):
        export.export(lambda x: x)(spec)
    with pytest.raises(ValueError, match="platforms"):
        export.export(numbax.jit(lambda x: x), platforms=["tpu"])
    e = _exported(lambda x: x + 1, spec)
    with pytest.raises(ValueError, match="exported for f32"):
        e.call(np.float64(1.0))
    with pytest.raises(ValueError, match="structure"):
        e.call(np.float32(1.0), np.float32(2.0))
