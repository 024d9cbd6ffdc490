"""numbax.core: JAX's jax.core names (avals, traces, tracers, jaxpr evaluation)."""
from numbax._src.core import Atom, ShapedArray, Trace, Tracer, get_aval  # noqa: F401
from numbax._src.extend_core import (  # noqa: F401
    AbstractValue,
    ensure_compile_time_eval,
    eval_context,
    eval_jaxpr,
    max_dim,
    min_dim,
)

ParamDict = dict  # an equation's params: str -> value
Value = object  # any value a primitive accepts
