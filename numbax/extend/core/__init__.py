"""numbax.extend.core: primitives, jaxprs and the trace state (JAX's jax.extend.core)."""
from numbax._src.core import (  # noqa: F401
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    JaxprTypeError,
    Literal,
    Primitive,
    Var,
)
from numbax._src.extend_core import (  # noqa: F401
    AbstractToken,
    CallPrimitive,
    DebugInfo,
    DropVar,
    Effect,
    Effects,
    InconclusiveDimensionOperation,
    Token,
    TraceTag,
    array_types,
    call_impl,
    check_jaxpr,
    concrete_or_error,
    find_top_trace,
    gensym,
    get_opaque_trace_state,
    jaxpr_as_fun,
    jaxprs_in_params,
    mapped_aval,
    new_jaxpr_eqn,
    no_effects,
    primal_dtype_to_tangent_dtype,
    set_current_trace,
    subjaxprs,
    take_current_trace,
    unmapped_aval,
    valid_jaxtype,
)
from numbax._src.extend_core import (  # noqa: F401
    nonempty_axis_env as nonempty_axis_env_DO_NOT_USE,
)
from numbax._src.extend_core import (  # noqa: F401
    unsafe_am_i_under_a_jit as unsafe_am_i_under_a_jit_DO_NOT_USE,
)
from numbax._src.extend_core import (  # noqa: F401
    unsafe_am_i_under_a_vmap as unsafe_am_i_under_a_vmap_DO_NOT_USE,
)
from numbax._src.extend_core import (  # noqa: F401
    unsafe_get_axis_names as unsafe_get_axis_names_DO_NOT_USE,
)
