"""Large eager calls of library functions run compiled (_src/eager_compile.py), with the
results of the op-by-op run; small ones and calls under transforms run as before."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import random
from numbax._src import core, eager_compile
from numbax._src.eager_compile import compiled_when_eager
from numbax._src.lax import elementwise as ew

BIG = (eager_compile.COMPILE_AT_ELEMENTS,)


@pytest.fixture
def erf_inv_impl_calls(monkeypatch):
    """Counts eager runs of erf_inv's impl (the op-by-op path of random.normal)."""
    calls = []
    impl = core.impl_rules[ew.erf_inv_p]

    def counting(*args, **params):
        calls.append(np.shape(args[0]))
        return impl(*args, **params)

    monkeypatch.setitem(core.impl_rules, ew.erf_inv_p, counting)
    return calls


def _op_by_op(f, *args, **kwargs):
    with numbax.config.override("jax_disable_jit", True):
        return f(*args, **kwargs)


def test_large_normal_runs_compiled_with_the_eager_bits(erf_inv_impl_calls):
    key = random.PRNGKey(3)
    got = random.normal(key, BIG, np.float32)
    assert erf_inv_impl_calls == []  # no op ran eagerly
    want = _op_by_op(random.normal, key, BIG, np.float32)
    assert erf_inv_impl_calls == [BIG]
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert got.dtype == np.float32 and got.shape == BIG


def test_small_calls_are_not_compiled(erf_inv_impl_calls):
    key = random.PRNGKey(0)
    first = random.normal(key, (5,), np.float32)
    assert erf_inv_impl_calls == [(5,)]  # op by op (the later calls: eager_programs.py)
    want = _op_by_op(random.normal, key, (5,), np.float32)
    for got in (first, random.normal(key, (5,), np.float32),
                random.normal(key, (5,), np.float32)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_list_shapes_typed_keys_and_keywords():
    key = random.key(1)
    got = random.uniform(key, shape=list(BIG), minval=-2.0, maxval=3.0)
    want = _op_by_op(random.uniform, key, BIG, minval=-2.0, maxval=3.0)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert -2.0 <= float(np.min(got)) and float(np.max(got)) < 3.0


def test_array_parameters_are_traced_not_static():
    key = random.PRNGKey(2)
    lo = np.zeros(BIG)
    hi = np.linspace(1.0, 2.0, BIG[0])
    got = random.uniform(key, BIG, minval=lo, maxval=hi)
    want = _op_by_op(random.uniform, key, BIG, minval=lo, maxval=hi)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    hi2 = hi * 3.0  # same signature, new values: the compiled function reads them
    np.testing.assert_array_equal(np.asarray(random.uniform(key, BIG, minval=lo, maxval=hi2)),
                                  np.asarray(_op_by_op(random.uniform, key, BIG, minval=lo,
                                                       maxval=hi2)))


def test_nn_functions_compile_by_input_size():
    x = np.linspace(-5.0, 5.0, BIG[0]).reshape(-1, 64)
    got = numbax.nn.softmax(x, axis=-1)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(got), e / e.sum(axis=-1, keepdims=True), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(numbax.nn.gelu(x, approximate=False)),
                               np.asarray(_op_by_op(numbax.nn.gelu, x, approximate=False)),
                               rtol=1e-14, atol=1e-300)


def test_under_transforms_the_function_is_traced_inline():
    key = random.PRNGKey(4)
    jitted = numbax.jit(lambda k: random.normal(k, BIG))(key)
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(random.normal(key, BIG)))
    keys = random.split(key, 3)
    batched = numbax.vmap(lambda k: random.normal(k, (4,)))(keys)
    for i in range(3):
        np.testing.assert_array_equal(np.asarray(batched[i]),
                                      np.asarray(random.normal(keys[i], (4,))))
    x = np.linspace(-1.0, 1.0, BIG[0])
    g = numbax.grad(lambda v: jnp.sum(numbax.nn.silu(v)))(x)
    s = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(np.asarray(g), s * (1 + x * (1 - s)), rtol=1e-12)


def test_bad_input_raises_the_eager_error():
    key = random.PRNGKey(0)
    with pytest.raises(TypeError, match="random.normal"):
        random.normal(key, BIG, np.int32)
    with pytest.raises(TypeError, match="random.normal"):
        _op_by_op(random.normal, key, BIG, np.int32)


def test_decorator_refuses_star_args():
    with pytest.raises(TypeError, match="takes \\*args"):
        compiled_when_eager(lambda *a: a)


def test_large_calls_with_static_values_of_other_types_compile_apart():
    @compiled_when_eager
    def scaled(x, s):
        return x * s

    ints = jnp.arange(BIG[0])
    assert scaled(ints, 2).dtype == ints.dtype
    doubled = scaled(ints, 2.0)
    assert doubled.dtype == _op_by_op(scaled, ints, 2.0).dtype != ints.dtype
    np.testing.assert_array_equal(np.asarray(doubled), np.arange(BIG[0]) * 2.0)
