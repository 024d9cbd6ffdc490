"""Partitions a simplified jaxpr into a kernel graph: fused loop nests and library calls.

Which equations may fuse is the backend's question (its `fusible` predicate, read off the
lowering registry); how a fusible equation sits in a nest is its fusion kind: elementwise,
broadcast (an index map), reduction (an accumulator) or source (iota: the loop index)."""
from __future__ import annotations

import bisect
import zlib
from collections.abc import Callable

import numpy as np

from numbax._src.compiler import registry, remat
from numbax._src.compiler.ir import LibraryCall, LoopNest, Node, node_eqns
from numbax._src.compiler.registry import Fusion
from numbax._src.core import Jaxpr, JaxprEqn, Literal, Var
from numbax._src.lax import shape_ops as ls

# Bounds that keep generated source and compile time linear in the program (issue 20).
# A nest costing more (OpCost units summed over its equations) is cut into pieces costing
# MAX_NEST_COST // 2 to MAX_NEST_COST: kernels of bounded compile time, and identical pieces
# when the program repeats a structure. (One float32 random.normal nest costs ~140.)
MAX_NEST_COST = 256
SCAN_NODES = 64  # how far back an equation with no producer looks for a nest to join
# A row pass recomputes the full-size values of earlier passes it reads (rows.py); past this
# cost (OpCost units: a light op is 1) the pass starts a new kernel and reads them stored.
MAX_RECOMPUTE = 24

OpCost = Callable[[JaxprEqn], float]


def unit_cost(eqn: JaxprEqn) -> float:
    """The default cost of recomputing one equation per element."""
    return 1.0


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
    if k is Fusion.REDUCTION and (_has_source(nest) or _has_lookup(nest)):
        return False
    if k is Fusion.LOOKUP and (nest.reduce_axes is not None or
                               producer.get(eqn.invars[0]) is nest or
                               _computes(nest, eqn.invars[1:], producer)):
        return False  # (loads from the whole table: no element of the nest's own)
    for x in eqn.invars:
        if isinstance(x, Var) and producer.get(x) is nest:
            if x in nest.reduced or k is Fusion.INDEX_MAP:
                return False
    return True


def window(eqn: JaxprEqn) -> bool:
    """Whether an index-map equation reads a strided box of its operand, every output element
    from its own operand element (a slice, `a[..., i, j]`; a broadcast repeats elements):
    alone, the driver takes it as a view or a copy."""
    if kind_of(eqn) is not Fusion.INDEX_MAP or eqn.primitive is ls.broadcast_in_dim_p:
        return False
    read = {r.dim for r in registry.axis_reads(eqn) if r.stride >= 1}
    return read == set(range(eqn.outvars[0].aval.ndim))


def rows_off_index(eqn: JaxprEqn) -> bool:
    """Whether an index map reads its operand through the loop's outer index other than as
    the operand's own rows at that index: off it (x[1:], x[::2]), on another of its axes
    (x[5] of an (n, m, 1) x: the outer index reads axis 1), or as a slice (x[:, 1:]). A
    kernel run on some of its rows (a native-pool task) passes such an operand whole and
    reads it at the absolute row (cpu LoopKernel.row0), so that one operand can be read at
    several offsets."""
    return kind_of(eqn) is Fusion.INDEX_MAP and any(
        r.dim == 0 and r.stride != 0 and (axis > 0 or not r.plain or window(eqn))
        for axis, r in enumerate(registry.axis_reads(eqn)))


def _computes(nest: LoopNest, xs: list, producer: dict[Var, Node]) -> bool:
    """Whether the nest computes any of `xs` (elementwise work, not an index map or iota).
    A lookup does not join the nest computing its coordinates: LLVM vectorises no loop with a
    load at a computed index (it cannot rule out that the loop's stores alias it), so there
    the coordinates' arithmetic would run scalar. Stored by a loop of their own, they cost
    a pass over memory and run in vector lanes (rotating 8 images of 512 x 512 with
    `map_coordinates`, nearest: 38 ms fused, 25 apart on the VM)."""
    for x in xs:
        if isinstance(x, Var) and producer.get(x) is nest:
            maker = next(e for e in nest.eqns if x in e.outvars)
            if kind_of(maker) not in (Fusion.INDEX_MAP, Fusion.SOURCE):
                return True
    return False


