"""numbax's error classes (public as numbax.errors): JAX's classes with JAX's hierarchy, each a
subclass of the builtin users catch, plus numbax's own argument errors."""
from __future__ import annotations

from typing import Any


def _describe(tracer: Any) -> str:
    """A tracer's description for messages; callers may pass the description itself."""
    describe = getattr(tracer, "_describe", None)
    return describe() if callable(describe) else str(tracer)


class JAXTypeError(TypeError):
    """A TypeError specific to tracing and transformations (base of JAX's tracer errors)."""


class JAXIndexError(IndexError):
    """An IndexError specific to tracing (base of NonConcreteBooleanIndexError)."""


class ConcretizationTypeError(JAXTypeError):
    """A traced value was used where Python needs a concrete one (if, bool(), int(), shapes).

    Args:
      tracer: the tracer (or its description).
      context: where the concrete value was needed (e.g. "bool()").
    """

    def __init__(self, tracer: Any, context: str = "") -> None:
        what = f" in {context}" if context else ""
        super().__init__(
            f"Abstract tracer value encountered where a concrete value is expected{what}: "
            f"{_describe(tracer)}. The value depends on a traced argument, so Python cannot "
            "branch on it or convert it. Either mark the argument static (jit(f, "
            "static_argnums=...) or static_argnames=...), or use structured control flow "
            "(numbax.lax.cond, lax.switch, lax.while_loop, lax.fori_loop) or "
            "numbax.numpy.where."
        )


class TracerBoolConversionError(ConcretizationTypeError):
    """bool() of a traced value (an `if` or `while` on it, `and`/`or`/`not`)."""

    def __init__(self, tracer: Any) -> None:
        JAXTypeError.__init__(
            self,
            f"Attempted boolean conversion of {_describe(tracer)}: its value is not known "
            "while tracing, so Python cannot branch on it (if/while/and/or/not). Use "
            "numbax.lax.cond or lax.while_loop for traced conditions, numbax.numpy.where to "
            "select values, or mark the argument static (jit(f, static_argnums=...)).",
        )


class TracerIntegerConversionError(JAXTypeError):
    """A tracer was used as a Python index or integer (operator.index)."""

    def __init__(self, tracer: Any) -> None:
        super().__init__(
            f"The traced value {_describe(tracer)} cannot be used as a Python integer (index, "
            "range, shape). Mark it static (static_argnums) or use lax.dynamic_slice / "
            "lax.fori_loop."
        )


class TracerArrayConversionError(JAXTypeError):
    """A tracer was passed to numpy (np.asarray) where numbax cannot intercept the call."""

    def __init__(self, tracer: Any) -> None:
        super().__init__(
            f"numpy cannot convert the traced value {_describe(tracer)} to an array: it has no "
            "value yet. Use numbax.numpy functions on traced values, or numpy functions that "
            "dispatch through __array_ufunc__/__array_function__ (np.sin(x), np.sum(x), ...)."
        )


class NonConcreteBooleanIndexError(JAXIndexError):
    """x[mask] with a traced boolean mask: the result's size would depend on traced values."""

    def __init__(self, tracer: Any) -> None:
        super().__init__(
            f"Array boolean indices must be concrete; got {_describe(tracer)}. A traced mask "
            "gives an output of unknown size. Use numbax.numpy.where(mask, x, other) instead, "
            "or make the mask concrete (a static argument)."
        )


class UnexpectedTracerError(JAXTypeError):
    """A tracer escaped the transformation that created it (e.g. stored in a global)."""


class KeyReuseError(JAXTypeError):
    """A PRNG key was consumed twice while key-reuse checking (jax_debug_key_reuse) is on."""


class JaxprTypeError(TypeError):
    """A jaxpr failed its type check (an internal invariant, reported with the equation)."""


class InconclusiveDimensionOperation(Exception):  # noqa: N818 - JAX's name
    """A computation on symbolic dimensions has no definite answer (JAX's shape polymorphism;
    numbax's shapes are always concrete, so numbax itself never raises it)."""


class JaxRuntimeError(RuntimeError):
    """A failure while running a compiled program (not while tracing or checking arguments)."""


class TypePromotionError(ValueError):
    """Implicit dtype promotion that the current rules forbid (jax_numpy_dtype_promotion=
    "strict"); public as numbax.dtypes.TypePromotionError."""


class NumbaxTypeError(TypeError):
    """Bad dtype or structure passed to a public function."""


class NumbaxValueError(ValueError):
    """Bad shape or value passed to a public function."""


class NumbaxDTypeError(NumbaxTypeError, NumbaxValueError):
    """A bad dtype argument where JAX raises ValueError (numpy: TypeError); catches as both."""


class NumbaxOverflowError(OverflowError):
    """An integer argument outside the range JAX accepts (e.g. a PRNG seed >= 2**63)."""


class IntegerOverflowError(NumbaxOverflowError, NumbaxTypeError):
    """A Python int that does not fit the integer dtype it becomes (jnp.array(2**70), or
    jnp.array(300, jnp.int8)): an OverflowError, as JAX raises, and a TypeError, as numbax
    raised before."""


class UnhashableStaticArgumentError(NumbaxValueError, NumbaxTypeError):
    """A static argument of jit (static_argnums / static_argnames) that is not hashable: a
    ValueError, as JAX raises, and a TypeError, as numbax (and hash()) raised before."""


class ShapeDtypeError(NumbaxTypeError, NumbaxValueError):
    """Operands whose shapes or dtypes do not fit the operation (add of (3,) and (4,), dot of
    mismatched inner sizes, concatenate of unequal ranks, reshape to another size). It is a
    TypeError, as JAX raises there, and a ValueError, as numpy raises there."""


class ShardingTypeError(Exception):
    """An explicit-sharding rule has no answer for its operands' shardings (JAX's
    core.ShardingTypeError): pass out_sharding, or reshard an operand first."""


class DuplicateSpecError(Exception):
    """A PartitionSpec maps one mesh axis to two dimensions."""


class IndivisibleError(ValueError):
    """A sharded dimension is not divisible by the number of its shards."""


__all__ = [
    "ConcretizationTypeError",
    "InconclusiveDimensionOperation",
    "IntegerOverflowError",
    "JAXIndexError",
    "JAXTypeError",
    "JaxRuntimeError",
    "JaxprTypeError",
    "KeyReuseError",
    "NonConcreteBooleanIndexError",
    "NumbaxTypeError",
    "NumbaxValueError",
    "NumbaxDTypeError",
    "NumbaxOverflowError",
    "ShapeDtypeError",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "TypePromotionError",
    "UnexpectedTracerError",
    "UnhashableStaticArgumentError",
]
