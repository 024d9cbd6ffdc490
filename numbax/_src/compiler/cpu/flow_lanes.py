"""A vmapped while loop in lanes: vmap of a scalar function with a while loop becomes a scan
over the examples whose body holds the while (batching's per-example loop); rendered as
`flow_statements.render_scan` does it, each example ran its own while loop, a chain of
dependent scalar operations a step (latency-bound: 20 bisection steps for each of 100k
elements took 7.1 ms on the VM's two cores, jax.jit 2.4). Here the examples run in blocks of
LANES: each block's loop steps all its lanes together while any lane's condition holds, a
lane whose condition has failed keeping its carries (as JAX's batched while does, over the
whole batch); the loop over the lanes has a constant trip count and no branches, so LLVM
vectorises it (the same program: 1.0 ms).

Only scalar programs take this form: the scan's steps read one element of each operand and
write one element of each output, and every equation of the step, the while's condition and
its body is a scalar operation with a scalar form (no nested control flow, no effects, no
arrays); others keep the scan's own rendering."""
from __future__ import annotations

import numpy as np

from numbax._src import core
from numbax._src.compiler import registry
from numbax._src.compiler.cpu import work
from numbax._src.compiler.cpu.control_flow import Function
from numbax._src.compiler.registry import Fusion
from numbax._src.compiler.source import dtype_ctor, render_scalar
from numbax._src.core import ClosedJaxpr, JaxprEqn, Literal
from numbax._src.lax.control_flow.loops import while_p

LANES = 16  # one AVX-512 vector of float32 (two AVX2 ones)


def _scalar_op(eqn: JaxprEqn) -> bool:
    """Whether `eqn` is a pure scalar operation the renderer writes as one expression."""
    if len(eqn.outvars) != 1 or eqn.primitive in core.effectful_primitives:
        return False
    if any(x.aval.ndim for x in (*eqn.invars, *eqn.outvars)):
        return False
    low = registry.lowering(eqn.primitive, "cpu")
    return low is not None and low.statements is None and (
        low.fusion is Fusion.INDEX_MAP or
        low.scalar is not None and registry.fusible(eqn, "cpu"))


def _scalar_consts(closed: ClosedJaxpr) -> bool:
    return all(np.shape(c) == () for c in closed.consts)


def _scalar_jaxpr(closed: ClosedJaxpr) -> bool:
    return all(_scalar_op(e) for e in closed.jaxpr.eqns) and _scalar_consts(closed)


def lanes_fit(eqn: JaxprEqn) -> bool:
    """Whether scan equation `eqn` is a map over examples of a scalar program with one while
    loop, which `render_lanes` renders."""
    p = eqn.params
    if p["num_carry"] or p["length"] < 2 or not _scalar_consts(p["jaxpr"]):
        return False
    body = p["jaxpr"].jaxpr
    loops = [e for e in body.eqns if e.primitive is while_p]
    if len(loops) != 1 or any(v.aval.ndim for v in (*body.invars, *body.outvars)):
        return False
    w = loops[0]
    return all(_scalar_op(e) for e in body.eqns if e is not w) and \
        all(v.aval.ndim == 0 for v in (*w.invars, *w.outvars)) and \
        _scalar_jaxpr(w.params["cond_jaxpr"]) and _scalar_jaxpr(w.params["body_jaxpr"])


