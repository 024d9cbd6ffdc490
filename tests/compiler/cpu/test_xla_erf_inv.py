"""Compiled float32 erf_inv (cpu/runtime/xla_erf_inv.py) gives the eager impl's bits (XLA's
algorithm, lax/erf_inv_xla.py), so jitted samplers draw what eager ones and JAX draw."""
import numpy as np

import numbax
import numbax.random as random
from numbax import lax
from numbax._src.lax.erf_inv_xla import erf_inv_f32

RNG = np.random.default_rng(7)


def _bits(a):
    return np.asarray(a).view(np.int32)


def test_compiled_float32_erf_inv_is_the_eager_bits():
    x = np.concatenate([RNG.uniform(-1, 1, 200_000), 1 - np.logspace(-8, -1, 50),
                        [0.0, -0.0, 1.0, -1.0, 1e-30, -1e-38, 1.5, -2.0, np.nan]])
    x = x.astype(np.float32)
    got = numbax.jit(lax.erf_inv)(x)
    want = erf_inv_f32(x)
    same = (_bits(got) == _bits(want)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), x[~same][:5]
    np.testing.assert_array_equal(np.asarray(got), np.asarray(lax.erf_inv(x)))


def test_jitted_normal_draws_the_eager_bits():
    with numbax.config.override("jax_enable_x64", False):
        key = random.PRNGKey(3)
        eager = random.normal(key, (50_000,))
        compiled = numbax.jit(lambda k: random.normal(k, (50_000,)))(key)
    assert np.asarray(eager).dtype == np.float32
    np.testing.assert_array_equal(_bits(compiled), _bits(eager))
