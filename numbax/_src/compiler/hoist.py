"""Loop-invariant equations moved out of scan and while bodies, as XLA's while-loop-invariant
code motion moves them.

A loop body traced from user code recomputes whatever it derives from the loop's constants
on every step: the transposes of `F @ P @ F.T`, the identity of `jnp.eye(4) - K @ H`, a
closed-over matrix converted to the carry's dtype (a power iteration's 500 x 500 conversion
ran on every one of its 100 steps). Such an equation reads only the body's constants, literals
and other such equations; it runs once before the loop and its result becomes one more
constant of the body. Broadcasts and iotas that would materialise a large array stay where
they are: inside the body they fuse into their readers for free.
"""
from __future__ import annotations

from numbax._src import core
from numbax._src.compiler import passes
from numbax._src.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from numbax._src.lax import iota as li
from numbax._src.lax import shape_ops as ls
from numbax._src.lax.control_flow.loops import scan_p, while_p

# A broadcast or iota of more elements than this (and than its operand) stays in the body:
# materialised outside it would be an array read on every step instead of a value computed
# in the reader's loop.
EXPANSION_MAX = 4096
_EXPANDING = frozenset({ls.broadcast_in_dim_p, li.iota_p})


def hoist_invariants(jaxpr: Jaxpr) -> Jaxpr:
    """`jaxpr` with the invariant equations of its scan and while bodies (nested ones too:
    inner loops first, so what leaves an inner body may leave the outer one) run before them."""
    jaxpr = passes.map_bodies(jaxpr, hoist_invariants)
    eqns: list[JaxprEqn] = []
    for eqn in jaxpr.eqns:
        if eqn.primitive is scan_p:
            eqn = _hoist_scan(eqn, eqns)
        elif eqn.primitive is while_p:
            eqn = _hoist_while(eqn, eqns)
        eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


def constants_first(jaxpr: Jaxpr) -> Jaxpr:
    """`jaxpr` with the small work on its constants alone (a sum over jacfwd's basis, a
    weight's transpose of a few elements) moved ahead of everything else, in order. Traced
    where the program had it, such work sat between two equations of one large loop nest and
    ended it: the vmapped jacobian of a 3-vector function wrote (100000, 3, 3) twice
    because a (3,) sum of its constant basis came between the last two of its operations."""
    made = set(jaxpr.constvars)
    first: list[JaxprEqn] = []
    rest: list[JaxprEqn] = []
    for e in jaxpr.eqns:
        small = all(v.aval.size <= EXPANSION_MAX for v in e.outvars)
        reads = [x for x in e.invars if isinstance(x, Var)]
        if small and reads and all(x in made for x in reads) and \
                e.primitive not in core.effectful_primitives and not _has_body(e):
            first.append(e)
            made.update(e.outvars)
        else:
            rest.append(e)
    if not first or jaxpr.eqns[:len(first)] == first:
        return jaxpr
    return Jaxpr(jaxpr.constvars, jaxpr.invars, first + rest, jaxpr.outvars)


def _hoist_scan(eqn: JaxprEqn, out: list[JaxprEqn]) -> JaxprEqn:
    p = eqn.params
    n = p["num_consts"]
    body, consts = _hoist_body(p["jaxpr"], n, eqn.invars[:n], out)
    return eqn._replace(invars=[*consts, *eqn.invars[n:]],
                        params={**p, "jaxpr": body, "num_consts": len(consts)})


def _hoist_while(eqn: JaxprEqn, out: list[JaxprEqn]) -> JaxprEqn:
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cond, cond_consts = _hoist_body(p["cond_jaxpr"], nc, eqn.invars[:nc], out)
    body, body_consts = _hoist_body(p["body_jaxpr"], nb, eqn.invars[nc:nc + nb], out)
    return eqn._replace(
        invars=[*cond_consts, *body_consts, *eqn.invars[nc + nb:]],
        params={**p, "cond_jaxpr": cond, "body_jaxpr": body,
                "cond_nconsts": len(cond_consts), "body_nconsts": len(body_consts)})


def _hoist_body(closed: ClosedJaxpr, n_consts: int, outer_consts: list,
                out: list[JaxprEqn]) -> tuple[ClosedJaxpr, list]:
    """The body without its invariant equations, which are appended to `out` reading the
    loop's operands; and the loop's constant operands: those of its own and the hoisted values
    that the body still reads."""
    body = closed.jaxpr
    outer: dict[Var, core.Atom] = dict(zip(body.invars[:n_consts], outer_consts, strict=True))
    kept: list[JaxprEqn] = []
    hoisted: list[Var] = []
    for e in body.eqns:
        if _invariant(e, outer):
            ins = [x if isinstance(x, Literal) else outer[x] for x in e.invars]
            outs = [Var(v.aval) for v in e.outvars]
            out.append(e._replace(invars=ins, outvars=outs))
            outer.update(zip(e.outvars, outs, strict=True))
            hoisted.extend(e.outvars)
        else:
            kept.append(e)
    if not hoisted:
        return closed, list(outer_consts)
    read = {x for e in kept for x in e.invars if isinstance(x, Var)} | set(body.outvars)
    consts = [v for v in [*body.invars[:n_consts], *hoisted] if v in read]
    jaxpr = Jaxpr(body.constvars, [*consts, *body.invars[n_consts:]], kept, body.outvars)
    return ClosedJaxpr(jaxpr, closed.consts), [outer[v] for v in consts]


def _invariant(eqn: JaxprEqn, outer: dict[Var, core.Atom]) -> bool:
    """Whether `eqn` reads only the loop's constants (`outer`) and literals, has no effect
    and no body of its own, and is worth a value of its own outside the loop."""
    if eqn.primitive in core.effectful_primitives or _has_body(eqn):
        return False
    if not all(isinstance(x, Literal) or x in outer for x in eqn.invars):
        return False
    if eqn.primitive in _EXPANDING:
        size = eqn.outvars[0].aval.size
        return size <= EXPANSION_MAX or size <= max((x.aval.size for x in eqn.invars),
                                                    default=0)
    return True


def _has_body(eqn: JaxprEqn) -> bool:
    return any(isinstance(v, ClosedJaxpr | Jaxpr) or
               isinstance(v, tuple) and any(isinstance(b, ClosedJaxpr | Jaxpr) for b in v)
               for v in eqn.params.values())
