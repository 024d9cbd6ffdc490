"""Matmul and the CSE'd matmul chain against numpy's BLAS."""
import numpy as np

import numbax

from .common import jax, ready


def chain(x):
    g = x
    for _ in range(10):
        g = g @ x
    return (g * g + g * g) / g


class Matmul:
    params = ([1000, 2000],)
    param_names = ["n"]
    timeout = 300

    def setup(self, n):
        self.x = np.random.default_rng(0).normal(size=(n, n)).astype(np.float32) / np.sqrt(n)
        self.mm = numbax.jit(lambda a: a @ a)
        ready(self.mm(self.x))
        if jax is not None:
            self.jmm = jax.jit(lambda a: a @ a)
            self.jx = jax.device_put(self.x)
            ready(self.jmm(self.jx))

    def time_numbax(self, n):
        ready(self.mm(self.x))

    def time_numpy(self, n):
        self.x @ self.x

    def time_jax(self, n):
        if jax is None:
            raise NotImplementedError("jax is not installed")
        ready(self.jmm(self.jx))


class MatmulChain:
    timeout = 300

    def setup(self):
        self.x = np.random.default_rng(0).normal(size=(500, 500)).astype(np.float32) / 25
        self.f = numbax.jit(chain)
        ready(self.f(self.x))

    def time_numbax(self):
        ready(self.f(self.x))

    def time_numpy(self):
        chain(self.x)
