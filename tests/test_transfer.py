"""device_put under a transform binds device_put_p (transfer.py, lax/sharding_ops.py): one
equation over all leaves, printed as JAX 0.10.2 prints it, an identity under jit, grad and
vmap, and JAX's error for donate with may_alias."""
import numpy as np
import pytest

import numbax

# jax.make_jaxpr(lambda x, y: jax.device_put((x, y)))(f32[3], 1.0)
JAX_JAXPR = """{ lambda ; a:f32[3] b:f32[]. let
    c:f32[3] d:f32[] = device_put[
      copy_semantics=(ArrayCopySemantics.REUSE_INPUT, ArrayCopySemantics.REUSE_INPUT)
      devices=(None, None)
      srcs=(None, None)
    ] a b
  in (c, d) }"""


def test_jaxpr_is_jaxs():
    f = lambda x, y: numbax.device_put((x, y))  # noqa: E731
    assert str(numbax.make_jaxpr(f)(np.ones(3, np.float32), np.float32(1.0))) == JAX_JAXPR
    eqn = numbax.make_jaxpr(lambda x: numbax.device_put(x, may_alias=False))(1.0).jaxpr.eqns[0]
    assert eqn.primitive is numbax.lax.device_put_p
    assert str(eqn.params["copy_semantics"]) == "(ArrayCopySemantics.ALWAYS_COPY,)"


def test_identity_under_jit_grad_and_vmap():
    x = np.arange(3.0)
    f = lambda v: numbax.device_put(v * 2.0, numbax.devices()[0]) + 1.0  # noqa: E731
    np.testing.assert_array_equal(numbax.jit(f)(x), 2 * x + 1)
    np.testing.assert_array_equal(numbax.grad(lambda v: (numbax.device_put(v) * v).sum())(x),
                                  2 * x)
    np.testing.assert_array_equal(numbax.vmap(f)(np.ones((2, 3))), np.full((2, 3), 3.0))


def test_donate_and_may_alias_together_raise():
    with pytest.raises(ValueError, match="may_alias and donate cannot be True"):
        numbax.device_put(np.ones(2), donate=True, may_alias=True)
