"""Chains of index maps composed into one (the CPU backend's rewrite): a broadcast, slice,
squeeze or unit-axis reshape that reads the result of another becomes one `index_map` of the
first one's operand (lax/index_map.py); short concatenations, reversals and pads as
selects of broadcasts (`_stacks_as_selects`), which then compose and fuse the same way; and
a stack's cheap per-row cases computed in the stack's own loop (`_stack_cases`).

Fusion places an index map in the nest of its reader, but an index map cannot read a value of
its own nest, and a nest has one shape: `y[:, 0]` (a slice to (n, 1), then a squeeze) was a
strided copy and a view, so `a[..., i, j]` for each entry of a batch of 3 x 3 matrices (a
closed-form determinant) and the columns of an ODE's state (`x, y, z = s[:, 0], s[:, 1], ...`)
cost a pass over memory each, where XLA's fusion composes the maps into the loop that reads
them. A composed map is one load in its reader's loop, or, read by nothing that fuses, one
view or copy (`kc.index_map`). Chains to 0-d values (a scalar picked from an array) and of
complex values are left alone: no loop reads them."""
from __future__ import annotations

import numpy as np

from numbax._src import core
from numbax._src.compiler import narrow_floats, passes, registry
from numbax._src.compiler.registry import Fusion
from numbax._src.core import Jaxpr, JaxprEqn, Var
from numbax._src.lax import elementwise as lx
from numbax._src.lax import index_map as im
from numbax._src.lax import shape_ops as ls

STACK_MAX = 8  # elements along an axis a concatenation as a select may have (conditionals)
# ... and along the last axis, a pad or a concatenation: the CPU writes the size of rows up to
# 16 into its loops (cpu/indices.ROW_LITERAL_MAX), so each element's pick is a constant there
# (a vmapped hessian of a Rosenbrock function of 10-vectors, its shifts' transposes pads of 9
# to 10 elements a row, ran 6.0 ms on the VM with those pads as copies, 3.5 as selects;
# jax.jit 0.7; 1e6 rotation matrices stacked from 9 columns, 18 ms as a copy, 1.4 as a select)
ROW_PAD_MAX = 16
# A stack's cases computed in its own loop (`_stack_cases`): along tails of at most this many
# elements, where the CPU writes the tail's size into the loop, so that each element's pick
# is a constant and LLVM drops the cases not picked; cases whose cheap work is at most
# SPREAD_HEIGHT equations deep (an RK4 step's last stage: ~20).
SPREAD_TAIL_MAX = ROW_PAD_MAX
SPREAD_HEIGHT = 32


def compose_index_maps(jaxpr: Jaxpr, spread_stacks: bool = True) -> Jaxpr:
    """`jaxpr` with each index map that reads another's result reading the first one's
    operand through the composed map, and sunk through the cheap elementwise work it reads
    (`_Maps`), inside loop bodies and branches too; a composition that is the identity is its
    operand. Maps and work left unread are dropped. `spread_stacks`: stacks' cases computed in
    the stack's loop (`_stack_cases`); not in bodies of compiled control flow, whose loop
    nests run a stack's loop inside the loop over its columns' rows (cpu/flow_runs.py)."""
    eqns = _stacks_as_selects(_rolls(passes.map_bodies(jaxpr, _in_bodies).eqns))
    maps = _Maps(eqns, jaxpr.outvars, spread_stacks)
    maps.changed = any(e.primitive is im.roll_p for e in eqns)  # (their slices die)
    for eqn in eqns:
        eqn = eqn._replace(invars=[maps.env.get(x, x) if isinstance(x, Var) else x
                                   for x in eqn.invars])
        reads = im.reads_of(eqn)  # (None, or one operand and one result)
        if reads is None or not isinstance(eqn.invars[0], Var) or \
                not eqn.outvars[0].aval.ndim or eqn.outvars[0].aval.dtype.kind == "c":
            maps.eqns.append(eqn)
            maps.made.update((v, eqn) for v in eqn.outvars)
            continue
        x, out = eqn.invars[0], eqn.outvars[0]
        spread = maps.cases.get(out)
        maps.env[out] = maps.mapped(x, reads, out, eqn, sink=out not in maps.map_fed,
                                    spread=spread if spread is not None and maps.spreadable(x)
                                    else None)
    outvars = [maps.env.get(v, v) if isinstance(v, Var) else v for v in jaxpr.outvars]
    out = Jaxpr(jaxpr.constvars, jaxpr.invars, maps.eqns, outvars)
    return passes.dce(out) if maps.changed else out  # (the maps composed or sunk away)


