"""numbax.experimental.checkify: functionalised checks (jax.experimental.checkify)."""
from numbax._src.checkify import check, check_error, checkify, debug_check  # noqa: F401
from numbax._src.checkify_errors import (  # noqa: F401
    DivisionByZeroError,
    Error,
    ErrorCategory,
    FailedCheckError,
    JaxException,
    JaxRuntimeError,
    NaNError,
    OOBError,
    all_checks,
    automatic_checks,
    div_checks,
    float_checks,
    index_checks,
    init_error,
    nan_checks,
    user_checks,
)

__all__ = ["DivisionByZeroError", "Error", "ErrorCategory", "FailedCheckError",
           "JaxException", "JaxRuntimeError", "NaNError", "OOBError", "all_checks",
           "automatic_checks", "check", "check_error", "checkify", "debug_check", "div_checks",
           "float_checks", "index_checks", "init_error", "nan_checks", "user_checks"]
