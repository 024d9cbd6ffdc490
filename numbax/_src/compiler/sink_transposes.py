"""Transposes sunk through the work that makes their operand (the CPU backend's rewrite): the
transpose of elementwise work is that work on its operands' transposes, the transpose of a
broadcast, index map or iota is another one, so a transpose sinks to the values the work
starts from, where it moves only small arrays, or nothing.

`jax.vmap(jax.jacfwd(f))` stacks its tangents along the last axis and then moves that axis in
front of the outputs' (transpose (0, 2, 1) of an (n, 3, 3) array): the loop that computed the
Jacobians wrote them in one order and a copy wrote them again in the other (100k 3 x 3 float32
Jacobians 2.1 ms on the VM, jax.jit 1.3); sunk, the loop writes the result in its own order
and reads its broadcast operands through the other map. A transpose is sunk only where what is
left to transpose is smaller than its result, and only through work that nothing else reads
(that work is not done twice)."""
from __future__ import annotations

from collections import Counter

import numpy as np

from numbax._src.compiler import narrow_floats, passes, registry
from numbax._src.compiler.registry import Fusion
from numbax._src.core import Jaxpr, JaxprEqn, Var
from numbax._src.lax import index_map as im
from numbax._src.lax import shape_ops as ls


def sink_transposes(jaxpr: Jaxpr) -> Jaxpr:
    """`jaxpr` with each transpose sunk where that leaves fewer elements to move (module
    docstring), inside loop bodies and branches too."""
    eqns = passes.map_bodies(jaxpr, sink_transposes).eqns
    made = {v: e for e in eqns for v in e.outvars}
    uses = Counter(x for e in eqns for x in e.invars if isinstance(x, Var))
    uses.update(v for v in jaxpr.outvars if isinstance(v, Var))
    out: list[JaxprEqn] = []
    changed = False
    for eqn in eqns:
        x = eqn.invars[0] if eqn.primitive is ls.transpose_p else None
        if isinstance(x, Var) and x in made:
            sunk = _Sinking(made, uses)
            value = sunk.transposed(x, tuple(eqn.params["permutation"]), eqn.outvars[0])
            if sunk.moved < x.aval.size and value is eqn.outvars[0]:
                out.extend(sunk.eqns)
                changed = True
                continue
        out.append(eqn)
    if not changed:
        return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)
    return passes.dce(Jaxpr(jaxpr.constvars, jaxpr.invars, out, jaxpr.outvars))


class _Sinking:
    """One transpose's rewrite: `eqns` computing it, `moved` the elements of the transposes
    left at its leaves."""

    def __init__(self, made: dict[Var, JaxprEqn], uses: Counter) -> None:
        self.made, self.uses = made, uses
        self.eqns: list[JaxprEqn] = []
        self.moved = 0

    def transposed(self, x: Var, perm: tuple[int, ...], out: Var | None = None) -> Var:
        """x transposed by `perm` (result axis e is x's axis perm[e]), into `out` where given."""
        if perm == tuple(range(len(perm))) and out is None:
            return x
        out = out or Var(x.aval.update(shape=tuple(x.aval.shape[p] for p in perm)))
        maker = self.made.get(x)
        rule = None if maker is None or len(maker.outvars) != 1 else self._rule(maker, x)
        if rule is None:
            self.moved += x.aval.size
            return self._add(JaxprEqn(ls.transpose_p, [x], [out], {"permutation": perm}))
        return rule(maker, perm, out)

    def _rule(self, maker: JaxprEqn, x: Var):
        if maker.primitive is ls.iota_p:
            return self._iota
        if im.reads_of(maker) is not None and isinstance(maker.invars[0], Var):
            return self._map  # (remade: a map costs nothing however many read it)
        if self.uses[x] != 1:
            return None  # (sunk, the work would run twice)
        if maker.primitive is ls.transpose_p and isinstance(maker.invars[0], Var):
            return self._of_transpose
        if registry.fusion_kind(maker.primitive) is Fusion.LOOKUP:
            return self._lookup
        if registry.fusion_kind(maker.primitive) is Fusion.ELEMENTWISE and all(
                not isinstance(a, Var) or a.aval.shape in ((), x.aval.shape) and
                a.aval.dtype not in narrow_floats.NARROW for a in maker.invars):
            # (not onto a float16/bfloat16 operand: narrow_floats left only bit casts there,
            # and a transpose of those values would run eagerly)
            return self._elementwise
        return None

    def _add(self, eqn: JaxprEqn) -> Var:
        self.eqns.append(eqn)
        return eqn.outvars[0]

    def _elementwise(self, maker: JaxprEqn, perm: tuple, out: Var) -> Var:
        ins = [self.transposed(a, perm) if isinstance(a, Var) and a.aval.ndim else a
               for a in maker.invars]
        return self._add(maker._replace(invars=ins, outvars=[out]))

    def _lookup(self, maker: JaxprEqn, perm: tuple, out: Var) -> Var:
        """A lookup, transposed: the same table at its coordinates' transposes (vmap of
        `map_coordinates` over images sharing coordinates takes the images' axis whole, then
        moves it in front)."""
        ins = [maker.invars[0], *(self.transposed(c, perm) for c in maker.invars[1:])]
        return self._add(maker._replace(invars=ins, outvars=[out]))

    def _of_transpose(self, maker: JaxprEqn, perm: tuple, out: Var) -> Var:
        inner = maker.params["permutation"]
        return self.transposed(maker.invars[0], tuple(inner[p] for p in perm), out)

    def _iota(self, maker: JaxprEqn, perm: tuple, out: Var) -> Var:
        params = {**maker.params, "shape": out.aval.shape,
                  "dimension": perm.index(maker.params["dimension"])}
        return self._add(maker._replace(outvars=[out], params=params))

    def _map(self, maker: JaxprEqn, perm: tuple, out: Var) -> Var:
        """A map of y, transposed: the map of y, with the operand's axes that run along the
        output moved into the new order where they would read out of it."""
        y = maker.invars[0]
        where = np.argsort(perm)  # x's axis d is the result's axis where[d]
        reads = [r if r.dim is None else r._replace(dim=int(where[r.dim]))
                 for r in im.reads_of(maker)]
        runs = [i for i, r in enumerate(reads) if r.stride]
        order = list(range(y.aval.ndim))  # y's axes in the order the new reads need
        for i, j in zip(runs, sorted(runs, key=lambda i: reads[i].dim), strict=True):
            order[i] = j
        y = self.transposed(y, tuple(order))
        reads = [reads[i] for i in order]
        return self._add(JaxprEqn(im.index_map_p, [y], [out], {
            "reads": tuple(tuple(r) for r in reads), "shape": tuple(out.aval.shape)}))