def _in_bodies(jaxpr: Jaxpr) -> Jaxpr:
    return compose_index_maps(jaxpr, spread_stacks=False)


class _Maps:
    """Index maps rewritten one at a time, in program order (`mapped`), into `eqns`.

    A map of a map is one map. A map of cheap elementwise work (`registry.cheap`) whose every
    reader is such a map or such work, all of it dying with the rewrite (`_sinkable`), is that
    work on the operands' maps: an RK4 stage reads the columns of `y + h * k`, where k is a
    stack of three derivatives, and then computes the columns from y's columns and the three
    derivatives, in the loop of the stage's other one-column values, where each column was
    a pass of its own over the (n, 3) state. And a map that fixes the axis a stack's select
    picks by (`_stacks_as_selects`) is a map of the picked operand: nothing computed.
    Maps that broadcast are not sunk (they would repeat the work), except a stack's cases
    along a short tail (`_stack_cases`): a quaternion rotation `x + w * t + cross(u, t)`,
    `t = 2 * cross(u, x)`, ran as four kernels over (n,) and (n, 3) arrays, 3.5 ms for 1e6
    points on the Zen 4 VM (jax.jit 1.8-2.9), each cross product's components a kernel of its
    own and the stack of them another."""

    def __init__(self, eqns: list[JaxprEqn], outvars: list, spread_stacks: bool) -> None:
        self.eqns: list[JaxprEqn] = []
        self.env: dict[Var, Var] = {}  # a map's result -> the value that replaces it
        self.made: dict[Var, JaxprEqn] = {}  # value -> the (rewritten) equation making it
        self.memo: dict[tuple, Var] = {}
        self.changed = False
        self.sinkable, self.map_fed = _sinkable(eqns, outvars)
        self.cases = _stack_cases(eqns, outvars) if spread_stacks else {}
        # work done in a stack's loop -> the value it repeats there and the map repeating it:
        # a map picking one slab of it is a map of that value (an RK4 stage's columns read
        # the last stage's stack: its spread cases' columns are those cases' values again)
        self.spread: dict[Var, tuple[Var, tuple[im.AxisRead, ...]]] = {}
        self.heights: dict[Var, float] = {}  # (`_height`)

    def mapped(self, x: Var, reads: tuple[im.AxisRead, ...], out: Var,
               eqn: JaxprEqn | None = None, sink: bool = True, spread: int | None = None
               ) -> Var:
        """The value `reads` of x, of out's shape: `out` itself, made by `eqn` (the map as the
        program had it) or by an equation added here, or a value made before. Not `sink`: a
        map only other maps read, which sink once composed with it (a slice, then a
        squeeze), as one map. `spread`: the first axis of the short tail a stack's case
        broadcasts along, or None."""
        shape = out.aval.shape
        maker = self.made.get(x)
        first = None if maker is None else im.reads_of(maker)
        if first is not None and isinstance(maker.invars[0], Var):
            x, reads = maker.invars[0], im.compose(reads, first)  # a map of a map
            maker, eqn = self.made.get(x), None
        if x in self.spread:
            x, first = self.spread[x]
            reads, maker, eqn = im.compose(reads, first), self.made.get(x), None
        if x.aval.shape == shape and all(r.plain and r.dim == d for d, r in enumerate(reads)):
            self.changed = True
            return x  # the identity (a squeeze of an expand_dims, ...)
        key = (x, tuple(reads), shape)
        if key in self.memo:
            self.changed = True
            return self.memo[key]
        remade = _remade(maker, reads, out)
        picked = _picked(maker, reads, shape, self.made) if sink else None
        if remade is not None:
            self.changed = True
            value = self._add(remade)
        elif picked is not None:
            self.changed = True
            value = self.mapped(picked, reads, out)
        elif sink and self._sinks(x, reads, len(shape), spread):
            self.changed = True
            ins = [a if not isinstance(a, Var) or not a.aval.ndim else
                   self.mapped(a, reads, Var(a.aval.update(shape=shape)), spread=spread)
                   for a in maker.invars]
            value = self._add(maker._replace(invars=ins, outvars=[out]))
            if im.expands(reads, len(shape)):
                self.spread[value] = (x, reads)
        elif eqn is not None:
            value = self._add(eqn)
        else:
            self.changed = True
            value = self._add(JaxprEqn(im.index_map_p, [x], [out], {
                "reads": tuple(tuple(r) for r in reads), "shape": tuple(shape)}))
        self.memo[key] = value
        return value

    def _sinks(self, x: Var, reads: tuple[im.AxisRead, ...], ndim: int,
               spread: int | None) -> bool:
        """Whether the map sinks through the work making x: work that dies with it, or, for
        a stack's case (`spread`, which `spreadable` bounded), cheap work repeated only along
        the stack's short tail."""
        runs = {r.dim for r in reads if r.stride}
        repeated = [d for d in range(ndim) if d not in runs]
        if not repeated:
            return x in self.sinkable
        return spread is not None and min(repeated) >= spread and _cheap_work(self.made.get(x))

    def spreadable(self, x: Var) -> bool:
        """Whether a stack's case x can be computed in the stack's loop whole: cheap work
        down to loads, inputs and values other kernels make (reductions, products), at most
        SPREAD_HEIGHT equations deep. Not where elementwise work too costly to repeat (exp,
        sin) would stay in a loop of its own: reading only some of each row's elements, that
        loop lost its vector form (spherical to cartesian coordinates, 5.7 -> 8.9 ms)."""
        return self._height(x) <= SPREAD_HEIGHT

    def _height(self, x: Var) -> float:
        """The longest chain of cheap work making x (inf: through other elementwise work)."""
        x = self.spread[x][0] if x in self.spread else x
        maker = self.made.get(x)
        while maker is not None and im.reads_of(maker) is not None and \
                isinstance(maker.invars[0], Var):  # a load: of what
            x = maker.invars[0]
            maker = self.made.get(x)
        if x not in self.heights:
            if maker is None:
                self.heights[x] = 0.0
            elif not _cheap_work(maker):
                elementwise = registry.fusion_kind(maker.primitive) is Fusion.ELEMENTWISE
                self.heights[x] = float("inf") if elementwise else 0.0
            else:
                self.heights[x] = 1.0 + max((self._height(a) for a in maker.invars
                                             if isinstance(a, Var) and a.aval.ndim), default=0)
        return self.heights[x]

    def _add(self, eqn: JaxprEqn) -> Var:
        self.eqns.append(eqn)
        self.made[eqn.outvars[0]] = eqn
        return eqn.outvars[0]


