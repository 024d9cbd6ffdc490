"""Eager scans and while loops that run long are compiled, as JAX compiles every eager loop.

Run eagerly, a loop evaluates its body's jaxpr equation by equation in Python at every step,
~20-60 us an equation: `lax.fori_loop(0, 10_000, body, x)` of a three-operation body took
2.7 s on the 2-core VM, where JAX's eager call compiles the loop (0.13 s once, then 1.4 ms a
call). numbax's first compile of a loop costs ~0.3-1 s (then milliseconds in the same process,
the disk cache's load in a new one), so a loop runs compiled only when its eager steps would
take about as long: a scan of `length` steps whose body has `e` equations when length * e >=
COMPILE_AT_WORK and length >= MIN_STEPS, a while loop once it has run WHILE_EAGER_WORK and
MIN_STEPS steps eagerly (its trip count is unknown up front), the steps left handed to the
compiled loop with the carry as it stands. The choice depends only on the loop's operands, so
the same call always gives the same bits (compiled transcendental functions may differ from
numpy's in the last ulp: docs/sharp_bits.md). With `jax_disable_jit` loops stay eager, as JAX's do.

A loop whose compile fails (a primitive no backend lowers) runs eagerly; `FALLBACKS` says why.
"""
from __future__ import annotations

import numpy as np

from numbax._src import core
from numbax._src.compiler import api as compiler
from numbax._src.config import config
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import convert
from numbax._src.lax import elementwise as ew
from numbax._src.lax.control_flow import loops

COMPILE_AT_WORK = 4096  # a scan's steps x body equations: ~0.1-0.2 s of eager Python
# ... and the eager work (steps x cond and body equations) after which a while loop compiles:
# less, since every call of a long loop pays it again (20,000 steps of a 3-equation loop took
# 142 ms a call on 16 Xeon cores at 4096, 2048 of them eager; JAX's 26 ms)
WHILE_EAGER_WORK = 1024
# A loop compiles only after this many steps whatever its body: a body's compile grows with
# its equations as its eager steps do, so the break-even is a step count. An adaptive ODE
# solver's backward pass (eager grad of odeint: eight while loops of ~200-equation bodies)
# compiled after 5 steps each, 25 s against 8 eagerly.
MIN_STEPS = 256
FALLBACKS: dict[str, str] = {}  # loop primitive -> why its last compile failed (debugging)
LOOPS = (loops.scan_p, loops.while_p)  # the primitives `run` may compile


