"""Matrix rows of the host callbacks (_src/callbacks.py): debug_callback, debug_print,
pure_callback and io_callback, and checkify's check / check_error outside checkify (effects
run on the host). A debug callback's derivative is its argument's (it has no outputs);
pure/io callbacks are not differentiable, as in JAX. The reads and writes of a Ref's buffer
(ref_get, ref_set) run there too."""
from __future__ import annotations

import numpy as np

import numbax
from numbax import numpy as jnp
from numbax.experimental import checkify, io_callback
from tests.lax.matrix_cases import Case

RNG = np.random.default_rng(5)
X = RNG.normal(size=(3, 4))


def _printed(x):
    numbax.debug.print("row {}", x.sum())
    return x * 2.0


def _called(x):
    numbax.debug.callback(lambda v: None, x)
    return x * 2.0


def _pure(x, method):
    spec = numbax.ShapeDtypeStruct(np.shape(x), np.result_type(x))
    return numbax.pure_callback(np.cos, spec, x, vmap_method=method) + x


def _io(x):
    spec = numbax.ShapeDtypeStruct(np.shape(x), np.result_type(x))
    return io_callback(np.tanh, spec, x) * 2.0


def _checked(x):
    checkify.check(jnp.all(x > -100.0), "x has an entry below -100: {}", x)
    return x * 2.0


def _rethrown(x):
    err, y = checkify.checkify(_checked)(x)
    checkify.check_error(err)
    return y + 1.0


_OFFSET = numbax.new_ref(RNG.normal(size=(3, 4)))
_LAST_SUM = numbax.new_ref(0.0)


def _offset(x):
    return x * _OFFSET[...]


def _record(x):
    _LAST_SUM[...] = x.sum()
    return x * 2.0


def cases() -> dict[str, list[Case]]:
    return {
        "debug_print": [Case(_printed, (X,), (0,))],
        "debug_callback": [Case(_called, (X,), (0,))],
        "pure_callback": [Case(lambda x: _pure(x, "sequential"), (X,)),
                          Case(lambda x: _pure(x, "expand_dims"), (X,)),
                          Case(lambda x: _pure(x, "broadcast_all"), (X,))],
        "io_callback": [Case(_io, (X,))],
        "check": [Case(_checked, (X,), (0,))],
        "check_error": [Case(_rethrown, (X,), (0,))],
        "ref_get": [Case(_offset, (X,), (0,))],
        # a batched value cannot be written into a Ref made outside vmap (as in JAX)
        "ref_set": [Case(_record, (X,), (0,), vmap=False)],
    }
