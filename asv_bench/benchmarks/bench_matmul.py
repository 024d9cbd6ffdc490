"""Matmul and a matmul chain (ten products, then a CSE'd elementwise tail) against numpy's BLAS."""
import numpy as np

from .common import DTYPES, IMPLS, modules, put, ready, require, sizes, steady


def chain(x):
    g = x
    for _ in range(10):
        g = g @ x
    return (g * g + g * g) / g


def _matrix(n, dtype):
    x = np.random.default_rng(0).normal(size=(n, n)) / np.sqrt(n)
    return x.astype(dtype)


class Matmul:
    params = (IMPLS, DTYPES, sizes([500], [1000, 2000]))
    param_names = ["impl", "dtype", "n"]
    timeout = 300

    def setup(self, impl, dtype, n):
        require(impl)
        self.args = (put(impl, _matrix(n, dtype)),)
        if impl == "numpy":
            self.fn = lambda a: a @ a
        else:
            self.fn = modules(impl)[1](lambda a: a @ a)
            steady(impl, lambda: ready(self.fn(*self.args)))

    def time_matmul(self, impl, dtype, n):
        ready(self.fn(*self.args))


class MatmulChain:
    params = (IMPLS, DTYPES, sizes([200], [500]))
    param_names = ["impl", "dtype", "n"]
    timeout = 300

    def setup(self, impl, dtype, n):
        require(impl)
        self.args = (put(impl, _matrix(n, dtype)),)
        self.fn = chain if impl == "numpy" else modules(impl)[1](chain)
        steady(impl, lambda: ready(self.fn(*self.args)))

    def time_chain(self, impl, dtype, n):
        ready(self.fn(*self.args))
