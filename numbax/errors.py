"""numbax.errors: the exceptions numbax raises, as jax.errors (plus numbax's argument errors)."""
from numbax._src.errors import (  # noqa: F401
    ConcretizationTypeError,
    InconclusiveDimensionOperation,
    JAXIndexError,
    JaxprTypeError,
    JaxRuntimeError,
    JAXTypeError,
    KeyReuseError,
    NonConcreteBooleanIndexError,
    NumbaxTypeError,
    NumbaxValueError,
    ShapeDtypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
