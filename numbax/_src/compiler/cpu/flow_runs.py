"""Which equations of a body inside compiled control flow become one loop nest, and their
order: elementwise equations, index maps and iotas of one shape that run one after another
are one nest (control_flow.Function.jaxpr), and `clustered` orders a body so that as many as
dependencies allow do.

Why reorder: a body is rendered in program order, and a value of another shape between two
equations of one shape splits them into two nests, each a pass over memory storing what the
next reads. An RK4 step computes each stage's three columns (shape (n,)), then stacks them
((n, 3)), then the next stage's columns from them: eight nests a step, where the columns of
all four stages can be one nest and the stacks one more."""
from __future__ import annotations

import heapq

from numbax._src.compiler import fusion, registry
from numbax._src.compiler.cpu.work import eqns_ns
from numbax._src.compiler.registry import AxisRead, Fusion
from numbax._src.core import Jaxpr, JaxprEqn, Var
from numbax._src.lax import indexing as ix
from numbax._src.lax import shape_ops as ls


def loop_shape(eqn: JaxprEqn) -> tuple[int, ...] | None:
    """The shape of an array equation that joins a loop nest inside compiled control flow
    (elementwise over operands of its shape or scalars, a broadcast, an iota), else None."""
    if len(eqn.outvars) != 1 or eqn.outvars[0].aval.ndim == 0:
        return None
    shape = eqn.outvars[0].aval.shape
    if eqn.primitive is ls.pad_p:
        return shape if edge_pad(eqn) else None
    kind = fusion.kind_of(eqn)
    if kind not in (Fusion.ELEMENTWISE, Fusion.INDEX_MAP, Fusion.SOURCE) or \
            not registry.fusible(eqn, "cpu"):
        return None
    # Only equations with an array form, or a few instructions an element (shifts: a random
    # key split in a training loop's body): the others (erf, lgamma, ...) keep sending their
    # control flow to the host loop. Compiling such bodies would be new work, and large:
    # odeint's while loop took 14 s as one function against 2.5 s for the host loop.
    if registry.lowering(eqn.primitive, "cpu").array is None and \
            not registry.cheap(eqn.primitive):
        return None
    if kind is Fusion.ELEMENTWISE and any(
            isinstance(x, Var) and x.aval.ndim and x.aval.shape != shape for x in eqn.invars):
        return None
    return shape


def edge_pad(eqn: JaxprEqn) -> bool:
    """A pad of an array by a scalar at its edges only (no interior padding, nothing cropped):
    a loop nest reads it as its operand's element inside the box and the fill outside
    (`control_flow.Function._scalar_lines`), where the array form concatenated copies (a heat
    equation's `zeros.at[1:-1].set(laplacian)`, a pad once compose_maps.dus_pads has run)."""
    x = eqn.invars[0]
    return isinstance(x, Var) and x.aval.dtype.kind != "c" and all(
        lo >= 0 and hi >= 0 and interior == 0
        for lo, hi, interior in eqn.params["padding_config"])


def loop_bound(trips: int, eqns: list[JaxprEqn]) -> str:
    """The bound of a nest's innermost loop of `trips` over `eqns`: hidden from LLVM
    (`sc.opaque`) when the loop is short and holds a transcendental function, else the literal.
    LLVM fully unrolls a loop of a few known trips into scalar code, so each exp ran alone (a
    10-state HMM's 10 x 10 exp and 10 logs a step: ten `vscalefss`); with an unknown bound
    it vectorises them (0.66 -> 0.51 ms for 2000 steps on the VM)."""
    short = SHORT_TRIPS[0] <= trips <= SHORT_TRIPS[1]
    if short and any(registry.lowering(e.primitive, "cpu") is not None and
                     registry.lowering(e.primitive, "cpu").heavy for e in eqns):
        return f"sc.opaque({trips})"
    return str(trips)


# Innermost trip counts whose loops LLVM would unroll rather than vectorise when they hold a
# transcendental function (at fewer than 4 a vector is mostly empty either way)
SHORT_TRIPS = (4, 16)


def on_scalars(eqn: JaxprEqn, control_flow: bool) -> bool:
    """Whether `eqn` maps scalars to scalars (it can run before a pending loop nest);
    `control_flow`: whether it is compiled control flow (which never can)."""
    return bool(eqn.outvars) and not control_flow and all(
        v.aval.ndim == 0 for v in [*eqn.invars, *eqn.outvars])


# Windows and reshapes: their array forms give views of their operands (an `x[i]` read of a
# loop's data; control_flow.Function._view keeps or copies them)
VIEW_FORMS = (ix.dynamic_slice_p, ls.reshape_p, ls.squeeze_p)


def goes_first(eqn: JaxprEqn, control_flow: bool, pending: list[JaxprEqn]) -> bool:
    """Whether `eqn` can run before the loop nest of the equations `pending`, so that those
    after it may still join the nest: it maps scalars to scalars (`on_scalars`), or it is a
    window or reshape (`VIEW_FORMS`) that reads none of their values."""
    if on_scalars(eqn, control_flow):
        return True
    if eqn.primitive not in VIEW_FORMS:
        return False
    made = {v for e in pending for v in e.outvars}
    return not any(x in made for x in eqn.invars if isinstance(x, Var))


def joins(eqn: JaxprEqn, made: set[Var]) -> bool:
    """Whether a loop equation of the shape of a run making the values `made` may join it:
    not an index map that reads one of them other than element for element (a nest reads
    its own values only as the scalars of the element it is at)."""
    if eqn.primitive is ls.pad_p:  # reads its operand away from the element it is at
        return eqn.invars[0] not in made
    if fusion.kind_of(eqn) is not Fusion.INDEX_MAP or eqn.invars[0] not in made:
        return True
    reads = registry.axis_reads(eqn)
    return eqn.invars[0].aval.shape == eqn.outvars[0].aval.shape and \
        all(r.plain and r.dim == d for d, r in enumerate(reads))