def _has_source(nest: LoopNest) -> bool:
    return any(kind_of(e) is Fusion.SOURCE for e in nest.eqns)


def _has_lookup(nest: LoopNest) -> bool:
    return any(kind_of(e) is Fusion.LOOKUP for e in nest.eqns)


def _hoist_scalars(eqns: list[JaxprEqn], fusible: Callable[[JaxprEqn], bool]) -> list[JaxprEqn]:
    """Program order with each fusible all-scalar equation moved up to just after the last
    equation it reads (ahead of scalars hoisted there before it). A scalar computed between two
    array equations otherwise ends their nest: threefry's key schedule (two xors of the key
    words) split random bits into two kernels and one more array.

    Each equation gets a sort key: `(i,)` when it stays in place, its anchor's key plus a
    decreasing counter when hoisted, so the order costs a sort rather than one list insertion
    per scalar (quadratic in programs with thousands of them)."""
    keys: list[tuple] = []
    made: dict[Var, tuple] = {}
    last: tuple = (-1,)  # the greatest key so far: the end of the order
    hoisted = 0
    for i, eqn in enumerate(eqns):
        key: tuple = (i,)
        scalar = fusible(eqn) and all(v.aval.ndim == 0 for v in eqn.outvars) and all(
            x.aval.ndim == 0 for x in eqn.invars if isinstance(x, Var))
        if scalar or _picks_one_element(eqn):
            anchor = max((made[x] for x in eqn.invars if isinstance(x, Var) and x in made),
                         default=(-1,))
            if anchor != last:  # not already at the end: right after its anchor
                hoisted += 1
                key = (*anchor, -hoisted)
        keys.append(key)
        last = max(last, key)
        for v in eqn.outvars:
            made[v] = key
    return [eqns[j] for j in sorted(range(len(eqns)), key=keys.__getitem__)]


def _picks_one_element(eqn: JaxprEqn) -> bool:
    """Whether the equation is an index map to one element (`c[i]`: a slice, then a squeeze),
    hoisted with the scalars: a polynomial's coefficients read between its steps each ended
    the steps' nest (`jnp.polyval` of unrolled steps ran as four kernels)."""
    return (kind_of(eqn) is Fusion.INDEX_MAP or eqn.primitive in (ls.squeeze_p, ls.reshape_p)) \
        and all(int(np.prod(v.aval.shape)) == 1 for v in eqn.outvars)


def partition(jaxpr: Jaxpr, fusible: Callable[[JaxprEqn], bool],
              cost: OpCost = unit_cost, split_unrelated: bool = False) -> list[Node]:
    """Greedy fusion in program order (scalars hoisted, `_hoist_scalars`): each fusible
    equation joins the latest nest it fits (among the last SCAN_NODES when nothing it reads
    pins it); a broadcast of a program input waits for its first reader and joins that
    reader's nest (`_Placer.defers`); nests costing over MAX_NEST_COST are cut
    (`split_long`), with `split_unrelated` elementwise nests are cut into the parts that share
    no value (`split_unrelated_parts`), then row groups form (`fuse_rows`, recomputation
    bounded by `cost`)."""
    placer = _Placer(fusible)
    for eqn in _hoist_scalars(jaxpr.eqns, fusible):
        placer.add(eqn)
    placer.flush()
    nodes = split_long(placer.nodes, placer.producer, cost)
    if split_unrelated:
        nodes = split_unrelated_parts(nodes, placer.producer)
    nodes = remat.rematerialize(nodes, placer.producer, jaxpr.outvars)
    nodes = fuse_rows(nodes, placer.producer, cost)
    _wire(jaxpr, nodes, placer.producer)
    return nodes


