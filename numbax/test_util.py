"""numbax.test_util: gradient checking against finite differences."""
from numbax._src.test_util import (  # noqa: F401
    check_close,
    check_grads,
    check_jvp,
    check_vjp,
    numerical_jvp,
)