def nests(outer: list[JaxprEqn], inner: list[JaxprEqn]) -> bool:
    """Whether the loop equations `inner` (of a shape that extends outer's) can run inside
    the loops of `outer`: each value of outer's that they read, they read through an index
    map broadcasting it along the extra axes (its scalar at the outer loops' index)."""
    made = {e.outvars[0] for e in outer}
    rank = outer[0].outvars[0].aval.ndim
    plain = tuple(AxisRead(d) for d in range(rank))
    for e in inner:
        if not any(isinstance(x, Var) and x in made for x in e.invars):
            continue
        if fusion.kind_of(e) is not Fusion.INDEX_MAP or registry.axis_reads(e) != plain:
            return False
    return True


def clustered(eqns: list[JaxprEqn], is_control_flow) -> list[JaxprEqn]:
    """`eqns` in program order, except that a loop equation of the shape of the nest being
    built (the last loop equation placed, with only scalar work since) comes next as soon
    as its operands are made. Only loop equations move, and only earlier: whatever read an
    operand before a later in-place update (a dynamic_update_slice of a carry) still does."""
    made_by = {v: j for j, e in enumerate(eqns) for v in e.outvars}
    waiting = [0] * len(eqns)
    readers: list[list[int]] = [[] for _ in eqns]
    for j, e in enumerate(eqns):
        deps = {made_by[x] for x in e.invars if isinstance(x, Var) and x in made_by}
        waiting[j] = len(deps)
        for d in deps:
            readers[d].append(j)
    shapes = [loop_shape(e) for e in eqns]
    ready: dict[tuple, list[int]] = {}  # loop equations whose operands are made, by shape
    for j, shape in enumerate(shapes):
        if shape is not None and not waiting[j]:
            ready.setdefault(shape, []).append(j)
    placed = [False] * len(eqns)
    order: list[JaxprEqn] = []
    current, first = None, 0
    while len(order) < len(eqns):
        pending = ready.get(current, [])
        while pending and placed[pending[0]]:
            heapq.heappop(pending)
        if pending:
            j = heapq.heappop(pending)
        else:
            while placed[first]:
                first += 1
            j = first
        placed[j] = True
        order.append(eqns[j])
        if shapes[j] is not None:
            current = shapes[j]
        elif not on_scalars(eqns[j], is_control_flow(eqns[j])):
            current = None
        for r in readers[j]:
            waiting[r] -= 1
            if not waiting[r] and shapes[r] is not None:
                heapq.heappush(ready.setdefault(shapes[r], []), r)
    return order


def plan(jaxpr: Jaxpr, run: list[int], inner_run: list[int],
         users: dict[Var, set[int]]) -> tuple:
    """How the runs `run` and `inner_run` (its loops inside run's, or none) are one loop nest
    of control_flow.Function.loop: (their equations, their shapes, the values read after
    them, the nest's estimated serial time, work.eqns_ns)."""
    runs = [[jaxpr.eqns[j] for j in run], [jaxpr.eqns[j] for j in inner_run]]
    shapes = [r[0].outvars[0].aval.shape if r else () for r in runs]
    both = set(run) | set(inner_run)
    kept = {e.outvars[0] for r in runs for e in r if users[e.outvars[0]] - both}
    made = {e.outvars[0] for r in runs for e in r}
    arrays = kept | {x for r in runs for e in r for x in e.invars
                     if isinstance(x, Var) and x.aval.ndim and x not in made}
    work = sum(eqns_ns(shape, r, list(arrays) if k == 0 else [])
               for k, (r, shape) in enumerate(zip(runs, shapes, strict=True)) if r)
    return runs, shapes, kept, work


def users(jaxpr: Jaxpr) -> dict[Var, set[int]]:
    """The equations reading each variable (by index; -1 for the jaxpr's outputs)."""
    users: dict[Var, set[int]] = {}
    for j, eqn in enumerate(jaxpr.eqns):
        for v in eqn.outvars:
            users.setdefault(v, set())
        for x in eqn.invars:
            if isinstance(x, Var):
                users.setdefault(x, set()).add(j)
    for x in jaxpr.outvars:
        if isinstance(x, Var):
            users.setdefault(x, set()).add(-1)
    return users


def outliving(jaxpr: Jaxpr, copied: frozenset[int] = frozenset()) -> set[Var]:
    """The values of `jaxpr` whose arrays may outlive one run of it: its outputs (a loop's
    carries, a branch's results; not those at the positions `copied`, which the caller
    copies: a scan's rows of ys) and, through every equation that is not a loop nest's
    (`loop_shape`: those write new arrays), the operands an output may alias (a reshape's,
    a branch's, an in-place update's). Control_flow.Function allocates the others once a
    loop (flow_scratch.py). Reductions and equations of 0-d results alias nothing (0-d
    values are scalars there): a while loop's test of `max(abs(x * x - a)) > tol`
    allocated its 1e6-element operand every step (a 4 MB page-faulted array)."""
    outliving = {v for k, v in enumerate(jaxpr.outvars)
                 if isinstance(v, Var) and k not in copied}
    for eqn in reversed(jaxpr.eqns):
        fresh = fusion.kind_of(eqn) is Fusion.REDUCTION or all(
            v.aval.ndim == 0 for v in eqn.outvars)
        if loop_shape(eqn) is None and not fresh and any(v in outliving for v in eqn.outvars):
            outliving.update(x for x in eqn.invars if isinstance(x, Var))
    return outliving
