"""The function `vjp` returns: a pytree whose leaves are the residuals, so that (as JAX's VJP
object) it can be returned from a jitted forward pass and passed into a jitted backward one.
Called on output cotangents, it gives the input cotangents."""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

from numbax._src import tree_util as tu
from numbax._src.core import ShapedArray, get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad


class _Spec(NamedTuple):
    """What a VJP knows besides its residuals (its pytree structure)."""
    in_tree: tu.PyTreeDef
    out_tree: tu.PyTreeDef
    in_avals: tuple[ShapedArray, ...]
    out_avals: tuple[ShapedArray, ...]
    aux_avals: tuple[ShapedArray, ...]  # has_aux outputs: their cotangents are zero
    # for each residual, the flat index of the primal argument it is (None: computed in f)
    res_primal: tuple[int | None, ...] = ()


@dataclasses.dataclass(frozen=True)
class NotNeeded:
    """args_res's entry for an argument the backward pass does not need (JAX's NotNeeded)."""


tu.register_pytree_node(NotNeeded, lambda _: ((), None), lambda _a, _c: NotNeeded())


# jax.ad: what `f_vjp.with_refs(...)` takes per argument of f, and what it returns there
@dataclasses.dataclass(frozen=True)
class GradValue:
    """with_refs marker: compute this argument's cotangent and return it (the default)."""


@dataclasses.dataclass(frozen=True)
class DontWant:
    """with_refs marker: this argument's cotangent is not wanted (DidntWant() comes back)."""


@dataclasses.dataclass(frozen=True)
class GradRef:
    """with_refs result for an argument whose cotangent was added into a Ref."""


@dataclasses.dataclass(frozen=True)
class DidntWant:
    """with_refs result for an argument marked DontWant()."""


# as in JAX, the results are empty pytree nodes and the markers leaves
tu.register_pytree_node(GradRef, lambda _: ((), None), lambda _a, _c: GradRef())
tu.register_pytree_node(DidntWant, lambda _: ((), None), lambda _a, _c: DidntWant())


def _tuptree(treedef: tu.PyTreeDef, leaves: Any) -> Any:
    """The values of `leaves` arranged as treedef, every container a tuple (JAX's tuptree)."""
    if tu.treedef_is_leaf(treedef):
        return next(leaves)
    return tuple(_tuptree(c, leaves) for c in tu.treedef_children(treedef))


class VJP:
    """f_vjp of `primal_out, f_vjp = vjp(f, *primals)`: f_vjp(ct) is the tuple of cotangents
    of the primals for the output cotangent `ct` (structured like f's output)."""

    __slots__ = ("pullback", "spec")

    def __init__(self, pullback: Any, spec: _Spec) -> None:
        self.pullback, self.spec = pullback, spec

    @property
    def args_res(self) -> list:
        """Per argument of f (containers as tuples), the argument's values that the backward
        pass saves, NotNeeded() for those it does not need (as JAX's VJP.args_res)."""
        saved = {i: r for i, r in zip(self.spec.res_primal, self._residuals()) if i is not None}
        leaves = iter([saved.get(i, NotNeeded()) for i in range(self.spec.in_tree.num_leaves)])
        return [_tuptree(c, leaves) for c in tu.treedef_children(self.spec.in_tree)]

    @property
    def opaque_residuals(self) -> list:
        """The saved values that f computed (not arguments), as JAX's VJP.opaque_residuals."""
        res_primal = self.spec.res_primal or (None,) * len(self._residuals())
        return [r for i, r in zip(res_primal, self._residuals()) if i is None]

    def _residuals(self) -> list:
        return list(self.pullback.consts) if isinstance(self.pullback, ad.Pullback) else []

    def __call__(self, ct: Any) -> tuple:
        from numbax._src.api import _instantiate, _wrap_outputs  # api sits above

        spec = self.spec
        cts_flat, ct_tree = tu.tree_flatten(ct)
        if ct_tree != spec.out_tree:
            raise NumbaxValueError(
                f"vjp: the cotangent has structure {ct_tree}, expected the output's structure "
                f"{spec.out_tree}.")
        for i, (c, a) in enumerate(zip(cts_flat, spec.out_avals, strict=True)):
            if get_aval(c).shape != a.shape:
                raise NumbaxValueError(
                    f"vjp: cotangent leaf {i} has shape {get_aval(c).shape}, expected the "
                    f"output's shape {a.shape}.")
        aux_cts = [ad.Zero(ad.tangent_aval(a)) for a in spec.aux_avals]
        cts_in = _instantiate(self.pullback(*cts_flat, *aux_cts), list(spec.in_avals))
        return tu.tree_unflatten(spec.in_tree, _wrap_outputs(cts_in))

    def with_refs(self, *maybe_ct_refs: Any) -> Any:
        """This VJP as a function of the output cotangent that, per argument of f, returns
        its cotangent (GradValue()), adds it into a Ref and returns GradRef() (a Ref), or
        skips it and returns DidntWant() (DontWant()), as JAX's VJP.with_refs.

        >>> import numbax, numbax.numpy as jnp
        >>> _, f_vjp = numbax.vjp(lambda x, y: x * y, 2.0, 3.0)
        >>> f_vjp.with_refs(GradValue(), DontWant())(1.0)
        (Array(3., dtype=float64, weak_type=True), DidntWant())
        """
        from numbax._src.refs import Ref, addupdate  # refs sits above (it traces)

        markers, tree = tu.tree_flatten(maybe_ct_refs, is_leaf=lambda m: isinstance(m, Ref))
        if not maybe_ct_refs:
            markers, tree = [GradValue()] * self.spec.in_tree.num_leaves, self.spec.in_tree
        if tree != self.spec.in_tree or len(markers) != self.spec.in_tree.num_leaves:
            raise NumbaxValueError(
                f"VJP.with_refs: maybe_ct_refs has structure {tree}, expected the arguments' "
                f"structure {self.spec.in_tree}. Pass one GradValue(), DontWant() or Ref per "
                "argument leaf.")
        for i, m in enumerate(markers):
            if not isinstance(m, (GradValue, DontWant, Ref)):
                raise NumbaxTypeError(
                    f"VJP.with_refs: maybe_ct_refs leaf {i} is a {type(m).__name__}, expected "
                    "GradValue(), DontWant() or a Ref.")

        def pullback(ct: Any) -> Any:
            cts = tu.tree_leaves(self(ct))
            out = []
            for m, c in zip(markers, cts, strict=True):
                if isinstance(m, Ref):
                    addupdate(m, None, c)
                    out.append(GradRef())
                else:
                    out.append(DidntWant() if isinstance(m, DontWant) else c)
            return tu.tree_unflatten(self.spec.in_tree, out)

        return pullback


def _flatten(f: VJP) -> tuple[list, tuple]:
    p = f.pullback
    if isinstance(p, ad.Pullback):
        return p.consts, ((p.jaxpr, p.in_avals, p.differentiable), f.spec)
    return [], (p, f.spec)  # a pullback a hook wrapped (inside a shard_map body): no leaves


def _unflatten(aux: tuple, residuals: list) -> VJP:
    rebuild, spec = aux
    if isinstance(rebuild, tuple):
        jaxpr, in_avals, differentiable = rebuild
        return VJP(ad.Pullback(jaxpr, residuals, in_avals, differentiable), spec)
    return VJP(rebuild, spec)


tu.register_pytree_node(VJP, _flatten, _unflatten)
