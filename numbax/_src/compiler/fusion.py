"""Partitions a simplified jaxpr into a kernel graph: fused loop nests and library calls.

Which equations may fuse is the backend's question (its `fusible` predicate, read off the
lowering registry); how a fusible equation sits in a nest is its fusion kind: elementwise,
broadcast (an index map), reduction (an accumulator) or source (iota: the loop index)."""
from __future__ import annotations

from collections.abc import Callable

from numbax._src.compiler import registry
from numbax._src.compiler.ir import LibraryCall, LoopNest, Node, node_eqns
from numbax._src.compiler.registry import Fusion
from numbax._src.core import Jaxpr, JaxprEqn, Literal, Var


def kind_of(eqn: JaxprEqn) -> Fusion | None:
    """The fusion kind of the equation's primitive (None: it never joins a nest)."""
    return registry.fusion_kind(eqn.primitive)


def _iteration_shape(eqn: JaxprEqn) -> tuple[int, ...]:
    if kind_of(eqn) is Fusion.REDUCTION:
        return eqn.invars[0].aval.shape
    return eqn.outvars[0].aval.shape


def _fits(nest: LoopNest, eqn: JaxprEqn, producer: dict[Var, Node]) -> bool:
    """Whether `eqn` may join `nest` (same space, reads no reduced value of the nest)."""
    k = kind_of(eqn)
    if nest.shape != _iteration_shape(eqn):
        return False
    if k is Fusion.REDUCTION and nest.reduce_axes not in (None, eqn.params["axes"]):
        return False
    if k is Fusion.SOURCE and nest.reduce_axes is not None:
        return False
    if k is Fusion.REDUCTION and _has_source(nest):
        return False
    for x in eqn.invars:
        if isinstance(x, Var) and producer.get(x) is nest:
            if x in nest.reduced or k is Fusion.BROADCAST:
                return False
    return True


def _has_source(nest: LoopNest) -> bool:
    return any(kind_of(e) is Fusion.SOURCE for e in nest.eqns)


def _hoist_scalars(eqns: list[JaxprEqn], fusible: Callable[[JaxprEqn], bool]) -> list[JaxprEqn]:
    """Program order with each fusible all-scalar equation moved up to just after the last
    equation it reads. A scalar computed between two array equations otherwise ends their nest:
    threefry's key schedule (two xors of the key words) split random bits into two kernels and
    one more array."""
    order: list[JaxprEqn] = []
    made_at: dict[Var, int] = {}
    for eqn in eqns:
        scalar = fusible(eqn) and all(v.aval.ndim == 0 for v in eqn.outvars) and all(
            x.aval.ndim == 0 for x in eqn.invars if isinstance(x, Var))
        at = len(order)
        if scalar:
            at = max((made_at[x] + 1 for x in eqn.invars if isinstance(x, Var) and x in made_at),
                     default=0)
            for v, k in made_at.items():  # later equations shift down by one
                if k >= at:
                    made_at[v] = k + 1
        order.insert(at, eqn)
        for v in eqn.outvars:
            made_at[v] = at
    return order


def partition(jaxpr: Jaxpr, fusible: Callable[[JaxprEqn], bool]) -> list[Node]:
    """Greedy fusion in program order (scalars hoisted, `_hoist_scalars`): each fusible
    equation joins the latest nest it fits."""
    nodes: list[Node] = []
    producer: dict[Var, Node] = {}
    position: dict[Node, int] = {}
    for eqn in _hoist_scalars(jaxpr.eqns, fusible):
        deps = [position[producer[x]] for x in eqn.invars
                if isinstance(x, Var) and x in producer]
        first = max(deps, default=-1)
        node: Node | None = None
        if fusible(eqn):
            for k in range(len(nodes) - 1, max(first, 0) - 1, -1):
                cand = nodes[k]
                if isinstance(cand, LoopNest) and _fits(cand, eqn, producer):
                    node = cand
                    break
            if node is None:
                node = LoopNest(_iteration_shape(eqn))
                position[node] = len(nodes)
                nodes.append(node)
            node.eqns.append(eqn)
            if kind_of(eqn) is Fusion.REDUCTION:
                node.reduce_axes = eqn.params["axes"]
                node.reduced.update(eqn.outvars)
        else:
            node = LibraryCall(eqn)
            position[node] = len(nodes)
            nodes.append(node)
        for v in eqn.outvars:
            producer[v] = node
    nodes = fuse_rows(nodes, producer)
    _wire(jaxpr, nodes, producer)
    return nodes