def run(primitive: core.Primitive, args: list, params: dict) -> list | None:
    """The outputs of an eager scan or while loop on host operands `args`, from compiled code
    where it is worth compiling (see the module docstring); None: the caller runs the impl."""
    if config.jax_disable_jit:
        return None
    if primitive is loops.scan_p:
        length = params["length"]
        work = length * max(1, len(params["jaxpr"].jaxpr.eqns))
        return _compiled(primitive, args, params) \
            if length >= MIN_STEPS and work >= COMPILE_AT_WORK else None
    if primitive is loops.while_p:
        per_step = len(params["cond_jaxpr"].jaxpr.eqns) + len(params["body_jaxpr"].jaxpr.eqns)
        steps = max(MIN_STEPS, WHILE_EAGER_WORK // max(1, per_step))
        trips = counted_steps(args, params)
        if trips is not None and trips > steps:  # past the eager budget: compiled throughout
            return _compiled(primitive, args, params)  # (None: the impl runs it eagerly)
        operands, finished = loops.while_steps(args, steps, **params)
        if finished:
            return operands[params["cond_nconsts"] + params["body_nconsts"]:]
        outs = _compiled(primitive, operands, params)
        # (where it does not compile, the rest of the loop eagerly)
        return core.impl_rules[primitive](*operands, **params) if outs is None else outs
    return None


def _compiled(primitive: core.Primitive, args: list, params: dict) -> list | None:
    """primitive(*args, **params) as a one-equation CPU program (compiler.compile keeps the
    programs it has built by structure, so a loop traced again costs its trace and a key),
    or None where it does not compile."""
    args = [core.to_numpy(a) for a in args]  # (a while loop's eager steps give Arrays)
    avals = [core.get_aval(a) for a in args]
    try:
        program = pe.trace_to_closed_jaxpr(lambda *xs: primitive.bind(*xs, **params), avals)
        exe = compiler.compile(program, "cpu", name=f"eager_{primitive.name}")
    except Exception as e:  # noqa: BLE001 - no lowering for some body primitive: stay eager
        FALLBACKS[primitive.name] = f"{type(e).__name__}: {e}"
        return None
    return list(exe(*args))


# i < n and i <= n, and the same written n > i and n >= i: (whether n comes first, inclusive)
_COUNTING_TESTS = {ew.lt_p: (False, False), ew.le_p: (False, True),
                   ew.gt_p: (True, False), ew.ge_p: (True, True)}


def counted_steps(args: list, params: dict) -> int | None:
    """The number of steps of an eager while loop whose condition is one comparison of an
    integer scalar carry `i` with a bound `n` (i < n, i <= n, n > i or n >= i) and whose body
    adds a positive integer literal to `i`, where `n` is a literal, one of the condition's
    constants, or a carry the body passes on unchanged (JAX's fori_loop with traced bounds),
    possibly through convert_element_type; None for any other loop, or where the counter
    would wrap around its dtype before the test fails."""
    cond, body = params["cond_jaxpr"], params["body_jaxpr"]
    nc, nb = params["cond_nconsts"], params["body_nconsts"]
    if len(cond.jaxpr.eqns) < 1 or len(cond.jaxpr.outvars) != 1:
        return None
    test = cond.jaxpr.eqns[-1]
    if test.primitive not in _COUNTING_TESTS or test.outvars[0] is not cond.jaxpr.outvars[0]:
        return None
    bound_first, inclusive = _COUNTING_TESTS[test.primitive]
    producers = {v: e for e in cond.jaxpr.eqns[:-1] for v in e.outvars}
    counter, bound = (_before_widening(x, producers) for x in
                      (test.invars[::-1] if bound_first else test.invars))
    carry = cond.jaxpr.invars[nc:]
    if counter not in carry or bound in producers:
        return None
    position = carry.index(counter)
    n = _value_of(bound, cond, args, nc, nb, body)
    step = _counter_step(body, nb, position)
    start = args[nc + nb + position]
    if n is None or step is None:
        return None
    start = np.asarray(core.to_numpy(start))
    if start.shape != () or start.dtype.kind not in "iu":
        return None
    i0, last = int(start), int(n) + (1 if inclusive else 0)  # the loop runs while i < last
    trips = max(0, -(-(last - i0) // step))
    return trips if i0 + trips * step <= np.iinfo(start.dtype).max else None


def _before_widening(atom, producers: dict):
    """`atom` before the conversions that made it, where each keeps every value (int32 to
    int64, a weak int64 to a strong one: a captured scalar or a Python int meeting one)."""
    while atom in producers and producers[atom].primitive is convert.convert_element_type_p:
        source = producers[atom].invars[0]
        if not np.can_cast(source.aval.dtype, atom.aval.dtype, "safe"):
            break
        atom = source
    return atom


def _value_of(atom, cond, args: list, nc: int, nb: int, body) -> int | None:
    """The integer value of a condition's operand that no step changes, or None."""
    if isinstance(atom, core.Literal):
        value = atom.val
    elif atom in cond.jaxpr.constvars:
        value = cond.consts[cond.jaxpr.constvars.index(atom)]
    elif atom in cond.jaxpr.invars[:nc]:
        value = args[cond.jaxpr.invars.index(atom)]
    elif atom in cond.jaxpr.invars[nc:]:  # a carry: only if the body hands it on as it is
        position = cond.jaxpr.invars[nc:].index(atom)
        if body.jaxpr.outvars[position] is not body.jaxpr.invars[nb + position]:
            return None
        value = args[nc + nb + position]
    else:
        return None
    value = np.asarray(core.to_numpy(value))
    return int(value) if value.shape == () and value.dtype.kind in "iu" else None


def _counter_step(body, nb: int, position: int) -> int | None:
    """s where the body's output at carry `position` is that carry plus the literal s > 0."""
    counter, out = body.jaxpr.invars[nb + position], body.jaxpr.outvars[position]
    for eqn in body.jaxpr.eqns:
        if out in eqn.outvars:
            if eqn.primitive is not ew.add_p or counter not in eqn.invars:
                return None
            other = eqn.invars[1 - eqn.invars.index(counter)]
            if not isinstance(other, core.Literal):
                return None
            step = np.asarray(other.val)
            return int(step) if step.dtype.kind in "iu" and int(step) > 0 else None
    return None
