"""jax.export without serialization: a jitted function traced at given argument types into an
`Exported`, whose `call` runs (and differentiates, vmaps and jits) as the function does at
those types.

JAX's Exported holds StableHLO and serializes it; numbax's holds the traced jaxpr, and has no
`serialize`: a portable format of jaxprs that is data only (unpickling bytes from elsewhere
would run their code) is not written yet (docs/sharp_bits.md).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import partial_eval as pe
from numbax._src.jit import JitWrapped, _lower_aval, jit

PLATFORMS = ("cpu", "cuda")  # where numbax runs an Exported (JAX's names)


class Exported:
    """A function traced at fixed argument types (jax.export.Exported): `call` runs it."""

    def __init__(self, fun_name: str, in_tree, in_avals: tuple, out_tree, out_avals: tuple,
                 platforms: tuple, closed: core.ClosedJaxpr) -> None:
        self.fun_name = fun_name
        self.in_tree = in_tree
        self.in_avals = in_avals
        self.out_tree = out_tree
        self.out_avals = out_avals
        self.platforms = platforms
        self.nr_devices = 1
        self._closed = closed
        self._run = jit(lambda *leaves: core.eval_jaxpr(closed.jaxpr, closed.consts, *leaves))

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """The function at the exported types; args and kwargs must have the exported tree
        and each leaf the exported shape and dtype. Composes with jit, grad and vmap."""
        leaves, tree = tu.tree_flatten((args, kwargs))
        if tree != self.in_tree:
            raise NumbaxValueError(
                f"Exported {self.fun_name}: called with arguments of structure {tree}, but it "
                f"was exported for {self.in_tree}. Pass the arguments as at export time.")
        for i, (x, want) in enumerate(zip(leaves, self.in_avals, strict=True)):
            got = core.get_aval(x)
            if got.shape != want.shape or got.dtype != want.dtype:
                raise NumbaxValueError(
                    f"Exported {self.fun_name}: argument leaf {i} is {got.str_short()}, but "
                    f"the function was exported for {want.str_short()}. Export it again for "
                    "these types.")
        return tu.tree_unflatten(self.out_tree, self._run(*leaves))

    def __repr__(self) -> str:
        ins = ", ".join(str(a) for a in self.in_avals)
        outs = ", ".join(str(a) for a in self.out_avals)
        return f"Exported({self.fun_name}: ({ins}) -> ({outs}), platforms={self.platforms})"


def export(fun_jit: Callable, *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[Any] = ()) -> Callable[..., Exported]:
    """jax.export.export: `export(jax.jit(f))(*arg_specs, **kwarg_specs)` traces f at the
    specs (ShapeDtypeStructs or arrays; static arguments as values) into an Exported.

    >>> import numbax, numpy as np
    >>> e = export(numbax.jit(lambda x: 2 * x))(numbax.ShapeDtypeStruct((3,), np.float32))
    >>> [str(a) for a in e.out_avals], e.call(np.ones(3, np.float32)).tolist()
    (['float32[3]'], [2.0, 2.0, 2.0])
    """
    if not isinstance(fun_jit, JitWrapped):
        raise NumbaxTypeError(
            f"Function to be exported must be the result of `jit` but is: {fun_jit!r}. Wrap "
            "it in numbax.jit first.")
    if isinstance(platforms, str):
        platforms = (platforms,)
    chosen = tuple(p.lower() for p in (platforms or ("cpu",)))
    unknown = [p for p in chosen if p not in PLATFORMS]
    if unknown:
        raise NumbaxValueError(f"export: platforms has {unknown[0]!r}; numbax runs exported "
                               f"functions on {', '.join(PLATFORMS)}.")
    del disabled_checks  # no lowering checks to disable: nothing is lowered for a platform

    def do_export(*args_specs: Any, **kwargs_specs: Any) -> Exported:
        dyn_args, dyn_kwargs, statics = fun_jit._split(args_specs, kwargs_specs)
        leaves, in_tree = tu.tree_flatten((dyn_args, dyn_kwargs))
        avals = [_lower_aval(x, i, fun_jit._name) for i, x in enumerate(leaves)]
        bound = fun_jit._bound(statics)
        store = {}

        def flat_fun(*xs):
            a, kw = tu.tree_unflatten(in_tree, xs)
            out_flat, store["tree"] = tu.tree_flatten(bound(*a, **kw))
            return out_flat

        jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, avals)
        closed = core.ClosedJaxpr(jaxpr, consts)
        return Exported(fun_jit._name, in_tree, tuple(avals), store["tree"],
                        tuple(v.aval for v in jaxpr.outvars), chosen, closed)

    return do_export
