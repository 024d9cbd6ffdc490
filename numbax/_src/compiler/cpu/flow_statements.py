"""The statements compiled control flow renders cond, while and scan as (registered in
lowerings/control_flow.py): if/elif chains, while loops and for loops over a scan's steps
inside the one @njit function cpu/control_flow.py's `Function` renders. A scan with no carry
whose steps pay for threads is a prange; loops' buffers and carries: flow_scratch.py."""
from __future__ import annotations

from numbax._src.compiler.cpu import flow_lanes, flow_loops, flow_scratch, work
from numbax._src.compiler.cpu.control_flow import Function
from numbax._src.compiler.source import dtype_ctor
from numbax._src.core import JaxprEqn


def render_cond(fn: Function, eqn: JaxprEqn, ins: list[str], lines: list[str],
                pad: str) -> list[str]:
    branches = eqn.params["branches"]
    outs = [fn.fresh() for _ in eqn.outvars]
    avals = [v.aval for v in eqn.outvars]
    for k, branch in enumerate(branches):
        if k == len(branches) - 1:
            head = "else:" if k else "if True:"
        else:
            head = f"{'if' if k == 0 else 'elif'} {ins[0]} <= {k}:"
        lines.append(pad + head)
        res = fn.jaxpr(branch, ins[1:], lines, pad + "    ")
        fn.assign(outs, res, avals, lines, pad + "    ")
        if not outs:
            lines.append(pad + "    pass")
    return outs


def render_while(fn: Function, eqn: JaxprEqn, ins: list[str], lines: list[str],
                 pad: str) -> list[str]:
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cconsts, bconsts, init = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
    carry = [fn.fresh() for _ in init]
    avals = [v.aval for v in eqn.outvars]
    body = p["body_jaxpr"].jaxpr
    own = flow_scratch.updated_carries(body, nb, avals)
    turns = flow_scratch.take_turns(fn, body, nb, len(avals), own)
    back = flow_scratch.written_back(turns, body, len(avals))
    flow_scratch.enter_loop(fn, carry, init, avals, own, back, bconsts, lines, pad)
    # the condition once, at the top of each step: rendered before the loop and again at the
    # end of its body, its loops doubled the lines Numba compiles (a binomial sampler's
    # rejection loops in a scan body: 6 of its 80 loops)
    lines.append(f"{pad}while True:")
    inner = pad + "    "
    fn.trips *= work.WHILE_TRIPS
    fn.while_trips *= work.WHILE_TRIPS
    with fn.body(lines, pad, True, carry, turns):
        (res,) = fn.jaxpr(p["cond_jaxpr"], [*cconsts, *carry], lines, inner)
        lines.append(f"{inner}if not {res}:")
        lines.append(f"{inner}    break")
        new = fn.jaxpr(p["body_jaxpr"], [*bconsts, *carry], lines, inner)
        fn.assign(carry, new, avals, lines, inner, own, body)
    fn.trips //= work.WHILE_TRIPS
    fn.while_trips //= work.WHILE_TRIPS
    return carry


def render_scan(fn: Function, eqn: JaxprEqn, ins: list[str], lines: list[str],
                pad: str) -> list[str]:
    if flow_lanes.lanes_fit(eqn):  # vmap of a scalar while loop
        return flow_lanes.render_lanes(fn, eqn, ins, lines, pad)
    p = eqn.params
    nconsts, ncarry, length = p["num_consts"], p["num_carry"], p["length"]
    consts, init, xs = ins[:nconsts], ins[nconsts:nconsts + ncarry], ins[nconsts + ncarry:]
    carry_avals = [v.aval for v in eqn.outvars[:ncarry]]
    carry = [fn.fresh() for _ in init]
    body = p["jaxpr"].jaxpr
    own = flow_scratch.updated_carries(body, nconsts, carry_avals)
    ys = [fn.fresh() for _ in eqn.outvars[ncarry:]]
    for y, v in zip(ys, eqn.outvars[ncarry:], strict=True):
        lines.append(f"{pad}{y} = np.empty({v.aval.shape}, {dtype_ctor(v.aval.dtype)})")
    i = fn.fresh()
    in_prange = fn.in_prange
    if ncarry == 0 and not (in_prange or fn.serial) and fn.pays_parallel(p["jaxpr"], length):
        fn.parallel = fn.in_prange = True
        fn.nests_only = False
        ops = length * work.flow_ops(p["jaxpr"].jaxpr)
        fn.work_ns = max(fn.work_ns, ops * work.NS_PER_LIGHT_OP)
        loop = f"prange({length})"
    elif p["reverse"]:
        loop = f"range({length - 1}, -1, -1)"
    else:
        loop = f"range({length})"
    sequential = not loop.startswith("prange")
    turns = flow_scratch.take_turns(fn, body, nconsts, ncarry, own) if sequential else {}
    back = flow_scratch.written_back(turns, body, ncarry)
    flow_scratch.enter_loop(fn, carry, init, carry_avals, own, back, [*consts, *xs], lines, pad)
    lines.append(f"{pad}for {i} in {loop}:")
    inner = pad + "    "
    trips = fn.trips
    fn.trips *= 1 if fn.in_prange else length
    x_names = []
    with fn.body(lines, pad, sequential, carry, turns):
        for x in xs:
            t = fn.fresh()
            lines.append(f"{inner}{t} = {x}[{i}]")
            fn.views.add(t)
            x_names.append(t)
        outs = fn.jaxpr(p["jaxpr"], [*consts, *carry, *x_names], lines, inner,
                        frozenset(range(ncarry, len(eqn.outvars))))
        for y, o, v in zip(ys, outs[ncarry:], eqn.outvars[ncarry:], strict=True):
            flow_loops.block_store(fn, y, [i, *["0"] * (v.aval.ndim - 1)], o,
                                   v.aval.shape[1:], lines, inner)
        fn.assign(carry, outs[:ncarry], carry_avals, lines, inner, own, body)
    fn.in_prange, fn.trips = in_prange, trips
    return [*carry, *ys]