def _remade(maker: JaxprEqn | None, reads: tuple[im.AxisRead, ...],
            out: Var) -> JaxprEqn | None:
    """A map of a value made from nothing (an iota read along its own axis, a 0-d value
    broadcast, `jnp.zeros`) as that value made at out's shape, or None: a map of it would
    store it (a pad's fill and its select's iota sunk through a reshape were (n, 3, 1, 3)
    arrays written and read back)."""
    if maker is None or maker.invars and maker.invars[0].aval.ndim:
        return None
    if maker.primitive is ls.broadcast_in_dim_p:
        return maker._replace(outvars=[out], params={"shape": out.aval.shape,
                                                     "broadcast_dimensions": ()})
    if maker.primitive is ls.iota_p:
        along = reads[maker.params["dimension"]]
        # (a broadcast of a small iota, one_hot's, stays a load of it: a softmax's row
        # passes fuse around that load, not around an iota of the rows' shape)
        if along.plain and not im.expands(reads, out.aval.ndim):
            return maker._replace(outvars=[out], params={**maker.params, "dimension": along.dim,
                                                         "shape": out.aval.shape})
    return None


def _picked(maker: JaxprEqn | None, reads: tuple[im.AxisRead, ...], shape: tuple,
            made: dict) -> Var | None:
    """The operand a select picks where `reads` (to `shape`) fixes the axis its iota selector
    runs along (a stack's select, read one slab at a time), or None."""
    if maker is None or maker.primitive is not lx.select_n_p or \
            not isinstance(maker.invars[0], Var):
        return None
    which = made.get(maker.invars[0])
    if which is None or which.primitive is not ls.iota_p:
        return None
    axis = reads[which.params["dimension"]]
    cases = maker.invars[1:]
    fixed = axis.stride == 0 or shape[axis.dim] == 1
    if not fixed or not 0 <= axis.start < len(cases) or not isinstance(cases[axis.start], Var):
        return None
    return cases[axis.start]


