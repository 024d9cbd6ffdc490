"""numbax.errors: the exceptions numbax raises."""
from numbax._src.errors import (  # noqa: F401
    ConcretizationTypeError,
    NumbaxTypeError,
    NumbaxValueError,
    TracerArrayConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
