"""numbax.ref: mutable array references (jax.ref)."""
from numbax._src.refs import (  # noqa: F401
    Ref,
    addupdate,
    empty_ref,
    free_ref,
    freeze,
    get,
    new_ref,
    set,
    swap,
)

__all__ = ["Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get", "new_ref", "set",
           "swap"]
