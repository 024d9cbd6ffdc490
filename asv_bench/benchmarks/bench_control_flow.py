"""Control flow under jit: a tanh RNN as lax.scan over 100 steps, and Newton's method for
square roots as a lax.while_loop vmapped over n starting values (numpy: the same loops in
Python, the Newton one vectorised)."""
import numpy as np

from .common import DTYPES, IMPLS, put, ready, require, sizes, steady

STEPS = 100


def _lax(impl):
    if impl == "numbax":
        import numbax
        import numbax.numpy as jnp
        from numbax import lax

        return numbax, jnp, lax
    import jax
    import jax.numpy as jjnp
    from jax import lax

    return jax, jjnp, lax


def rnn_numpy(w, u, xs, h0):
    h = h0
    for x in xs:
        h = np.tanh(h @ w + x @ u)
    return h


def make_rnn(impl):
    api, m, lax = _lax(impl)

    def rnn(w, u, xs, h0):
        def cell(h, x):
            h = m.tanh(h @ w + x @ u)
            return h, h

        h, _ = lax.scan(cell, h0, xs)
        return h

    return api.jit(rnn)


class ScanRNN:
    params = (IMPLS, DTYPES, sizes([64], [256]))
    param_names = ["impl", "dtype", "hidden"]
    timeout = 300

    def setup(self, impl, dtype, hidden):
        require(impl)
        rng = np.random.default_rng(0)
        w = (rng.normal(size=(hidden, hidden)) / np.sqrt(hidden)).astype(dtype)
        u = (rng.normal(size=(16, hidden)) / 4).astype(dtype)
        xs = rng.normal(size=(STEPS, 8, 16)).astype(dtype)  # steps, batch 8, features 16
        h0 = np.zeros((8, hidden), dtype)
        self.args = put(impl, (w, u, xs, h0))
        self.fn = rnn_numpy if impl == "numpy" else make_rnn(impl)
        steady(impl, lambda: ready(self.fn(*self.args)))

    def time_scan_rnn(self, impl, dtype, hidden):
        ready(self.fn(*self.args))


def newton_numpy(a, tol=1e-6):
    x = np.maximum(a, 1.0)
    while True:
        nxt = 0.5 * (x + a / x)
        if np.all(np.abs(nxt - x) <= tol * nxt):
            return nxt
        x = nxt


def make_newton(impl, tol=1e-6):
    api, m, lax = _lax(impl)

    def sqrt(a):
        def cond(state):
            x, prev = state
            return m.abs(x - prev) > tol * x

        def body(state):
            x, _ = state
            return 0.5 * (x + a / x), x

        x0 = m.maximum(a, 1.0)
        return lax.while_loop(cond, body, (0.5 * (x0 + a / x0), x0))[0]

    return api.jit(api.vmap(sqrt))


class NewtonWhileLoop:
    params = (IMPLS, DTYPES, sizes([10**4], [10**6]))
    param_names = ["impl", "dtype", "n"]
    timeout = 300

    def setup(self, impl, dtype, n):
        require(impl)
        a = np.random.default_rng(0).uniform(0.1, 1000.0, size=n).astype(dtype)
        self.args = (put(impl, a),)
        self.fn = newton_numpy if impl == "numpy" else make_newton(impl)
        steady(impl, lambda: ready(self.fn(*self.args)))

    def time_newton_sqrt(self, impl, dtype, n):
        ready(self.fn(*self.args))
