"""numbax.interpreters.batching: vmap rules and helpers (JAX's jax.interpreters.batching)."""
from numbax._src.interpreters.batching_extend import (  # noqa: F401  # noqa: E402, F401
    axis_primitive_batchers,
    bdim_at_front,
    broadcast,
    defbroadcasting,
    defreducer,
    defvectorized,
    fancy_primitive_batchers,
    primitive_batchers,
    register_vmappable,
    unregister_vmappable,
)
