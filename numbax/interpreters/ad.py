"""numbax.interpreters.ad: autodiff rules and helpers (JAX's jax.interpreters.ad)."""
from __future__ import annotations  # also a public name of JAX's module

from numbax._src.interpreters.ad import (  # noqa: F401
    JVPTrace,
    JVPTracer,
    UndefinedPrimal,
    Zero,
    add_tangents,
    instantiate_zeros,
    is_undefined_primal,
    zeros_like_aval,
)
from numbax._src.interpreters.ad_extend import (  # noqa: F401
    add_jaxvals,
    add_jaxvals_p,
    defbilinear,
    defjvp,
    defjvp2,
    deflinear,
    deflinear2,
    get_primitive_transpose,
    jvp,
    linearize,
    primitive_jvps,
    primitive_transposes,
)
