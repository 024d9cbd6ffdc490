"""The CPU driver: the generated Python function that allocates outputs (np.empty, the output
reuse pool, or donated input buffers) and runs kernels and library calls in program order."""
from __future__ import annotations

import math

import numpy as np

from numbax._src import core
from numbax._src.compiler import fusion
from numbax._src.compiler.cpu.loops import (
    POOL_MAX_BYTES,
    POOL_MIN_BYTES,
    _header,
    dtype_ctor,
    render_scalar,
)
from numbax._src.compiler.cpu.runtime import library as lowering
from numbax._src.core import Jaxpr, Literal, Var


def render_driver(jaxpr: Jaxpr, nodes: list, kernel_modules: list[str | None],
                  donation: list[tuple[Var, int]] = ()) -> str:
    """The Python function that allocates outputs, runs kernels and library calls in order.

    `donation` (from `donation_plan`) adds one trailing parameter `d<k>=None` per pair: a
    donated input's buffer that the paired output is written into instead of a fresh one."""
    reuse = {v: f"d{k}" for k, (v, _) in enumerate(donation)}
    names: dict[Var, str] = {}
    for j, v in enumerate([*jaxpr.constvars, *jaxpr.invars]):
        names[v] = f"a{j}"
    temps = iter(range(1 << 30))
    pp = core.PrintNames()
    _header(jaxpr, False, pp)  # names the variables the way the header prints them
    imports, lines, pools = [], [], []
    for j, (node, module) in enumerate(zip(nodes, kernel_modules, strict=True)):
        for v in node.outputs:
            names[v] = f"t{next(temps)}"
        if isinstance(node, fusion.LoopNest):
            kname = f"k{j}_loop"
            imports.append(f"from {module} import kernel as {kname}")
            for v in node.outputs:
                fresh = f"np.empty({v.aval.shape}, {dtype_ctor(v.aval.dtype)})"
                if v in reuse:  # a donated input's buffer when the caller passes one
                    fresh = f"{fresh} if {reuse[v]} is None else {reuse[v]}"
                elif POOL_MIN_BYTES <= _nbytes(v.aval) <= POOL_MAX_BYTES:
                    pools.append(names[v])
                    lines.append(f"    {names[v]} = lw.kc.take(_pool_{names[v]})")
                    fresh = f"{fresh} if {names[v]} is None else {names[v]}"
                lines.append(f"    {names[v]} = {fresh}")
            flat = getattr(node, "flat_size", None)
            fshape = getattr(node, "flat_shape", None)
            args = ", ".join(f"{names[v]}.reshape({flat})" if flat and v.aval.ndim > 1
                             else f"{names[v]}.reshape({fshape})"
                             if fshape and v.aval.shape == node.shape
                             else names[v] for v in [*node.inputs, *node.outputs])
            lines.append(f"    {kname}({args})")
        elif node.family == "nopy":  # control flow (compiler/codegen_nopython.py)
            from numbax._src.compiler.cpu import control_flow as codegen_nopython

            more, node_lines = codegen_nopython.driver_lines(node, j, names, pp)
            imports.extend(more)
            lines.extend(node_lines)
        else:
            eqn = node.eqn
            ins = [names[x] if isinstance(x, Var) else render_scalar(x.val, x.aval.dtype)
                   for x in eqn.invars]
            outs = [names[v] for v in eqn.outvars]
            lines.append(f"    # {core.pp_eqn(eqn, pp, 0)}")
            lines.append(f"    {', '.join(outs)}, = {lowering.render_call(eqn, ins)}")
    rets = []
    for x in jaxpr.outvars:
        if isinstance(x, Literal):
            rets.append(f"np.asarray({render_scalar(x.val, x.aval.dtype)})")
        elif x in jaxpr.invars or x in jaxpr.constvars:
            rets.append(f"np.array({names[x]})")
        else:
            rets.append(names[x])
    fallbacks = [n.fallback_name for n in nodes if getattr(n, "fallback_name", None)]
    params = ", ".join([*fallbacks, *(names[v] for v in [*jaxpr.constvars, *jaxpr.invars]),
                        *(f"{d}=None" for d in reuse.values())])
    lines.extend(f"    _pool_{t}.append({t})" for t in pools)
    head = _header(jaxpr, False, pp).split("\nCACHE")[0]
    head = head.replace("# numbax", "# driver | numbax", 1)
    pool_defs = "".join(f"_pool_{t} = []  # {t}'s last buffer (lw.kc.take)\n" for t in pools)
    return (head + "from numbax._src.compiler.cpu.runtime import library as lw  # noqa: F401\n"
            + "\n".join(imports) + "\n" + ("\n" + pool_defs if pools else "") + "\n\n"
            + f"def driver({params}):\n" + "\n".join(lines)
            + ("\n" if lines else "") + f"    return ({''.join(r + ', ' for r in rets)})\n")


def _nbytes(aval) -> int:
    return math.prod(aval.shape) * np.dtype(aval.dtype).itemsize


def donation_plan(jaxpr: Jaxpr, nodes: list, donated: frozenset) -> list[tuple[Var, int]]:
    """Pairs (output, donated input position) whose output may be written into the input's buffer.

    An output qualifies when a loop nest writes it, it is returned once and has the input's
    shape and dtype, and the input (or a view of it made by a library call or control flow) is
    read by no later node and not returned. The nest that writes it may read the input itself
    only elementwise: no reductions or broadcasts of it, full-shape reads at the store's own
    index, none after the output's store. Anything else keeps its fresh buffer."""
    plan: list[tuple[Var, int]] = []
    outs = [v for v in jaxpr.outvars if isinstance(v, Var)]
    taken: set[Var] = set()
    for i in sorted(donated):
        a = jaxpr.invars[i]
        alias, last = {a}, -1
        for j, node in enumerate(nodes):
            if any(x in alias for x in node.inputs):
                last = j
                if not isinstance(node, fusion.LoopNest):
                    alias.update(node.outputs)
        if any(v in alias for v in jaxpr.outvars):
            continue
        for j, node in enumerate(nodes):
            if j < last or not isinstance(node, fusion.LoopNest):
                continue
            if j == last and not _in_place_ok(node, a, alias):
                continue
            pick = [v for v in node.outputs if v not in taken and outs.count(v) == 1
                    and v.aval.shape == a.aval.shape and v.aval.dtype == a.aval.dtype
                    and (j > last or _stored_after_reads(node, a, v))]
            if pick:
                taken.add(pick[0])
                plan.append((pick[0], i))
                break
    return plan


def _in_place_ok(nest: fusion.LoopNest, a: Var, alias: set) -> bool:
    """Whether a nest that reads `a` could write an output over it (plain elementwise reads)."""
    if nest.reduce_axes is not None or nest.passes is not None or a.aval.shape != nest.shape:
        return False
    if any(x in alias and x is not a for x in nest.inputs):
        return False
    return not any(e.primitive.name in fusion.BROADCAST and a in e.invars for e in nest.eqns)


def _stored_after_reads(nest: fusion.LoopNest, a: Var, out: Var) -> bool:
    """Whether every equation reading `a` comes no later than the one storing `out`."""
    reads = [j for j, e in enumerate(nest.eqns) if a in e.invars]
    store = [j for j, e in enumerate(nest.eqns) if out in e.outvars]
    return bool(store) and all(j <= store[0] for j in reads)
