"""numbax's error classes (public as numbax.errors); each subclasses the builtin users catch."""
from __future__ import annotations


class ConcretizationTypeError(TypeError):
    """A traced value was used where Python needs a concrete one (if, bool(), int(), shapes)."""

    def __init__(self, tracer_desc: str, context: str = "") -> None:
        what = f" in {context}" if context else ""
        super().__init__(
            f"Abstract tracer value encountered where a concrete value is expected{what}: "
            f"{tracer_desc}. The value depends on a traced argument, so Python cannot branch "
            "on it or convert it. Either mark the argument static (jit(f, static_argnums=...) "
            "or static_argnames=...), or use structured control flow "
            "(numbax.lax.cond, lax.switch, lax.while_loop, lax.fori_loop) or numbax.numpy.where."
        )


class TracerArrayConversionError(TypeError):
    """A tracer was passed to numpy (np.asarray) where numbax cannot intercept the call."""

    def __init__(self, tracer_desc: str) -> None:
        super().__init__(
            f"numpy cannot convert the traced value {tracer_desc} to an array: it has no value "
            "yet. Use numbax.numpy functions on traced values, or numpy functions that dispatch "
            "through __array_ufunc__/__array_function__ (np.sin(x), np.sum(x), ...)."
        )


class TracerIntegerConversionError(TypeError):
    """A tracer was used as a Python index or integer (operator.index)."""

    def __init__(self, tracer_desc: str) -> None:
        super().__init__(
            f"The traced value {tracer_desc} cannot be used as a Python integer (index, range, "
            "shape). Mark it static (static_argnums) or use lax.dynamic_slice / lax.fori_loop."
        )


class UnexpectedTracerError(RuntimeError):
    """A tracer escaped the transformation that created it (e.g. stored in a global)."""


class NumbaxTypeError(TypeError):
    """Bad dtype or structure passed to a public function."""


class NumbaxValueError(ValueError):
    """Bad shape or value passed to a public function."""


class NumbaxDTypeError(NumbaxTypeError, NumbaxValueError):
    """A bad dtype argument where JAX raises ValueError (numpy: TypeError); catches as both."""


class NumbaxOverflowError(OverflowError):
    """An integer argument outside the range JAX accepts (e.g. a PRNG seed >= 2**63)."""


__all__ = [
    "ConcretizationTypeError",
    "TracerArrayConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
    "NumbaxTypeError",
    "NumbaxValueError",
    "NumbaxDTypeError",
    "NumbaxOverflowError",
]