def _sinkable(eqns: list[JaxprEqn], outvars: list) -> tuple[set[Var], set[Var]]:
    """The results of cheap elementwise equations that index maps may be sunk through (every
    reader is a map that does not broadcast, or such an equation whose result is sinkable),
    and the results of maps that only other maps read."""
    readers: dict[Var, list[JaxprEqn]] = {}
    for eqn in eqns:
        for x in eqn.invars:
            if isinstance(x, Var):
                readers.setdefault(x, []).append(eqn)
    kept = {v for v in outvars if isinstance(v, Var)}
    sinkable: set[Var] = set()
    for eqn in reversed(eqns):
        if not _cheap_work(eqn) or eqn.outvars[0] in kept:
            continue
        v = eqn.outvars[0]
        if all(_sinks_into(r, v, sinkable) for r in readers.get(v, [])):
            sinkable.add(v)
    map_fed = {e.outvars[0] for e in eqns if e.outvars and e.outvars[0] not in kept and
               im.reads_of(e) is not None and e.outvars[0] in readers and
               all(im.reads_of(r) is not None for r in readers[e.outvars[0]])}
    return sinkable, map_fed


def _cheap_work(eqn: JaxprEqn | None) -> bool:
    """Whether maps may be sunk through `eqn`: cheap elementwise work making one real array
    from operands of its shape or 0-d, none of them float16/bfloat16 (a map of those runs
    eagerly)."""
    if eqn is None or len(eqn.outvars) != 1:
        return False
    v = eqn.outvars[0]
    return bool(v.aval.ndim) and v.aval.dtype.kind != "c" and registry.cheap(eqn.primitive) \
        and registry.fusion_kind(eqn.primitive) is Fusion.ELEMENTWISE and not any(
            isinstance(a, Var) and a.aval.ndim and a.aval.shape != v.aval.shape
            for a in eqn.invars) and not any(a.aval.dtype in narrow_floats.NARROW
                                             for a in eqn.invars)


def _stack_cases(eqns: list[JaxprEqn], outvars: list) -> dict[Var, int]:
    """Each case of a stack's select (`_stacks_as_selects`: by an iota along an axis from
    which on the shape holds at most SPREAD_TAIL_MAX elements) that nothing else reads, with
    that axis: its work may be done in the select's loop, each element computing its own."""
    made = {v: e for e in eqns for v in e.outvars}
    uses: dict[Var, int] = {}
    for x in [*(x for e in eqns for x in e.invars), *outvars]:
        if isinstance(x, Var):
            uses[x] = uses.get(x, 0) + 1
    cases: dict[Var, int] = {}
    for eqn in eqns:
        which = made.get(eqn.invars[0]) if eqn.primitive is lx.select_n_p and \
            isinstance(eqn.invars[0], Var) else None
        if which is None or which.primitive is not ls.iota_p:
            continue
        axis = which.params["dimension"]
        if int(np.prod(eqn.outvars[0].aval.shape[axis:])) <= SPREAD_TAIL_MAX:
            cases.update((c, axis) for c in eqn.invars[1:]
                         if isinstance(c, Var) and uses[c] == 1)
    return cases


def _sinks_into(reader: JaxprEqn, v: Var, sinkable: set[Var]) -> bool:
    if len(reader.outvars) != 1:
        return False
    out = reader.outvars[0]
    reads = im.reads_of(reader)
    if reads is not None:
        return out.aval.ndim > 0 and not im.expands(reads, out.aval.ndim)
    return out in sinkable and out.aval.shape == v.aval.shape


