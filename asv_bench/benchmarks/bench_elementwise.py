"""Elementwise kernels: numbax.jit vs numpy vs jax.jit (selu, sigmoid, add)."""
import numpy as np

import numbax
import numbax.numpy as jnp

from .common import inputs, jax, jjnp, ready


def _selu(np_mod):
    def selu(x, alpha=1.67, lmbda=1.05):
        return lmbda * np_mod.where(x > 0, x, alpha * np_mod.exp(x) - alpha)

    return selu


def _sigmoid(np_mod):
    return lambda x: 1 / (1 + np_mod.exp(-x))


FUNCS = {"selu": _selu, "sigmoid": _sigmoid, "add": lambda m: (lambda x: x + x)}


class Elementwise:
    params = (["selu", "sigmoid", "add"], ["float32", "float64"], [10**6, 10**7])
    param_names = ["function", "dtype", "n"]
    timeout = 300

    def setup(self, name, dtype, n):
        self.x = inputs(n, dtype)
        self.numpy_fn = FUNCS[name](np)
        self.numbax_fn = numbax.jit(FUNCS[name](jnp))
        ready(self.numbax_fn(self.x))
        if jax is not None:
            self.jax_fn = jax.jit(FUNCS[name](jjnp))
            self.jx = jax.device_put(self.x)
            ready(self.jax_fn(self.jx))

    def time_numbax(self, name, dtype, n):
        ready(self.numbax_fn(self.x))

    def time_numpy(self, name, dtype, n):
        self.numpy_fn(self.x)

    def time_jax(self, name, dtype, n):
        if jax is None:
            raise NotImplementedError("jax is not installed")
        ready(self.jax_fn(self.jx))


class Dispatch:
    """Python overhead of one jitted call on a tiny array."""

    def setup(self):
        self.x = np.ones(10)
        self.f = numbax.jit(lambda x: x + 1)
        self.f(self.x)
        if jax is not None:
            self.jf = jax.jit(lambda x: x + 1)
            self.jx = jax.device_put(self.x)
            ready(self.jf(self.jx))

    def time_numbax(self):
        self.f(self.x)

    def time_jax(self):
        if jax is None:
            raise NotImplementedError("jax is not installed")
        self.jf(self.jx)
