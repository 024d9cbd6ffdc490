"""Elementwise kernels: numbax.jit vs numpy vs jax.jit (selu, sigmoid, add)."""
import numpy as np

from .common import DTYPES, IMPLS, inputs, modules, put, ready, require, sizes, steady


def _selu(np_mod):
    def selu(x, alpha=1.67, lmbda=1.05):
        return lmbda * np_mod.where(x > 0, x, alpha * np_mod.exp(x) - alpha)

    return selu


def _sigmoid(np_mod):
    return lambda x: 1 / (1 + np_mod.exp(-x))


FUNCS = {"selu": _selu, "sigmoid": _sigmoid, "add": lambda m: (lambda x: x + x)}


class Elementwise:
    params = (IMPLS, ["selu", "sigmoid", "add"], DTYPES, sizes([10**6], [10**7]))
    param_names = ["impl", "function", "dtype", "n"]
    timeout = 300

    def setup(self, impl, name, dtype, n):
        require(impl)
        self.args = (put(impl, inputs(n, dtype)),)
        if impl == "numpy":
            self.fn = FUNCS[name](np)
        else:
            m, jit, _, _ = modules(impl)
            self.fn = jit(FUNCS[name](m))
            steady(impl, lambda: ready(self.fn(*self.args)))

    def time_call(self, impl, name, dtype, n):
        ready(self.fn(*self.args))
