"""Reductions and fused reductions: sum, logsumexp, row softmax."""
import numpy as np

import numbax
import numbax.numpy as jnp

from .common import jax, jjnp, ready


def _logsumexp(m):
    def lse(x):
        mx = m.max(x)
        return mx + m.log(m.sum(m.exp(x - mx)))

    return lse


def _softmax(m):
    def softmax(x):
        e = m.exp(x - m.max(x, axis=1, keepdims=True))
        return e / m.sum(e, axis=1, keepdims=True)

    return softmax


FUNCS = {"sum": lambda m: m.sum, "logsumexp": _logsumexp, "softmax": _softmax}


class Reductions:
    params = (["sum", "logsumexp", "softmax"], ["1e7", "1000x1000"])
    param_names = ["function", "shape"]
    timeout = 300

    def setup(self, name, shape):
        size = (10**7,) if shape == "1e7" else (1000, 1000)
        if name == "softmax" and shape == "1e7":
            raise NotImplementedError("row softmax needs a matrix")
        self.x = np.random.default_rng(0).normal(size=size)
        self.numbax_fn = numbax.jit(FUNCS[name](jnp))
        self.numpy_fn = FUNCS[name](np)
        ready(self.numbax_fn(self.x))
        if jax is not None:
            self.jax_fn = jax.jit(FUNCS[name](jjnp))
            self.jx = jax.device_put(self.x)
            ready(self.jax_fn(self.jx))

    def time_numbax(self, name, shape):
        ready(self.numbax_fn(self.x))

    def time_numpy(self, name, shape):
        self.numpy_fn(self.x)

    def time_jax(self, name, shape):
        if jax is None:
            raise NotImplementedError("jax is not installed")
        ready(self.jax_fn(self.jx))