class _Placer:
    """The kernel graph as `partition` builds it, one equation at a time."""

    def __init__(self, fusible: Callable[[JaxprEqn], bool]) -> None:
        self.fusible = fusible
        self.nodes: list[Node] = []
        self.producer: dict[Var, Node] = {}
        self.position: dict[Node, int] = {}
        self.pending: dict[Var, JaxprEqn] = {}  # deferred broadcasts by their output

    def defers(self, eqn: JaxprEqn) -> bool:
        """An iota, a broadcast of a program input or literal, any slice: placed where first
        read, else it joins any earlier nest of its shape and is stored as a full array (a
        slice no reader takes is a library call: `window`)."""
        if kind_of(eqn) not in (Fusion.INDEX_MAP, Fusion.SOURCE) or not self.fusible(eqn) or \
                any(isinstance(x, Var) and x in self.pending for x in eqn.invars):
            return False
        return window(eqn) or not any(isinstance(x, Var) and x in self.producer
                                      for x in eqn.invars)

    def add(self, eqn: JaxprEqn) -> None:
        if self.defers(eqn):
            self.pending[eqn.outvars[0]] = eqn
            return
        early = list({id(p): p for p in (self.pending.pop(x, None) for x in eqn.invars
                                          if isinstance(x, Var)) if p is not None}.values())
        late = []
        if self.fusible(eqn) and kind_of(eqn) is not Fusion.INDEX_MAP:
            shape = _iteration_shape(eqn)
            late = [p for p in early if p.outvars[0].aval.shape == shape and
                    not registry.reads_whole(eqn, p.outvars[0])]
        for p in early:
            if not any(p is q for q in late):
                self.place(p, alone=True)
        self.place(eqn, late)

    def flush(self) -> None:
        for p in list(self.pending.values()):
            self.place(p, alone=True)
        self.pending.clear()

    def place(self, eqn: JaxprEqn, before: list[JaxprEqn] = (), alone: bool = False) -> None:
        """Adds `eqn` to the latest nest it fits (a new one if none), `before` (deferred
        index maps of that nest's shape) just ahead of it; or as a library call, as is a
        window no reader took (`alone`): a copy by itself, or a view."""
        deps = [self.position[self.producer[x]] for x in [*eqn.invars, *(
            x for b in before for x in b.invars)] if isinstance(x, Var) and x in self.producer]
        first = max(deps, default=-1)
        node: Node | None = None
        nodes = self.nodes
        if self.fusible(eqn) and not (alone and window(eqn)):
            # work that reads nothing of a nest with lookups joins an earlier nest where one
            # fits: a lookup's nest runs scalar, and its later coordinates belong with the
            # earlier ones, in vector lanes (`_computes`)
            later: LoopNest | None = None
            for k in range(len(nodes) - 1, max(first, len(nodes) - SCAN_NODES, 0) - 1, -1):
                cand = nodes[k]
                if isinstance(cand, LoopNest) and all(
                        _fits(cand, e, self.producer) for e in [*before, eqn]):
                    if k > first and kind_of(eqn) is not Fusion.LOOKUP and _has_lookup(cand):
                        later = later or cand
                        continue
                    node = cand
                    break
            node = node or later
            if node is None:
                node = LoopNest(_iteration_shape(eqn))
                self.position[node] = len(nodes)
                nodes.append(node)
            for e in [*before, eqn]:
                node.eqns.append(e)
                if kind_of(e) is Fusion.REDUCTION:
                    node.reduce_axes = e.params["axes"]
                    node.reduced.update(e.outvars)
                for v in e.outvars:
                    self.producer[v] = node
            return
        node = LibraryCall(eqn)
        self.position[node] = len(nodes)
        nodes.append(node)
        for v in eqn.outvars:
            self.producer[v] = node


# ----------------------------------------------------------------------------- long nests


def split_long(nodes: list[Node], producer: dict[Var, Node],
               cost: OpCost = unit_cost) -> list[Node]:
    """Cuts every nest costing more than MAX_NEST_COST into pieces in program order (valid
    anywhere: no equation of a nest reads a reduction of the same nest). Numba's compile
    time grows faster than a kernel's length, and pieces of a repeated structure are
    identical modules, compiled once (`_cut_points`)."""
    out: list[Node] = []
    for node in nodes:
        costs = [cost(e) for e in node.eqns] if isinstance(node, LoopNest) else []
        if sum(costs) <= MAX_NEST_COST:
            out.append(node)
            continue
        cuts = _cut_points(node.eqns, costs)
        for lo, hi in zip([0, *cuts], [*cuts, len(node.eqns)]):
            piece = LoopNest(node.shape, node.eqns[lo:hi])
            for eqn in piece.eqns:
                if kind_of(eqn) is Fusion.REDUCTION:
                    piece.reduce_axes = node.reduce_axes
                    piece.reduced.update(eqn.outvars)
                for v in eqn.outvars:
                    producer[v] = piece
            out.append(piece)
    return out


