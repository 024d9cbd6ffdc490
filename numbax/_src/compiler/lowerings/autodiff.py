"""Autodiff helpers: checkpoint_name's `name` (an identity, fused as a copy of its operand) and
custom_vjp(optimize_remat=True)'s `remat_opt` and linear_call (calls, inlined)."""
from __future__ import annotations

from numbax._src.checkpoint_policies import name_p
from numbax._src.compiler.lowerings.elementwise import elementwise
from numbax._src.compiler.lowerings.forms import template
from numbax._src.compiler.registry import register
from numbax._src.linear_call import linear_call_p
from numbax._src.remat_opt import remat_opt_p

elementwise(name_p, template("{0}"), template("{0}"), cuda_complex=template("{0}"))

# custom_vjp(optimize_remat=True)'s fwd: under jit a call of its fwd jaxpr, inlined
register(remat_opt_p, inline="fwd_jaxpr")
# linear_call: under jit its transpose has been taken while tracing; a call of its jaxpr
register(linear_call_p, inline="callee")
