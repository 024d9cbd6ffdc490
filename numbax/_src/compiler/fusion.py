"""Partitions a simplified jaxpr into a kernel graph: fused loop nests and library calls."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from numbax._src.core import Jaxpr, JaxprEqn, Literal, Var

# Fusion classes: which primitives a loop nest may hold.
ELEMENTWISE = frozenset({
    "neg", "sign", "floor", "ceil", "is_finite", "exp", "exp2", "log", "log1p", "expm1", "tanh",
    "logistic", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
    "atanh", "sqrt", "rsqrt", "cbrt", "abs", "erf", "erfc", "erf_inv", "lgamma", "real", "imag",
    "conj",
    "not", "square", "round", "integer_pow",
    "add", "add_any", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "and", "or",
    "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical",
    "eq", "ne", "lt", "le", "gt", "ge",
    "select_n", "clamp", "convert_element_type", "stop_gradient", "bitcast_convert_type",
})
# Equations without operands whose value is a function of the loop index (iota). They join
# only nests without reductions, and no reduction or row group takes a nest holding one, so
# codegen renders them only in plain loops over the full index.
SOURCES = frozenset({"iota"})
BROADCAST = frozenset({"broadcast_in_dim"})
REDUCTIONS = frozenset({
    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
})


@dataclass
class LoopNest:
    """Equations over one iteration space (`shape`), optionally reducing `reduce_axes`."""

    shape: tuple[int, ...]
    eqns: list[JaxprEqn] = field(default_factory=list)
    reduce_axes: tuple[int, ...] | None = None
    inputs: list[Var] = field(default_factory=list)
    outputs: list[Var] = field(default_factory=list)
    reduced: set = field(default_factory=set)  # outvars of reductions in this nest
    # A row group (see fuse_rows): the equations split into passes, each ("row", eqns) looping
    # over the reduced trailing axes or ("outer", eqns) run once per outer index; None otherwise.
    passes: list | None = None

    family = "loop"


@dataclass
class LibraryCall:
    """One equation lowered to a library function run by the driver (BLAS, views, sorts)."""

    eqn: JaxprEqn
    inputs: list[Var] = field(default_factory=list)
    outputs: list[Var] = field(default_factory=list)

    family = "lib"


Node = LoopNest | LibraryCall


def _iteration_shape(eqn: JaxprEqn) -> tuple[int, ...]:
    if eqn.primitive.name in REDUCTIONS:
        return eqn.invars[0].aval.shape
    return eqn.outvars[0].aval.shape


def _fits(nest: LoopNest, eqn: JaxprEqn, producer: dict[Var, Node]) -> bool:
    """Whether `eqn` may join `nest` (same space, reads no reduced value of the nest)."""
    name = eqn.primitive.name
    if nest.shape != _iteration_shape(eqn):
        return False
    if name in REDUCTIONS and nest.reduce_axes not in (None, eqn.params["axes"]):
        return False
    if name in SOURCES and nest.reduce_axes is not None:
        return False
    if name in REDUCTIONS and _has_source(nest):
        return False
    for x in eqn.invars:
        if isinstance(x, Var) and producer.get(x) is nest:
            if x in nest.reduced or name in BROADCAST:
                return False
    return True


def _has_source(nest: LoopNest) -> bool:
    return any(e.primitive.name in SOURCES for e in nest.eqns)


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
    position: dict[int, int] = {}
    for eqn in _hoist_scalars(jaxpr.eqns, fusible):
        name = eqn.primitive.name
        deps = [position[id(producer[x])] for x in eqn.invars
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
                position[id(node)] = len(nodes)
                nodes.append(node)
            node.eqns.append(eqn)
            if name in REDUCTIONS:
                node.reduce_axes = eqn.params["axes"]
                node.reduced.update(eqn.outvars)
        else:
            node = LibraryCall(eqn)
            position[id(node)] = len(nodes)
            nodes.append(node)
        for v in eqn.outvars:
            producer[v] = node
    nodes = fuse_rows(nodes, producer)
    _wire(jaxpr, nodes, producer)
    return nodes


# ----------------------------------------------------------------------------- row groups


def _trailing(nest: LoopNest) -> int | None:
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
                row_bcast = eqn.primitive.name in BROADCAST and \
                    eqn.params["broadcast_dimensions"] == tuple(range(kept))
                if not row_bcast and x.aval.ndim != 0:
                    return None
            elif eqn.primitive.name in BROADCAST:
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
            kind = _row_kind(prev, _trailing(prev), node, producer)
            if kind is not None:
                prev.passes.append((kind, list(node.eqns)))
                prev.eqns.extend(node.eqns)
                prev.reduced.update(node.reduced)
                for e in node.eqns:
                    for v in e.outvars:
                        producer[v] = prev
                continue
        if isinstance(node, LoopNest) and _trailing(node) is not None:
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
        eqns = node.eqns if isinstance(node, LoopNest) else [node.eqn]
        for eqn in eqns:
            for x in eqn.invars:
                if isinstance(x, Literal):
                    continue
                if producer.get(x) is not node and x not in node.inputs:
                    node.inputs.append(x)
                    needed_outside.add(x)
    for node in nodes:
        eqns = node.eqns if isinstance(node, LoopNest) else [node.eqn]
        for eqn in eqns:
            node.outputs.extend(v for v in eqn.outvars
                                if v in needed_outside or isinstance(node, LibraryCall))
