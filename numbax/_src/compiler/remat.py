"""Recomputation across kernels (fusion.partition's step before row groups): a value a nest
stores only for later nests of its shape, which those nests can recompute with a few cheap
equations from values stored anyway or from fewer bytes, is recomputed there instead
(`rematerialize`); XLA's fusion duplicates cheap producers the same way."""
from __future__ import annotations

from numbax._src.compiler import registry
from numbax._src.compiler.ir import LoopNest, Node, node_eqns
from numbax._src.compiler.registry import Fusion
from numbax._src.core import JaxprEqn, Var

# A value a later kernel can recompute from what it reads anyway (or from fewer bytes) with
# at most this many cheap equations is recomputed there instead of stored (rematerialize).
MAX_REMAT = 8


def rematerialize(nodes: list[Node], producer: dict[Var, Node],
                  program_outs: list) -> list[Node]:
    """Values a nest stores only for later nests of its shape, and that those nests can
    recompute with a few cheap equations (`registry.cheap`) from values stored anyway or from
    fewer bytes, are recomputed there: tanh's derivative `1 - y*y` is not written beside `y`,
    and a bfloat16 value crosses kernels as its 16 bits rather than as float32 (its float32
    form is two integer operations). XLA's fusion duplicates cheap producers the same way.
    Each reading nest gets its own copies of the equations (fresh variables); equations left
    unread in the producing nest are dropped, and a nest left empty. Runs before row groups
    form."""
    outs = {x for x in program_outs if isinstance(x, Var)}
    copies: set[int] = set()  # ids of the copies made: never copied again (no cascades)
    readers: dict[Var, list[Node]] = {}
    for node in nodes:
        for eqn in node_eqns(node):
            for x in eqn.invars:
                if isinstance(x, Var) and producer.get(x) is not node:
                    _add_reader(readers, x, node)
    for node in nodes:
        if not isinstance(node, LoopNest) or not node.shape:
            continue
        made = {v: e for e in node.eqns for v in e.outvars}
        moved = False
        for eqn in list(node.eqns):
            (v,) = eqn.outvars if len(eqn.outvars) == 1 else (None,)
            later = readers.get(v, []) if v is not None else []
            if not later or v in outs or not all(
                    isinstance(c, LoopNest) and c.shape == v.aval.shape and
                    not _maps_read(c, v) for c in later):
                continue  # (an index map reads v elsewhere than at the loop's index)
            plan = _remat_plan(v, node, made, producer, readers, outs, copies)
            if plan is None:
                continue
            for c in later:
                _recompute_in(c, v, plan, producer, readers, copies)
            readers.pop(v, None)
            moved = True
        if moved:
            _drop_unread(node, readers, outs)
    return [n for n in nodes if not isinstance(n, LoopNest) or n.eqns]


def _maps_read(nest: LoopNest, v: Var) -> bool:
    """Whether an index map or a lookup's table of `nest` reads `v` (then v cannot be computed
    in that nest)."""
    return any(registry.fusion_kind(e.primitive) is Fusion.INDEX_MAP and v in e.invars or
               registry.reads_whole(e, v) for e in nest.eqns)


def _add_reader(readers: dict[Var, list[Node]], x: Var, node: Node) -> None:
    lst = readers.setdefault(x, [])
    if not any(r is node for r in lst):
        lst.append(node)


def _remat_plan(v: Var, node: LoopNest, made: dict[Var, JaxprEqn], producer: dict[Var, Node],
                readers: dict[Var, list[Node]], outs: set,
                copies: set[int]) -> list[JaxprEqn] | None:
    """The equations of `node` (program order) a later nest recomputes `v` with, or None when
    that is not cheaper than storing `v`: each operand is either stored anyway (made
    elsewhere, read by another nest, returned) or recomputed in turn, or stored instead
    (its bytes counted), whichever costs fewer new bytes; the plan must store fewer bytes
    than `v` and hold at most MAX_REMAT equations. Equations that are themselves copies are
    not recomputed again: a chain of steps (x = x * a + mean(x) * b, repeated) would otherwise
    have every nest recompute the steps before it, up to MAX_REMAT equations each."""
    memo: dict[Var, tuple[float, list[JaxprEqn]]] = {}

    def stored(x: Var) -> bool:
        return producer.get(x) is not node or x in outs or bool(readers.get(x))

    def expand(x: Var) -> tuple[float, list[JaxprEqn]] | None:
        e = made.get(x)
        if e is None or id(e) in copies or len(e.outvars) != 1 or \
                not registry.cheap(e.primitive) or \
                registry.fusion_kind(e.primitive) not in (Fusion.ELEMENTWISE,
                                                          Fusion.INDEX_MAP) or \
                e.outvars[0].aval.shape != v.aval.shape:
            return None
        cost, eqns = 0.0, []
        for y in e.invars:
            if isinstance(y, Var):
                if registry.fusion_kind(e.primitive) is Fusion.INDEX_MAP and not stored(y):
                    return None  # (an index map reads its operand from memory)
                c, sub = best(y)
                cost += c
                eqns.extend(q for q in sub if not any(q is r for r in eqns))
        return cost, [*eqns, e]

    def best(x: Var) -> tuple[float, list[JaxprEqn]]:
        if x not in memo:
            memo[x] = (0.0, [])
            if not stored(x):
                whole = (float(x.aval.size * x.aval.dtype.itemsize), [])
                deeper = expand(x)
                memo[x] = deeper if deeper is not None and deeper[0] < whole[0] else whole
        return memo[x]

    plan = expand(v)
    if plan is None or plan[0] >= v.aval.size * v.aval.dtype.itemsize or \
            len(plan[1]) > MAX_REMAT:
        return None
    order = {id(e): k for k, e in enumerate(node.eqns)}
    return sorted(plan[1], key=lambda e: order[id(e)])


def _recompute_in(c: LoopNest, v: Var, plan: list[JaxprEqn], producer: dict[Var, Node],
                  readers: dict[Var, list[Node]], copies: set[int]) -> None:
    """Copies of `plan` (fresh variables) at the start of nest `c`, whose reads of `v` read
    the copy instead."""
    fresh: dict[Var, Var] = {}
    made: list[JaxprEqn] = []
    for e in plan:
        ins = [fresh.get(x, x) if isinstance(x, Var) else x for x in e.invars]
        for x in ins:
            if isinstance(x, Var) and producer.get(x) is not c:  # not an earlier copy's
                _add_reader(readers, x, c)
        outvars = [Var(o.aval) for o in e.outvars]
        fresh.update(zip(e.outvars, outvars))
        made.append(JaxprEqn(e.primitive, ins, outvars, e.params))
        copies.add(id(made[-1]))
        for o in outvars:
            producer[o] = c
    c.eqns[:] = made + [
        JaxprEqn(e.primitive, [fresh[v] if x is v else x for x in e.invars], e.outvars,
                 e.params) if any(x is v for x in e.invars) else e for e in c.eqns]


def _drop_unread(node: LoopNest, readers: dict[Var, list[Node]], outs: set) -> None:
    """Removes `node`'s cheap equations whose results nothing reads any more."""
    while True:
        read = {x for e in node.eqns for x in e.invars if isinstance(x, Var)}
        dead = [e for e in node.eqns if registry.cheap(e.primitive) and all(
            o not in read and not readers.get(o) and o not in outs for o in e.outvars)]
        if not dead:
            return
        gone = {id(e) for e in dead}
        node.eqns[:] = [e for e in node.eqns if id(e) not in gone]