def render_lanes(fn: Function, eqn: JaxprEqn, ins: list[str], lines: list[str],
                 pad: str) -> list[str]:
    """The scan `eqn` (`lanes_fit`) in blocks of LANES examples: each lane's inputs to the
    while loop into the block's lane arrays, the loop stepping every lane until none runs,
    then each example's outputs from its lane."""
    p = eqn.params
    length, nconsts = p["length"], p["num_consts"]
    closed = p["jaxpr"]
    body = closed.jaxpr
    k = next(j for j, e in enumerate(body.eqns) if e.primitive is while_p)
    pre, w, post = body.eqns[:k], body.eqns[k], body.eqns[k + 1:]
    wp = w.params
    nc, nb = wp["cond_nconsts"], wp["body_nconsts"]
    ys = [fn.fresh() for _ in eqn.outvars]
    for y, v in zip(ys, eqn.outvars, strict=True):
        lines.append(f"{pad}{y} = np.empty({v.aval.shape}, {dtype_ctor(v.aval.dtype)})")
    blocks = -(-length // LANES)
    blk, lane, live = fn.fresh(), fn.fresh(), fn.fresh()
    in_prange, trips = fn.in_prange, fn.trips
    if not (in_prange or fn.serial) and fn.pays_parallel(closed, length):
        fn.parallel = fn.in_prange = True
        fn.nests_only = False
        fn.work_ns = max(fn.work_ns, length * work.flow_ops(body) * work.NS_PER_LIGHT_OP)
        loop = f"prange({blocks})"
    else:
        fn.in_prange = True  # (all the lanes' work is scalar: nothing inside takes threads)
        fn.trips *= blocks
        loop = f"range({blocks})"
    lines.append(f"{pad}for {blk} in {loop}:")
    inner, at_lane, in_step = pad + "    ", pad + "        ", pad + "            "
    arrays = [fn.fresh() for _ in w.invars]  # the lanes' consts and carries of the while
    for a, v in zip(arrays, w.invars, strict=True):
        lines.append(f"{inner}{a} = np.empty({LANES}, {dtype_ctor(v.aval.dtype)})")
    running = fn.fresh()
    lines.append(f"{inner}{running} = np.empty({LANES}, np.bool_)")

    def step_inputs(example: str, at: str) -> dict:
        """The step's values before the while for `example` (its index), rendered at `at`."""
        env = {v: render_scalar(core.to_numpy(c), v.aval.dtype) for v, c in
               zip(body.constvars, closed.consts, strict=True)}
        env.update(zip(body.invars[:nconsts], ins[:nconsts], strict=True))
        for v, x in zip(body.invars[nconsts:], ins[nconsts:], strict=True):
            env[v] = fn.fresh()
            lines.append(f"{at}{env[v]} = {x}[{example}]")
        for e in pre:
            fn.eqn(e, env, lines, at)
        return env

    # each lane's consts and initial carries (a block's last lanes past the end repeat the
    # last example: their results are dropped)
    lines.append(f"{inner}{live} = False")
    lines.append(f"{inner}for {lane} in range({LANES}):")
    example = fn.fresh()
    lines.append(f"{at_lane}{example} = min({blk} * {LANES} + {lane}, {length - 1})")
    env = step_inputs(example, at_lane)
    start = [fn.read(env, v) for v in w.invars]
    for a, s in zip(arrays, start, strict=True):
        lines.append(f"{at_lane}{a}[{lane}] = {s}")
    (go,) = fn.jaxpr(wp["cond_jaxpr"], [*start[:nc], *start[nc + nb:]], lines, at_lane)
    lines.append(f"{at_lane}{running}[{lane}] = {go}")
    lines.append(f"{at_lane}{live} |= {running}[{lane}]")
    # the loop: every lane steps; one whose condition failed keeps its carries
    lines.append(f"{inner}while {live}:")
    lines.append(f"{at_lane}{live} = False")
    lines.append(f"{at_lane}for {lane} in range({LANES}):")
    now = [fn.fresh() for _ in w.invars]
    for name, a in zip(now, arrays, strict=True):
        lines.append(f"{in_step}{name} = {a}[{lane}]")
    fn.trips *= work.WHILE_TRIPS
    fn.while_trips *= work.WHILE_TRIPS
    carry = now[nc + nb:]
    new = fn.jaxpr(wp["body_jaxpr"], [*now[nc:nc + nb], *carry], lines, in_step)
    (go,) = fn.jaxpr(wp["cond_jaxpr"], [*now[:nc], *new], lines, in_step)
    fn.trips //= work.WHILE_TRIPS
    fn.while_trips //= work.WHILE_TRIPS
    on = fn.fresh()
    lines.append(f"{in_step}{on} = {running}[{lane}]")
    for a, old, nxt in zip(arrays[nc + nb:], carry, new, strict=True):
        lines.append(f"{in_step}{a}[{lane}] = {nxt} if {on} else {old}")
    lines.append(f"{in_step}{running}[{lane}] = {on} & ({go})")
    lines.append(f"{in_step}{live} |= {running}[{lane}]")
    # each example's outputs from its lane
    lines.append(f"{inner}for {lane} in range(min({LANES}, {length} - {blk} * {LANES})):")
    lines.append(f"{at_lane}{example} = {blk} * {LANES} + {lane}")
    env = step_inputs(example, at_lane)
    for v, a in zip(w.outvars, arrays[nc + nb:], strict=True):
        env[v] = fn.fresh()
        lines.append(f"{at_lane}{env[v]} = {a}[{lane}]")
    for e in post:
        fn.eqn(e, env, lines, at_lane)
    for y, v in zip(ys, body.outvars, strict=True):
        value = render_scalar(v.val, v.aval.dtype) if isinstance(v, Literal) else env[v]
        lines.append(f"{at_lane}{y}[{example}] = {value}")
    fn.in_prange, fn.trips = in_prange, trips
    return ys