def _stacks_as_selects(eqns: list[JaxprEqn]) -> list[JaxprEqn]:
    """Each short concatenation (at most STACK_MAX elements along its axis: `jnp.stack`, an
    alpha channel or a column of ones appended; of thicker operands only along an axis after
    the first), each reversal of one short axis (`y[:, ::-1]` of points) and each pad of one
    short axis after the first (`_pad_pieces`) as a select among one-element-thick slices of
    the operands (a constant operand or a pad's fill: the constant), broadcast
    along that axis, by an iota of it: elementwise work and index maps, which fuse into the
    loop that reads the result (an RK4 step's right-hand side stacks its three derivatives,
    then the update reads them), where the concatenation or reversal was a copy of its own.
    (The broadcasts then compose with the slices and the reshapes that made the operands one
    element thick.)"""
    out = []
    made = {v: e for e in eqns for v in e.outvars}
    for eqn in eqns:
        pieces = _short_pieces(eqn)
        if pieces is None:
            out.append(eqn)
            continue
        v = eqn.outvars[0]
        axis, shape = _short_axis(eqn), v.aval.shape
        which = Var(core.ShapedArray(shape, np.dtype(np.int32)))
        out.append(JaxprEqn(ls.iota_p, [], [which], {"dtype": np.dtype(np.int32),
                                                      "shape": shape, "dimension": axis}))
        cases: list[Var] = []
        fill = None
        for x, at in pieces:
            maker = made.get(x)
            if at is None:  # a pad's fill, a 0-d value: broadcast once
                if fill is not None:
                    cases.append(fill)
                    continue
            elif maker is not None and maker.primitive is ls.broadcast_in_dim_p and \
                    not maker.invars[0].aval.ndim:  # a constant column (`jnp.ones((n, 1))`)
                x = maker.invars[0]
            else:  # one element of a thicker operand, by a slice
                x = one_element(x, axis, at, out)
            c = Var(core.ShapedArray(shape, v.aval.dtype, x.aval.weak_type))
            out.append(JaxprEqn(ls.broadcast_in_dim_p, [x], [c], {
                "shape": shape, "broadcast_dimensions": tuple(range(x.aval.ndim))}))
            cases.append(c)
            fill = c if at is None else fill
        out.append(JaxprEqn(lx.select_n_p, [which, *cases], [v], {}))
    return out


def one_element(x: Var, axis: int, at: int, eqns: list[JaxprEqn]) -> Var:
    """Element `at` of x along `axis`, that axis kept at size 1: x itself where it is one
    element thick, else a slice appended to `eqns`."""
    if x.aval.shape[axis] == 1:
        return x
    start = [0] * x.aval.ndim
    start[axis] = at
    limit = list(x.aval.shape)
    limit[axis] = at + 1
    one = Var(core.ShapedArray(tuple(limit[:axis]) + (1,) + tuple(limit[axis + 1:]),
                               x.aval.dtype, x.aval.weak_type))
    eqns.append(JaxprEqn(ls.slice_p, [x], [one], {
        "start_indices": tuple(start), "limit_indices": tuple(limit),
        "strides": (1,) * x.aval.ndim}))
    return one


def _rolls(eqns: list[JaxprEqn]) -> list[JaxprEqn]:
    """Each concatenation of x's last `s` elements along an axis and its first `n - s`
    (what `jnp.roll(x, s, axis)` traces to) as one `roll`: a wrapped load in the loop that
    reads it (indices.roll_index), where the concatenation was a copy of its own and stopped
    the fusion of the stencil around it (a heat-equation step of four rolls ran 1.4-1.7 ms on
    the VM against jax.jit's 0.39-0.64; now 0.18)."""
    made = {v: e for e in eqns for v in e.outvars}
    out = []
    for eqn in eqns:
        rolled = _roll_of(eqn, made) if eqn.primitive is ls.concatenate_p else None
        if rolled is None:
            out.append(eqn)
            continue
        x, shift, axis = rolled
        out.append(JaxprEqn(im.roll_p, [x], list(eqn.outvars), {"shift": shift, "axis": axis}))
    return out


