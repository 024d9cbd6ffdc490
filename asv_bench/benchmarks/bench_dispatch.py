"""Python overhead of one call: a jitted function on tiny inputs (one array, a dict of arrays),
and one eager (unjitted) numbax.numpy op. Measures dispatch, not arithmetic."""
import numpy as np

from .common import IMPLS, impls, modules, put, ready, require


def _tree_fn(p):
    return {k: v * 2.0 + 1.0 for k, v in p.items()}


class Dispatch:
    params = (impls("numbax", "jax"), ["one_array", "dict_of_8"])
    param_names = ["impl", "args"]

    def setup(self, impl, args):
        require(impl)
        _, jit, _, _ = modules(impl)
        if args == "one_array":
            self.args = (put(impl, np.ones(10)),)
            self.fn = jit(lambda x: x + 1.0)
        else:
            self.args = (put(impl, {f"w{i}": np.ones(10) for i in range(8)}),)
            self.fn = jit(_tree_fn)
        ready(self.fn(*self.args))

    def time_jit_call(self, impl, args):
        self.fn(*self.args)


class EagerOp:
    """One unjitted op on a 10-element array (numpy's own call as the floor)."""

    params = (IMPLS,)
    param_names = ["impl"]

    def setup(self, impl):
        require(impl)
        m = np if impl == "numpy" else modules(impl)[0]
        self.fn, self.args = m.sin, (m.asarray(np.ones(10)),)
        ready(self.fn(*self.args))

    def time_sin(self, impl):
        self.fn(*self.args)
