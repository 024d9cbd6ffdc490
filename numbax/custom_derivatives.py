"""numbax.custom_derivatives: user-defined derivatives (jax.custom_derivatives): custom_jvp,
custom_vjp, custom_gradient, closure_convert, linear_call, the symbolic-zeros helpers and the
primitives they bind."""
from numbax._src.closure_convert import closure_convert, custom_gradient  # noqa: F401
from numbax._src.custom_derivatives import (  # noqa: F401
    custom_jvp,
    custom_jvp_call_p,
    custom_vjp,
    custom_vjp_call_p,
)
from numbax._src.linear_call import linear_call  # noqa: F401
from numbax._src.remat_opt import remat_opt_p  # noqa: F401
from numbax._src.symbolic_zeros import (  # noqa: F401
    CustomVJPPrimal,
    SymbolicZero,
    custom_vjp_primal_tree_values,
    zero_from_primal,
)

__all__ = ["CustomVJPPrimal", "SymbolicZero", "closure_convert", "custom_gradient",
           "custom_jvp", "custom_jvp_call_p", "custom_vjp", "custom_vjp_call_p",
           "custom_vjp_primal_tree_values", "linear_call", "remat_opt_p", "zero_from_primal"]