def _roll_of(eqn: JaxprEqn, made: dict) -> tuple[Var, int, int] | None:
    """(x, shift, axis) when the concatenation is x rolled by `shift` along its axis (the
    shift as a small signed number: -1 for x's elements moved one back), or None."""
    axis, v = eqn.params["dimension"], eqn.outvars[0]
    if len(eqn.invars) != 2 or v.aval.dtype.kind == "c" or \
            not all(isinstance(p, Var) for p in eqn.invars):
        return None
    slices = [made.get(p) for p in eqn.invars]
    if not all(e is not None and e.primitive is ls.slice_p for e in slices):
        return None
    x = slices[0].invars[0]
    if not isinstance(x, Var) or slices[1].invars[0] is not x or x.aval.shape != v.aval.shape:
        return None
    n = x.aval.shape[axis]
    cut = slices[0].params["start_indices"][axis]
    for e, (lo, hi) in zip(slices, ((cut, n), (0, cut)), strict=True):
        p = e.params
        want_lo = [0] * v.aval.ndim
        want_hi = list(x.aval.shape)
        want_lo[axis], want_hi[axis] = lo, hi
        if list(p["start_indices"]) != want_lo or list(p["limit_indices"]) != want_hi or \
                any(st != 1 for st in (p["strides"] or ())):
            return None
    if not 0 < cut < n or (n <= STACK_MAX and axis):
        return None  # (a short axis after the first: a select, `_stacks_as_selects`)
    shift = n - cut
    return x, (shift if shift <= n // 2 else shift - n), axis


def longest_select(axis: int, ndim: int) -> int:
    """The most elements along `axis` (of `ndim`) a stack, reversal or pad as a select has."""
    return ROW_PAD_MAX if axis == ndim - 1 else STACK_MAX


def _short_axis(eqn: JaxprEqn) -> int:
    if eqn.primitive is ls.concatenate_p:
        return eqn.params["dimension"]
    if eqn.primitive is ls.pad_p:
        return next(d for d, c in enumerate(eqn.params["padding_config"]) if c != (0, 0, 0))
    return eqn.params["dimensions"][0]


def _short_pieces(eqn: JaxprEqn) -> list[tuple[Var, int | None]] | None:
    """The (operand, element along the axis) each output element along the axis of a short
    concatenation, reversal or one-axis pad takes, in order (a pad's fill: (fill, None)), or
    None for any other equation."""
    if eqn.primitive is ls.pad_p:
        return _pad_pieces(eqn)
    if eqn.primitive is ls.concatenate_p:
        operands = eqn.invars
    elif eqn.primitive is ls.rev_p and len(eqn.params["dimensions"]) == 1:
        operands = eqn.invars
    else:
        return None
    v = eqn.outvars[0]
    axis = _short_axis(eqn)
    if not 2 <= v.aval.shape[axis] <= longest_select(axis, v.aval.ndim) or \
            v.aval.dtype.kind == "c" or \
            not all(isinstance(x, Var) for x in operands):
        return None
    if eqn.primitive is ls.rev_p:
        x = operands[0]
        return [(x, at) for at in reversed(range(x.aval.shape[axis]))]
    if axis == 0 and any(x.aval.shape[0] != 1 for x in operands):
        # (blocks of whole rows: the library's copy is a memcpy a block, and a select nest
        # over (4, n) splits only its 4 rows among threads: 0.35 -> 0.48 ms on 16 cores)
        return None
    return [(x, at) for x in operands for at in range(x.aval.shape[axis])]


def _pad_pieces(eqn: JaxprEqn) -> list[tuple[Var, int | None]] | None:
    """A pad of one short axis after the first (a shift of `jnp.prod`'s derivative, the
    transpose of `x[:, 1:]` on points): each output element along it is the fill or one
    element of the operand (negative edges crop, interior padding spaces the elements)."""
    x, fill = eqn.invars
    config = eqn.params["padding_config"]
    padded = [d for d, c in enumerate(config) if c != (0, 0, 0)]
    v = eqn.outvars[0]
    if len(padded) != 1 or not padded[0] or not isinstance(x, Var) or v.aval.dtype.kind == "c":
        return None
    if not 2 <= v.aval.shape[padded[0]] <= longest_select(padded[0], v.aval.ndim):
        return None
    lo, _, interior = config[padded[0]]
    n = x.aval.shape[padded[0]]
    pieces: list[tuple[Var, int | None]] = []
    for p in range(v.aval.shape[padded[0]]):
        at, off = divmod(p - lo, interior + 1)
        pieces.append((x, at) if not off and 0 <= at < n else (fill, None))
    return pieces
