"""Records jax.errors' class hierarchy and which class JAX raises where, into
errors_jax_reference.json (run once, with jax):

    /work/jaxenv/bin/python tests/data/make_errors_reference.py
"""
import builtins
import json
import operator
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from jax import errors, lax

OUT = pathlib.Path(__file__).with_name("errors_jax_reference.json")


def bases() -> dict:
    out = {}
    for name in dir(errors):
        cls = getattr(errors, name)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            out[name] = [c.__name__ for c in cls.__mro__[1:]
                         if c.__name__ in dir(errors) or hasattr(builtins, c.__name__)]
    return out


CASES = {
    "bool_of_tracer": lambda: jax.jit(lambda x: 1 if x > 0 else 2)(1.0),
    "int_of_tracer": lambda: jax.jit(lambda x: int(x))(1.0),
    "float_of_tracer": lambda: jax.jit(lambda x: float(x))(1.0),
    "index_of_tracer": lambda: jax.jit(lambda x: operator.index(x))(1),
    "asarray_of_tracer": lambda: jax.jit(lambda x: np.asarray(x))(1.0),
    "boolean_mask_traced": lambda: jax.jit(lambda x: x[x > 0])(jnp.ones(3)),
    "jnp_add_shapes": lambda: jnp.add(jnp.ones(3), jnp.ones(4)),
    "jnp_dot_shapes": lambda: jnp.dot(jnp.ones(3), jnp.ones(4)),
    "jnp_matmul_shapes": lambda: jnp.matmul(jnp.ones((2, 3)), jnp.ones((4, 2))),
    "jnp_concatenate_shapes": lambda: jnp.concatenate([jnp.ones((2, 3)), jnp.ones((2, 4))]),
    "jnp_reshape_size": lambda: jnp.reshape(jnp.ones(6), (4,)),
    "jnp_stack_shapes": lambda: jnp.stack([jnp.ones(3), jnp.ones(4)]),
    "jnp_broadcast_to": lambda: jnp.broadcast_to(jnp.ones(3), (4,)),
    "lax_add_shapes": lambda: lax.add(jnp.ones(3), jnp.ones(4)),
    "lax_add_dtypes": lambda: lax.add(jnp.ones(3), jnp.ones(3, jnp.int32)),
    "lax_dot_general_sizes": lambda: lax.dot_general(jnp.ones(3), jnp.ones(4),
                                                     (((0,), (0,)), ((), ()))),
    "lax_reshape_size": lambda: lax.reshape(jnp.ones(3), (4,)),
}


def raised() -> dict:
    out = {}
    for name, fn in CASES.items():
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            out[name] = [c.__name__ for c in type(e).__mro__
                         if c.__name__ in dir(errors) or hasattr(builtins, c.__name__)]
        else:
            out[name] = None
    return out


if __name__ == "__main__":
    data = {"jax_version": jax.__version__, "bases": bases(), "raised": raised()}
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")
