"""Reductions and fused reductions: sum, logsumexp, row softmax of a (n // 1000, 1000) matrix."""
import numpy as np

from .common import DTYPES, IMPLS, inputs, modules, put, ready, require, sizes, steady


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
    params = (IMPLS, ["sum", "logsumexp", "softmax"], DTYPES, sizes([10**6], [10**7]))
    param_names = ["impl", "function", "dtype", "n"]
    timeout = 300

    def setup(self, impl, name, dtype, n):
        require(impl)
        self.args = (put(impl, inputs(n, dtype).reshape(n // 1000, 1000)),)
        if impl == "numpy":
            self.fn = FUNCS[name](np)
        else:
            m, jit, _, _ = modules(impl)
            self.fn = jit(FUNCS[name](m))
            steady(impl, lambda: ready(self.fn(*self.args)))

    def time_call(self, impl, name, dtype, n):
        ready(self.fn(*self.args))