def split_unrelated_parts(nodes: list[Node], producer: dict[Var, Node]) -> list[Node]:
    """Each elementwise nest cut into its connected parts: equations linked by a value one
    makes and another reads, or by an array operand both read (a shared scalar, such as a
    learning rate, links nothing). Fusing unrelated work saves one kernel call, but every
    different mix of it is another module to compile: an optimizer step updating two biases
    of one shape in one nest compiled a module of its own. Apart, each update is the same
    source as every other parameter's, compiled once."""
    out: list[Node] = []
    for node in nodes:
        if not isinstance(node, LoopNest) or node.reduce_axes is not None or not node.shape:
            out.append(node)
            continue
        groups = _connected_parts(node.eqns)
        if len(groups) == 1:
            out.append(node)
            continue
        for eqns in groups:
            piece = LoopNest(node.shape, eqns)
            for eqn in eqns:
                for v in eqn.outvars:
                    producer[v] = piece
            out.append(piece)
    return out


def _connected_parts(eqns: list[JaxprEqn]) -> list[list[JaxprEqn]]:
    """The equations grouped by the array values that link them (union-find), each group in
    program order, groups by their first equation."""
    part = list(range(len(eqns)))

    def root(i: int) -> int:
        while part[i] != i:
            part[i] = part[part[i]]
            i = part[i]
        return i

    seen: dict[Var, int] = {}
    for i, eqn in enumerate(eqns):
        for v in [*eqn.invars, *eqn.outvars]:
            if isinstance(v, Var) and v.aval.ndim:
                if v in seen:
                    part[root(i)] = root(seen[v])
                else:
                    seen[v] = i
    groups: dict[int, list[JaxprEqn]] = {}
    for i, eqn in enumerate(eqns):
        groups.setdefault(root(i), []).append(eqn)
    return list(groups.values())


def _cut_points(eqns: list[JaxprEqn], costs: list[float]) -> list[int]:
    """Where to cut: each piece costs MAX_NEST_COST // 2 to MAX_NEST_COST (or holds one
    equation) and ends where fewest values cross to the next (each crossing value becomes an
    array), ties broken by a hash of the equations around the cut. The choice depends on the
    equations alone, so a program repeating one structure is cut at the same place in every
    repeat: its pieces are the same source, one kernel module."""
    n = len(eqns)
    upto = [0.0] * (n + 1)  # upto[p]: the cost of eqns[:p]
    for i, c in enumerate(costs):
        upto[i + 1] = upto[i] + c
    made = {v: i for i, e in enumerate(eqns) for v in e.outvars}
    last_read: dict[Var, int] = {}
    for i, e in enumerate(eqns):
        for x in e.invars:
            if isinstance(x, Var) and x in made:
                last_read[x] = i
    crossing = [0] * (n + 1)  # crossing[p]: values made before p and read at p or later
    for v, j in last_read.items():
        crossing[made[v] + 1] += 1
        crossing[j + 1] -= 1
    for p in range(1, n + 1):
        crossing[p] += crossing[p - 1]
    marks = [f"{e.primitive.name}:{e.outvars[0].aval.dtype}:"
             f"{''.join('l' if isinstance(x, Literal) else 'v' for x in e.invars)};".encode()
             for e in eqns]
    cuts, start = [], 0
    while upto[n] - upto[start] > MAX_NEST_COST and start < n - 1:
        lo = min(bisect.bisect_left(upto, upto[start] + MAX_NEST_COST / 2, start + 1), n - 1)
        hi = min(max(bisect.bisect_right(upto, upto[start] + MAX_NEST_COST) - 1, lo), n - 1)
        best = min(range(lo, hi + 1), key=lambda p: (
            crossing[p], zlib.crc32(b"".join(marks[max(p - 4, 0):p + 4])), p))
        cuts.append(best)
        start = best
    return cuts


# ----------------------------------------------------------------------------- row groups