# ----------------------------------------------------------------------------- row groups


def trailing(nest: LoopNest) -> int | None:
    """The number of outer (kept) axes when the nest reduces exactly its trailing axes."""
    axes, rank = nest.reduce_axes, len(nest.shape)
    if not axes or axes != tuple(range(rank - len(axes), rank)):
        return None
    return rank - len(axes)


def _row_kind(group: LoopNest, kept: int, cand: Node, producer: dict[Var, Node]) -> str | None:
    """How `cand` joins a row group: "row" (same space), "outer" (per outer index) or None."""
    if not isinstance(cand, LoopNest) or _has_source(cand):
        return None
    outer = group.shape[:kept]
    if cand.shape == group.shape and cand.reduce_axes in (None, group.reduce_axes):
        kind = "row"
    elif cand.shape == outer and cand.reduce_axes is None:
        kind = "outer"
    else:
        return None
    scalars = group.reduced | {v for kind_, eqns in group.passes if kind_ == "outer"
                               for e in eqns for v in e.outvars}
    for eqn in cand.eqns:
        for x in eqn.invars:
            if not isinstance(x, Var) or producer.get(x) is not group or kind == "outer":
                continue
            if x in scalars:  # a per-row value: only a broadcast along the trailing axes reads it
                row_bcast = kind_of(eqn) is Fusion.BROADCAST and \
                    eqn.params["broadcast_dimensions"] == tuple(range(kept))
                if not row_bcast and x.aval.ndim != 0:
                    return None
            elif kind_of(eqn) is Fusion.BROADCAST:
                return None
    return kind


def fuse_rows(nodes: list[Node], producer: dict[Var, Node]) -> list[Node]:
    """Merges a trailing-axes reduction nest with the nests right after it over the same outer
    space (later reductions, elementwise consumers, per-row epilogues) into one row group: one
    kernel whose outer loop runs over rows and whose passes loop over each row (softmax,
    logsumexp), instead of one kernel and one intermediate array per pass."""
    out: list[Node] = []
    for node in nodes:
        prev = out[-1] if out else None
        if isinstance(prev, LoopNest) and prev.passes is not None:
            kind = _row_kind(prev, trailing(prev), node, producer)
            if kind is not None:
                prev.passes.append((kind, list(node.eqns)))
                prev.eqns.extend(node.eqns)
                prev.reduced.update(node.reduced)
                for e in node.eqns:
                    for v in e.outvars:
                        producer[v] = prev
                continue
        if isinstance(node, LoopNest) and trailing(node) is not None:
            node.passes = [("row", list(node.eqns))]
        out.append(node)
    for node in out:
        if isinstance(node, LoopNest) and node.passes is not None and len(node.passes) == 1:
            node.passes = None  # a plain reduction nest: rendered as before
    return out


def _wire(jaxpr: Jaxpr, nodes: list[Node], producer: dict[Var, Node]) -> None:
    """Fills each node's inputs (read from outside) and outputs (read outside or returned)."""
    needed_outside: set[Var] = {x for x in jaxpr.outvars if isinstance(x, Var)}
    for node in nodes:
        for eqn in node_eqns(node):
            for x in eqn.invars:
                if isinstance(x, Literal):
                    continue
                if producer.get(x) is not node and x not in node.inputs:
                    node.inputs.append(x)
                    needed_outside.add(x)
    for node in nodes:
        for eqn in node_eqns(node):
            node.outputs.extend(v for v in eqn.outvars
                                if v in needed_outside or isinstance(node, LibraryCall))


def recompute(eqns: list[JaxprEqn], row_defs: list[JaxprEqn], seed) -> list[JaxprEqn]:
    """The equations of earlier row passes that `eqns` need again, in program order."""
    defs = {e.outvars[0]: e for e in row_defs}
    need: set[Var] = set()
    stack = [x for e in eqns for x in e.invars]
    while stack:
        x = stack.pop()
        if isinstance(x, Var) and x in defs and x not in need and x not in seed:
            need.add(x)
            stack.extend(defs[x].invars)
    return [e for e in row_defs if e.outvars[0] in need]
