"""Shared setup for the asv suite: inputs, and the JAX peer when it is installed."""
import numpy as np

try:  # JAX is a benchmark peer only, never a dependency
    import jax
    import jax.numpy as jjnp

    jax.config.update("jax_enable_x64", True)
except ImportError:  # pragma: no cover - depends on the machine
    jax = None
    jjnp = None


def inputs(n, dtype, seed=0):
    return np.random.default_rng(seed).normal(size=n).astype(dtype)


def ready(x):
    return x.block_until_ready() if hasattr(x, "block_until_ready") else x
