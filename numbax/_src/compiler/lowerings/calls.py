"""Call-like primitives (custom_jvp_call, custom_vjp_call, custom_vmap_call, checkpoint):
under jit their derivative and batching rules have done their work while tracing, so each is
inlined (compiler/inline.py) as the equations of the jaxpr held in the param named here;
custom_linear_solve likewise, as its solve jaxpr (an expansion); and custom_lin."""
from __future__ import annotations

from numbax._src.checkpoint import checkpoint_p
from numbax._src.compiler.registry import EAGER, register
from numbax._src.custom_batching import custom_vmap_call_p
from numbax._src.custom_derivatives import custom_jvp_call_p, custom_lin_p, custom_vjp_call_p
from numbax._src.lax.control_flow import linear_solve

register(custom_jvp_call_p, inline="call_jaxpr")
register(custom_vjp_call_p, inline="call_jaxpr")
register(custom_vmap_call_p, inline="call_jaxpr")
register(checkpoint_p, inline="jaxpr")
# custom_vjp's linearized call: transposed away before anything compiles under grad; a jitted
# linearize keeps it, and the driver runs its impl (the user's backward function)
register(custom_lin_p, backend="cpu", library=EAGER)
# custom_linear_solve: a call of its solve jaxpr on the solve's operands; eager where that
# jaxpr closes over arrays (the expansion is not spliced in then)
register(linear_solve.linear_solve_p, expand=linear_solve.expand_linear_solve)
register(linear_solve.linear_solve_p, backend="cpu", library=EAGER)
