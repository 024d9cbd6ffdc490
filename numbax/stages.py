"""numbax.stages: the ahead-of-time stages of a jitted function, as jax.stages.

`jit(f).trace(*args)` gives a `Traced`, `.lower()` a `Lowered` and `.compile()` a `Compiled`;
`jit(f)` itself is a `Wrapped`. See docs/sharp_bits.md for what their reports mean here.
"""
from numbax._src.stages import (  # noqa: F401
    ArgInfo,
    Compiled,
    CompilerOptions,
    Lowered,
    Traced,
    Wrapped,
)

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