def trailing(nest: LoopNest) -> int | None:
    """The number of outer (kept) axes when the nest reduces exactly its trailing axes."""
    axes, rank = nest.reduce_axes, len(nest.shape)
    if not axes or axes != tuple(range(rank - len(axes), rank)):
        return None
    return rank - len(axes)


def _row_kind(group: LoopNest, kept: int, cand: Node, producer: dict[Var, Node]) -> str | None:
    """How `cand` joins a row group: "row" (same space), "outer" (per outer index) or None."""
    if not isinstance(cand, LoopNest) or _has_source(cand) or _has_lookup(cand):
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
            if not isinstance(x, Var) or producer.get(x) is not group:
                continue
            if x not in scalars and kind == "outer":
                return None  # an element of a row (`y[:, 0]`): the group keeps no row stored
            if kind == "outer":
                continue
            if x in scalars:  # a per-row value: only a broadcast along the trailing axes reads it
                row_bcast = kind_of(eqn) is Fusion.INDEX_MAP and all(
                    r.dim == d and r.start == 0 for d, r in enumerate(registry.axis_reads(eqn))) \
                    and x.aval.ndim == kept
                if not row_bcast and x.aval.ndim != 0:
                    return None
            elif kind_of(eqn) is Fusion.INDEX_MAP:
                return None
    return kind


def fuse_rows(nodes: list[Node], producer: dict[Var, Node],
              cost: OpCost = unit_cost) -> list[Node]:
    """Merges a trailing-axes reduction nest with the nests right after it over the same outer
    space (later reductions, elementwise consumers, per-row epilogues) into one row group: one
    kernel whose outer loop runs over rows and whose passes loop over each row (softmax,
    logsumexp), instead of one kernel and one intermediate array per pass.

    A row pass recomputes the full-size values it reads from earlier passes (`recompute`); a
    pass whose recomputation would cost more than MAX_RECOMPUTE, or that would take the group
    past 2 * MAX_NEST_COST, starts a new kernel instead, which reads those values
    stored (a chain of reductions otherwise recomputes everything before it in every pass:
    source quadratic in the chain)."""
    out: list[Node] = []
    group = _RowGroup()
    for node in nodes:
        prev = out[-1] if out else None
        if isinstance(prev, LoopNest) and prev.passes is not None:
            kind = _row_kind(prev, trailing(prev), node, producer)
            if kind is not None and group.admits(kind, node.eqns, cost):
                group.add(kind, node.eqns, cost)
                prev.passes.append((kind, list(node.eqns)))
                prev.eqns.extend(node.eqns)
                prev.reduced.update(node.reduced)
                for e in node.eqns:
                    for v in e.outvars:
                        producer[v] = prev
                continue
        if isinstance(node, LoopNest) and trailing(node) is not None:
            node.passes = [("row", list(node.eqns))]
            group = _RowGroup()
            group.add("row", node.eqns, cost)
        out.append(node)
    for node in out:
        if isinstance(node, LoopNest) and node.passes is not None and len(node.passes) == 1:
            node.passes = None  # a plain reduction nest: rendered as before
    return out


class _RowGroup:
    """What a forming row group's next pass would recompute, and the group's size."""

    def __init__(self) -> None:
        self.row_defs: list[JaxprEqn] = []  # elementwise equations of its row passes
        self.seed: set[Var] = set()  # per-row values: reductions and outer passes
        self.size = 0.0  # the cost of its equations, recomputed ones included

    def admits(self, kind: str, eqns: list[JaxprEqn], cost: OpCost) -> bool:
        again = recompute(eqns, self.row_defs, self.seed) if kind == "row" else []
        if sum(cost(e) for e in again) > MAX_RECOMPUTE:
            return False
        return self.size + sum(cost(e) for e in [*eqns, *again]) <= 2 * MAX_NEST_COST

    def add(self, kind: str, eqns: list[JaxprEqn], cost: OpCost) -> None:
        again = recompute(eqns, self.row_defs, self.seed) if kind == "row" else []
        self.size += sum(cost(e) for e in [*eqns, *again])
        for e in eqns:
            if kind == "outer" or kind_of(e) is Fusion.REDUCTION:
                self.seed.update(e.outvars)
            else:
                self.row_defs.append(e)


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
