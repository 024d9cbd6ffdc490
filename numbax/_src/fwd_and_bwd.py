"""jax.fwd_and_bwd (separately jittable forward and backward passes of a function, the backward
one compiled once and reused) and jax.live_arrays."""
from __future__ import annotations

import gc
import operator
from collections.abc import Callable, Sequence
from typing import Any

from numbax._src import tree_util as tu
from numbax._src.array import Array, GpuArray
from numbax._src.core import Jaxpr, get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad
from numbax._src.jit import jit


class _Backward:
    """The backward pass of one forward call: a pytree whose leaves are the residuals (so it can
    leave a jit) and whose structure holds the linear jaxpr; calling it on an output cotangent
    gives the input cotangents."""

    def __init__(self, jaxpr: Jaxpr, residuals: list, in_avals: list, diff: list,
                 in_tree: Any, out_tree: Any) -> None:
        self.jaxpr, self.residuals, self.in_avals = jaxpr, residuals, in_avals
        self.diff, self.in_tree, self.out_tree = diff, in_tree, out_tree

    def __call__(self, out_ct: Any) -> Any:
        cts_flat, tree = tu.tree_flatten(out_ct)
        if tree != self.out_tree:
            raise NumbaxValueError(
                f"fwd_and_bwd: the cotangent has structure {tree}, expected the function's "
                f"output structure {self.out_tree}.")
        undefined = [ad.UndefinedPrimal(v.aval) for v in self.jaxpr.invars]
        cts_in = iter(ad.backward_pass(self.jaxpr, self.residuals, undefined, cts_flat))
        out = [ad.instantiate_zeros(next(cts_in) if d else ad.Zero(ad.tangent_aval(a)))
               for a, d in zip(self.in_avals, self.diff, strict=True)]
        return tu.tree_unflatten(self.in_tree, out)


tu.register_pytree_node(
    _Backward,
    lambda b: (b.residuals, (b.jaxpr, tuple(b.in_avals), tuple(b.diff), b.in_tree,
                             b.out_tree)),
    lambda aux, leaves: _Backward(aux[0], list(leaves), list(aux[1]), list(aux[2]),
                                  *aux[3:]))


def fwd_and_bwd(fun: Callable, argnums: int | Sequence[int], has_aux: bool = False,
                jitted: bool = True) -> tuple[Callable, Callable]:
    """(fwd, bwd): `fwd(*args)` is `(fun(*args), residuals)` (plus aux with has_aux), like
    `vjp`, and `bwd(residuals, out_cotangent)` gives the cotangents of the arguments in
    `argnums` (one, or a tuple for a sequence). Both are jitted by default, so the backward
    pass compiles once and is reused across forward calls.

    >>> import numbax, numbax.numpy as jnp
    >>> fwd, bwd = fwd_and_bwd(lambda x, w: x @ w, argnums=(0, 1))
    >>> y, res = fwd(jnp.ones((2, 2)), jnp.ones((2, 2)))
    >>> [g.tolist() for g in bwd(res, jnp.ones((2, 2)))]
    [[[2.0, 2.0], [2.0, 2.0]], [[2.0, 2.0], [2.0, 2.0]]]
    """
    if not callable(fun):
        raise NumbaxTypeError(f"fwd_and_bwd: fun is a {type(fun).__name__}, expected a "
                              "callable.")
    single = isinstance(argnums, int)
    try:
        nums = (operator.index(argnums),) if single else tuple(map(operator.index, argnums))
    except TypeError:
        raise NumbaxTypeError(f"fwd_and_bwd: argnums is {argnums!r}, expected an int or a "
                              "sequence of ints.") from None

    def fwd(*args: Any) -> tuple:
        for i in nums:
            if not -len(args) <= i < len(args):
                raise NumbaxValueError(f"fwd_and_bwd: argnums {argnums} refers to argument "
                                       f"{i}, but fwd was called with {len(args)} arguments.")
        pos = [i % len(args) for i in nums]
        diff_args = tuple(args[i] for i in pos)
        flat, in_tree = tu.tree_flatten(diff_args)
        store: dict[str, Any] = {}

        def flat_fun(*xs):
            full = list(args)
            for i, a in zip(pos, tu.tree_unflatten(in_tree, xs), strict=True):
                full[i] = a
            out = fun(*full)
            if has_aux:
                out, store["aux"] = out
            out_flat, store["out_tree"] = tu.tree_flatten(out)
            return out_flat

        outs, jaxpr, residuals, diff = ad.linearize_flat(flat_fun, flat)
        bwd_tree = in_tree if not single else tu.tree_structure(diff_args[0])
        backward = _Backward(jaxpr, list(residuals), [get_aval(x) for x in flat], list(diff),
                             in_tree, store["out_tree"])
        if single:
            backward = _Single(backward, bwd_tree)
        y = tu.tree_unflatten(store["out_tree"], outs)
        return (y, backward, store["aux"]) if has_aux else (y, backward)

    def bwd(residuals: Any, out_ct: Any) -> Any:
        if not isinstance(residuals, (_Backward, _Single)):
            raise NumbaxTypeError(f"fwd_and_bwd: residuals is a {type(residuals).__name__}, "
                                  "expected the second output of fwd.")
        return residuals(out_ct)

    return (jit(fwd), jit(bwd)) if jitted else (fwd, bwd)


class _Single:
    """A _Backward for an int argnums: returns the one cotangent, not a tuple."""

    def __init__(self, backward: _Backward, tree: Any) -> None:
        self.backward, self.tree = backward, tree

    def __call__(self, out_ct: Any) -> Any:
        return self.backward(out_ct)[0]


tu.register_pytree_node(_Single, lambda s: ((s.backward,), s.tree),
                        lambda tree, kids: _Single(kids[0], tree))


def live_arrays(platform: str | None = None) -> list[Array]:
    """Every numbax Array alive in this process (on `platform`: 'cpu', or 'gpu'/'cuda').

    >>> import numbax.numpy as jnp
    >>> x = jnp.arange(3)
    >>> any(a is x for a in live_arrays())
    True
    """
    if platform not in (None, "cpu", "gpu", "cuda"):
        raise NumbaxValueError(f"live_arrays: platform is {platform!r}, expected None, 'cpu' "
                               "or 'gpu'.")
    # type(), not isinstance: isinstance of a dead weak proxy among the objects would raise
    found = [o for o in gc.get_objects() if issubclass(type(o), Array)]
    if platform is None:
        return found
    want_gpu = platform in ("gpu", "cuda")
    return [a for a in found if isinstance(a, GpuArray) == want_gpu]


__all__ = ["fwd_and_bwd", "live_arrays"]
