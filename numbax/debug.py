"""numbax.debug: jax.debug's printing, callbacks and breakpoints, which run with concrete values
inside jit, vmap, grad and control flow, and the sharding drawings."""
from numbax._src.callbacks import DebugEffect, OrderedDebugEffect  # noqa: F401
from numbax._src.debugger import breakpoint  # noqa: F401, A004
from numbax._src.debugging import debug_callback as callback  # noqa: F401
from numbax._src.debugging import debug_log as log  # noqa: F401
from numbax._src.debugging import debug_print as print  # noqa: F401, A004
from numbax._src.parallel.visualize import (  # noqa: F401
    inspect_array_sharding,
    visualize_array_sharding,
    visualize_sharding,
)

__all__ = ["DebugEffect", "OrderedDebugEffect", "breakpoint", "callback", "inspect_array_sharding",
           "log", "print", "visualize_array_sharding", "visualize_sharding"]
