"""lax.reduce with a computation of its own binds reduce_p (lax/reduce.py): its jaxpr as JAX
prints it, JAX 0.10.2's values (float32, recorded below), jit (expanded, no eager fallback),
grad, vmap, pickling for the SPMD workers, and JAX's error classes."""
import pickle
import warnings

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax

X = np.arange(12, dtype=np.float32).reshape(3, 4) / 4 - 1
LSE = lambda x: lax.reduce(x, np.float32(-np.inf), jnp.logaddexp, (0,))  # noqa: E731

# jax.lax.reduce(X, float32(-inf), jnp.logaddexp, (0,)) and the gradient of its sum
JAX_LSE = [1.4076058864593506, 1.6576058864593506, 1.9076058864593506, 2.1576061248779297]
JAX_LSE_GRAD_ROWS = [0.09003058820962906, 0.24472849071025848, 0.665241003036499]
# argmax by reduce: (values, column) pairs, the first column among equal maxima
XS = np.array([[0.5, 3.0, -1.0, 3.0], [2.0, -4.0, 7.0, 1.0], [0.0, 0.0, 0.0, 0.0]], np.float32)
JAX_ARGMAX = ([3.0, 7.0, 0.0], [1, 2, 0])
# jax.make_jaxpr(lambda x: lax.reduce(x, 1.0, lambda a, b: a * b + 1, (0,)))(f32[3,4])
JAX_JAXPR = """{ lambda ; a:f32[3,4]. let
    b:f32[4] = reduce[
      computation=<function <lambda> at 0xXXXXXXXXXXXX>
      dimensions=(0,)
      jaxpr={ lambda ; c:f32[] d:f32[]. let
          e:f32[] = mul c d
          f:f32[] = add e 1.0:f32[]
        in (f,) }
    ] a 1.0:f32[]
  in (b,) }"""


def _argmax(x):
    idx = lax.broadcasted_iota(np.int32, x.shape, 1)

    def pick(a, b):
        (av, ai), (bv, bi) = a, b
        first = (av > bv) | ((av == bv) & (ai < bi))
        return jnp.where(first, av, bv), jnp.where(first, ai, bi)

    return lax.reduce((x, idx), (np.float32(-np.inf), np.int32(0)), pick, (1,))


def test_jaxpr_prints_as_jaxs():
    f = lambda x: lax.reduce(x, 1.0, lambda a, b: a * b + 1, (0,))  # noqa: E731
    text = str(numbax.make_jaxpr(f)(np.ones((3, 4), np.float32)))
    assert text.replace("<lambda>.<locals>.<lambda>", "<lambda>").replace(
        "test_jaxpr_prints_as_jaxs.<locals>.<lambda>", "<lambda>") == JAX_JAXPR
    eqn = numbax.make_jaxpr(LSE)(X).jaxpr.eqns[0]
    assert eqn.primitive is lax.reduce_p and eqn.params["dimensions"] == (0,)
    # a monoid of lax's own function stays the matching reduction, as in JAX
    assert numbax.make_jaxpr(lambda x: lax.reduce(x, 0.0, lax.add, (0,)))(X).jaxpr.eqns[
        0].primitive.name == "reduce_sum"


def test_values_match_jax_eagerly_and_under_jit():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # compiled: expanded, not the eager fallback
        for f in (LSE, numbax.jit(LSE)):
            np.testing.assert_allclose(f(X), JAX_LSE, rtol=2e-7)
        for f in (_argmax, numbax.jit(_argmax)):
            values, cols = f(XS)
            np.testing.assert_array_equal(values, JAX_ARGMAX[0])
            np.testing.assert_array_equal(cols, JAX_ARGMAX[1])


def test_grad_and_vmap():
    want = np.repeat(np.array(JAX_LSE_GRAD_ROWS, np.float32)[:, None], 4, 1)
    np.testing.assert_allclose(numbax.grad(lambda x: LSE(x).sum())(X), want, rtol=1e-6)
    np.testing.assert_allclose(numbax.jit(numbax.grad(lambda x: LSE(x).sum()))(X), want,
                               rtol=1e-6)
    stacked = np.stack([X, 2 * X])
    np.testing.assert_allclose(numbax.vmap(LSE)(stacked), [LSE(X), LSE(2 * X)], rtol=1e-6)
    inits = np.array([-np.inf, 0.0], np.float32)  # a batched init: the tree, vmapped
    got = numbax.vmap(lambda x, i: lax.reduce(x, i, jnp.logaddexp, (0,)))(stacked, inits)
    np.testing.assert_allclose(got[1], np.logaddexp(np.log(np.exp(2 * X).sum(0)), 0.0),
                               rtol=1e-6)


def test_equation_pickles_for_the_workers():
    jaxpr = numbax.make_jaxpr(lambda x: lax.reduce(x, 0.0, lambda a, b: a + b, (1,)))(X)
    again = pickle.loads(pickle.dumps(jaxpr.jaxpr))
    assert str(again) == str(jaxpr.jaxpr)
    np.testing.assert_allclose(numbax.core.eval_jaxpr(again, [], X)[0], X.sum(1), rtol=1e-6)


def test_bad_arguments_raise_jaxs_classes():
    with pytest.raises(ValueError, match="same tree structure as init_values"):
        lax.reduce(X, (0.0, 0.0), lambda a, b: a, (0,))
    with pytest.raises(ValueError, match="computation returned the structure"):
        lax.reduce(X, 0.0, lambda a, b: (a, b), (0,))
    with pytest.raises(ValueError, match="scalars"):
        lax.reduce(X, np.zeros(2, np.float32), jnp.logaddexp, (0,))
