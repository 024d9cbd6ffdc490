"""numbax.custom_batching: functions with user-written vmap rules (jax.custom_batching)."""
from numbax._src.custom_batching import (  # noqa: F401
    custom_vmap,
    custom_vmap_call_p,
    sequential_vmap,
)

__all__ = ["custom_vmap", "custom_vmap_call_p", "sequential_vmap"]
