"""The CPU driver: the generated Python function that allocates outputs (np.empty, the output
reuse pool, or donated input buffers) and runs kernels, library calls, compiled control flow and
host callables in program order."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from numbax._src import core
from numbax._src.compiler import ir, narrow_floats, registry
from numbax._src.compiler.cpu.loops import POOL_MAX_BYTES, POOL_MIN_BYTES
from numbax._src.compiler.cpu.modules import header
from numbax._src.compiler.lowerings import dot as dot_lowering
from numbax._src.compiler.registry import Fusion, fusion_kind
from numbax._src.compiler.source import dtype_ctor, render_scalar
from numbax._src.core import Jaxpr, Literal, Var


@dataclass
class Step:
    """How the driver runs one node: a kernel module (`module`, with `kernel`'s views), a
    library rule's expression (`call(ins) -> source of a list of outputs`), or a host callable
    passed to the driver as a parameter (`host`)."""

    node: ir.Node
    module: str | None = None
    kernel: ir.Kernel | None = None
    call: object = None
    host: object = None


def _product_pair(steps: list[Step], j: int, reuse: dict, names: dict, temps, operand):
    """(`lw.dot_pair` call, the second equation) where steps j and j + 1 are two plain
    matrix products and the second does not read the first (the runtime runs them together:
    runtime/library.py); the second's outputs are named here. None otherwise."""
    if j + 1 >= len(steps):
        return None
    first, second = steps[j], steps[j + 1]
    if not all(s.call is not None and s.module is None and s.host is None
               and not isinstance(s.node, ir.LoopNest) for s in (first, second)):
        return None
    a, b = first.node.eqn, second.node.eqn
    if set(a.outvars) & set(b.invars) or any(v in reuse for v in [*a.outvars, *b.outvars]):
        return None
    ins = [operand(x) for x in b.invars]  # (b reads nothing a writes: named already)
    expr = dot_lowering.pair_call(a, [operand(x) for x in a.invars], b, ins)
    if expr is None:
        return None
    for v in b.outvars:
        names[v] = f"t{next(temps)}"
    return expr, b


def render_driver(jaxpr: Jaxpr, steps: list[Step],
                  donation: list[tuple[Var, int]] = ()) -> tuple[str, list]:
    """The driver's source and the host callables it takes first (h0, h1, ...).

    `donation` (from `donation_plan`) adds one trailing parameter `d<k>=None` per pair: a
    donated input's buffer that the paired output is written into instead of a fresh one."""
    reuse = {v: f"d{k}" for k, (v, _) in enumerate(donation)}
    names: dict[Var, str] = {v: f"a{j}" for j, v in enumerate([*jaxpr.constvars, *jaxpr.invars])}
    temps = iter(range(1 << 30))
    pp = core.PrintNames()
    head = header(jaxpr, False, pp)  # names the variables the way the comments print them
    imports, lines, pools, hosts, consts, sites = [], [], [], [], [], []

    def operand(x, host: bool = False) -> str:
        if isinstance(x, Var):
            return names[x]
        text = render_scalar(x.val, x.aval.dtype)
        return f"np.asarray({text})" if host else text

    paired = set()  # second products of pairs run with the step before (`_product_pair`)
    spent = _spent_temps(jaxpr, steps)
    for j, step in enumerate(steps):
        node = step.node
        if j in paired:
            continue
        for v in node.outputs:
            names[v] = f"t{next(temps)}"
        if isinstance(node, ir.LoopNest):
            kname = f"k{j}_loop"
            kernel = step.kernel
            imports.append(f"from {step.module} import {kernel.function} as {kname}")
            if kernel.parallel:
                imports.append(f"from {step.module} import {kernel.parallel_function} "
                               f"as k{j}_par")
            if kernel.parallel and kernel.task:
                imports.append(f"from {step.module} import {kernel.task_function} as k{j}_task")
            if kernel.parallel and kernel.pool_parts:
                imports.append(f"from {step.module} import kernel_pool as k{j}_pool, "
                               f"PART_TASKS as k{j}_parts")
            for v in node.outputs:
                fresh = f"np.empty({v.aval.shape}, {dtype_ctor(v.aval.dtype)})"
                if v in reuse:  # a donated input's buffer when the caller passes one
                    fresh = f"{fresh} if {reuse[v]} is None else {reuse[v]}"
                elif POOL_MIN_BYTES <= _nbytes(v.aval) <= POOL_MAX_BYTES:
                    pools.append(names[v])
                    lines.append(f"    {names[v]} = kc.take(_pool_{names[v]})")
                    fresh = f"{fresh} if {names[v]} is None else {names[v]}"
                lines.append(f"    {names[v]} = {fresh}")
            args = [names[v] for v in [*node.inputs, *node.outputs]]
            views = step.kernel.views or (None,) * len(args)
            args = [a if shape is None else f"{a}.reshape({shape})"
                    for a, shape in zip(args, views, strict=True)]
            for text in kernel.args:  # sizes as they are; scalars made once, at import
                if not text.isdigit():
                    consts.append(f"_c{len(consts)} = {text}")
                    text = f"_c{len(consts) - 1}"
                args.append(text)
            if not kernel.parallel:
                lines.append(f"    {kname}({', '.join(args)})")
                continue
            # the thread runtime picks the count per call, from the work and the free cores
            par_args = list(args)
            if kernel.chunks is not None:
                par_args.append(f"th.chunks({kernel.chunks[0]}, {kernel.chunks[1]}, n)")
            # (on a busy machine the site's own timings choose: threads.threads_for)
            lines.append(f"    n = th.threads_for({kernel.work_ns:.0f}, _site{j})")
            typed = _arguments_lambda(par_args)  # the variant's compile is typed from them
            if kernel.task or kernel.pool_parts:  # a busy machine's parallel arm: the pool
                forms = f"k{j}_task" if kernel.task else f"k{j}_pool, *k{j}_parts"
                sites.append(f"_site{j} = pk.site({forms})  # k{j}'s busy-machine timings")
                n_arrays = len(node.inputs) + len(node.outputs)
                arrays = f"({''.join(a + ', ' for a in args[:n_arrays])})"
                rest = f"({''.join(a + ', ' for a in args[n_arrays:])})"
                run = (f"pk.run(_site{j}, k{j}_task, {arrays}, {kernel.task_rows}, "
                       f"{kernel.task_align}, {rest})" if kernel.task else
                       f"pk.run_parts(_site{j}, k{j}_pool, k{j}_parts, {arrays}, {rest}, "
                       f"{', '.join(map(str, kernel.chunks or (0, 1)))})")
                # (`started`: a busy call; a quiet one does not build the call's tuples)
                lines.extend([f"    if n > 1 and _site{j}.started and {run}:",
                              "        pass  # ran on the native pool (runtime/kernel_tasks.py)",
                              f"    elif n > 1 and th.parallel_ready(k{j}_par, {typed}, "
                              f"{kernel.work_ns:.0f}):"])
            else:
                sites.append(f"_site{j} = th.Site()  # k{j}'s busy-machine timings")
                lines.append(f"    if n > 1 and th.parallel_ready(k{j}_par, {typed}, "
                             f"{kernel.work_ns:.0f}):")
            lines.extend(["        before = th.use(n)",
                          f"        k{j}_par({', '.join(par_args)})", "        th.restore(before)",
                          "    else:", "        n = 1", f"        {kname}({', '.join(args)})",
                          f"    th.measured(_site{j}, n)"])
            continue
        eqn = node.eqn
        outs = [names[v] for v in eqn.outvars]
        comment = core.pp_eqn(eqn, pp, 0).replace("\n", "\n    # ")
        lines.append(f"    # {comment}")
        threaded = step.module is not None and step.kernel.parallel
        # an update's result written over a donated input, or over its operand where that is
        # a buffer this driver made which nothing reads afterwards (`_spent_temps`)
        into = reuse.get(eqn.outvars[0]) if outs else None
        if into is None and outs and eqn.invars and spent.get(eqn.invars[0]) == j:
            into = names[eqn.invars[0]]
        if step.module is not None:  # compiled control flow
            call = f"k{j}_flow"
            imports.append(f"from {step.module} import kernel as {call}")
            args = [names[x] for x in eqn.invars if isinstance(x, Var)]
            threads = "n" if threaded else "1"
            if step.kernel.loop_work:  # numbax's GEMM: its tasks, this thread's scratch
                args += ["_loop_gemm", f"gl.loop_work({step.kernel.loop_work})", threads]
                entry = "_loop_gemm = gl.loop_entry()  # numbax's GEMM part tasks"
            elif step.kernel.loop_products:
                args += ["*_loop_blas", threads]
                entry = "_loop_blas = bp.loop_entry()  # this process's OpenBLAS GEMM entry"
            elif step.kernel.loop_threads:  # matrix-vector products' row blocks
                args.append(threads)
            if step.kernel.loop_products and entry not in consts:
                consts.append(entry)
            expr = f"{call}({', '.join(args)})"
            if threaded:  # its nests' pranges and products on n of Numba's threads, BLAS on
                # one meanwhile (no second pool beside Numba's)
                kernel = step.kernel
                # (busy: a parallel call may wait a scheduler slice at each region's join, so
                # one entering many regions tries threads only from that many regions' worth)
                site = f"th.Site({kernel.site_regions} * th.REGION_WORTH_S, quiet=True)" \
                    if kernel.quiet_site else \
                    f"th.Site(max(th.PARALLEL_WORTH_S, {kernel.regions} * th.REGION_WORTH_S))"
                sites.append(f"_site{j} = {site}  # k{j}'s timings")
                lines.append(f"    n = th.threads_for({kernel.work_ns:.0f}, _site{j})")
                # the serial twin until the pranges pay (n from the site's timings)
                imports.append(f"from {step.module} import {kernel.serial_function} as "
                               f"{call}_serial")
                per_call = kernel.work_ns * max(kernel.regions, 1)
                lines.extend([f"    if n > 1 and not th.parallel_ready("
                              f"{call}, {_arguments_lambda(args)}, "
                              f"{per_call:.0f}, {kernel.tier_ns:.0f}):",
                              "        n = 1  # the serial twin until the pranges pay"])
                call = f"{call} if n > 1 else {call}_serial"
                lines.append(f"    before = th.use(n, {kernel.regions})")
                expr = f"bl.blas_call({call}, 1, {', '.join(args)})"
        elif step.host is not None:  # host loop or eager impl
            hosts.append(step.host)
            expr = f"h{len(hosts) - 1}({', '.join(operand(x, True) for x in eqn.invars)})"
        elif into is not None and updates_in_place(node):
            expr = registry.lowering(eqn.primitive, "cpu").in_place(
                eqn, [operand(x) for x in eqn.invars], into)
        elif (pair := _product_pair(steps, j, reuse, names, temps, operand)) is not None:
            expr, second = pair
            paired.add(j + 1)
            outs += [names[v] for v in second.outvars]
            lines.append("    # " + core.pp_eqn(second, pp, 0).replace("\n", "\n    # "))
            lines.append(f"    {', '.join(outs)} = {expr}")
            continue
        else:
            expr = step.call(eqn, [operand(x) for x in eqn.invars])
        if outs:
            lines.append(f"    {', '.join(outs)}, = {expr}")
        elif step.host is not None or step.module is not None:
            lines.append(f"    {expr}")
        if threaded:
            lines.extend(["    th.restore(before)", f"    th.measured(_site{j}, n)"])
        for v in eqn.outvars:  # compiled control flow returns scalars for 0-d values
            if step.module is not None and v.aval.ndim == 0:
                lines.append(f"    {names[v]} = np.asarray({names[v]}, "
                             f"{dtype_ctor(v.aval.dtype)})")
    rets = []
    for x in jaxpr.outvars:
        if isinstance(x, Literal):
            rets.append(f"np.asarray({render_scalar(x.val, x.aval.dtype)})")
        elif x in jaxpr.invars or x in jaxpr.constvars:
            rets.append(f"kc.fresh_copy({names[x]})")
        else:
            rets.append(names[x])
    params = ", ".join([*(f"h{k}" for k in range(len(hosts))),
                        *(names[v] for v in [*jaxpr.constvars, *jaxpr.invars]),
                        *(f"{d}=None" for d in reuse.values())])
    lines.extend(f"    _pool_{t}.append({t})" for t in pools)
    head = head.split("\nCACHE")[0].replace("# numbax", "# driver | numbax", 1)
    pool_defs = "".join(f"_pool_{t} = []  # {t}'s last buffer (kc.take)\n" for t in pools)
    pool_defs += "".join(f"{c}\n" for c in [*consts, *sites])
    src = (head + "from numbax._src.compiler.cpu.runtime import conv as cv  # noqa: F401\n"
           + "from numbax._src.compiler.cpu.runtime import fft as ft  # noqa: F401\n"
           + "from numbax._src.compiler.cpu.runtime import kernel_tasks as pk  # noqa: F401\n"
           + "from numbax._src.compiler.cpu.runtime import kernels as kc  # noqa: F401\n"
           + "from numbax._src.compiler.cpu.runtime import blas as bl  # noqa: F401\n"
           + "from numbax._src.compiler.cpu.runtime import blas_parts as bp  # noqa: F401\n"
           + "from numbax._src.compiler.cpu.runtime import gemm_loops as gl  # noqa: F401\n"
           + "from numbax._src.compiler.cpu.runtime import library as lw  # noqa: F401\n"
           + "from numbax._src.compiler.cpu.runtime import matvec as mv  # noqa: F401\n"
           + "from numbax._src.compiler.cpu.runtime import threads as th  # noqa: F401\n"
           + "from numbax._src.compiler.cpu.runtime import windows as wk  # noqa: F401\n"
           + "\n".join(imports) + "\n" + ("\n" + pool_defs if pool_defs else "") + "\n\n"
           + f"def driver({params}):\n" + "\n".join(lines)
           + ("\n" if lines else "") + f"    return ({''.join(r + ', ' for r in rets)})\n")
    return src, hosts


def _arguments_lambda(args: list[str]) -> str:
    """A call's arguments as a lambda: made only when a prange variant's background compile
    needs their types (threads.parallel_ready), not at every call."""
    return f"lambda: ({''.join(a + ', ' for a in args)})"


def _spent_temps(jaxpr: Jaxpr, steps: list[Step]) -> dict[Var, int]:
    """Values a loop nest wrote into a buffer of the driver's own (np.empty or the pool: never
    a view of another value), with the index of the step reading them, or any view of them,
    last; not those returned.
    An update of such a value there (a scatter, a dynamic_update_slice: `updates_in_place`)
    may write over it: the zeros a gather's transpose adds into were copied into a fresh
    buffer first (an embedding table's gradient, 20000 x 128 float32: 1.3 of a 6.5 ms step
    on the 2-core VM)."""
    end = len(steps)  # a value returned is read "after the last step"
    last: dict[Var, int] = {x: end for x in jaxpr.outvars if isinstance(x, Var)}
    for j, step in enumerate(steps):
        for x in step.node.inputs:
            last[x] = max(last.get(x, -1), j)
    # another node's result may be a view of what it read (a reshape, a slice): a read of it
    # is a read of those, so the last read runs back through such nodes, latest first (an
    # update's result is a fresh buffer, or the one this decides it may write over)
    for step in reversed(steps):
        if not isinstance(step.node, ir.LoopNest) and not updates_in_place(step.node):
            later = max((last.get(y, -1) for y in step.node.outputs), default=-1)
            for x in step.node.inputs:
                last[x] = max(last.get(x, -1), later)
    made = {v for step in steps if isinstance(step.node, ir.LoopNest) for v in step.node.outputs}
    return {v: j for v, j in last.items() if v in made and j < end}


def _nbytes(aval) -> int:
    return math.prod(aval.shape) * np.dtype(aval.dtype).itemsize


def donation_plan(jaxpr: Jaxpr, nodes: list[ir.Node],
                  donated: frozenset) -> list[tuple[Var, int]]:
    """Pairs (output, donated input position) whose output may be written into the input's buffer.

    An output qualifies when a loop nest writes it, it is returned once and has the input's
    shape and dtype, and the input (or a view of it made by a library call or control flow) is
    read by no later node and not returned. The nest that writes it may read the input itself
    only elementwise: no reductions or broadcasts of it, full-shape reads at the store's own
    index, none after the output's store. An update of the input by the last node reading it
    (a dynamic_update_slice or scatter with an in-place rule, `updates_in_place`) qualifies
    too: it writes into the input's buffer. Anything else keeps its fresh buffer."""
    plan: list[tuple[Var, int]] = []
    outs = [v for v in jaxpr.outvars if isinstance(v, Var)]
    taken: set[Var] = set()
    for i in sorted(donated):
        a = jaxpr.invars[i]
        alias, last = {a}, -1
        for j, node in enumerate(nodes):
            if any(x in alias for x in node.inputs):
                last = j
                if not isinstance(node, ir.LoopNest) and not updates_in_place(node):
                    alias.update(node.outputs)  # (an update's result is a copy, not a view)
        if any(v in alias for v in jaxpr.outvars):
            continue
        for j, node in enumerate(nodes):
            if j == last and updates_in_place(node) and node.eqn.invars[0] is a \
                    and a not in node.eqn.invars[1:] and outs.count(node.outputs[0]) == 1 \
                    and node.outputs[0] not in taken:
                taken.add(node.outputs[0])
                plan.append((node.outputs[0], i))
                break
            if j < last or not isinstance(node, ir.LoopNest):
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


def updates_in_place(node: ir.Node) -> bool:
    """Whether a node is a library call whose rule can write its result over its first
    operand's donated buffer (Lowering.in_place: dynamic_update_slice, scatter)."""
    if isinstance(node, ir.LoopNest):
        return False
    low = registry.lowering(node.eqn.primitive, "cpu")
    return low is not None and low.in_place is not None and \
        registry.library(node.eqn, "cpu") is low.library and not narrow_floats.touches(node.eqn)


def _in_place_ok(nest: ir.LoopNest, a: Var, alias: set) -> bool:
    """Whether a nest that reads `a` could write an output over it (plain elementwise reads)."""
    if nest.reduce_axes is not None or nest.passes is not None or a.aval.shape != nest.shape:
        return False
    if any(x in alias and x is not a for x in nest.inputs):
        return False
    return not any(fusion_kind(e.primitive) is Fusion.INDEX_MAP and a in e.invars
                   for e in nest.eqns)


def _stored_after_reads(nest: ir.LoopNest, a: Var, out: Var) -> bool:
    """Whether every equation reading `a` comes no later than the one storing `out`."""
    reads = [j for j, e in enumerate(nest.eqns) if a in e.invars]
    store = [j for j, e in enumerate(nest.eqns) if out in e.outvars]
    return bool(store) and all(j <= store[0] for j in reads)
