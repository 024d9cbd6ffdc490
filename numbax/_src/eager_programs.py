"""Small eager calls of composite library functions, run as straight-line numpy programs.

JAX's library functions (the samplers, `nn` functions, jnp's mean/var/std/clip) are
jit-decorated, so an eager call of a signature seen before is one cached dispatch (~6 us).
numbax compiles only large eager calls (`eager_compile.compiled_when_eager`: a Numba compile
costs seconds) and ran the others op by op, each primitive ~5-8 us with the layers in front of
it: `jnp.mean(m, axis=0)` of an 8 x 8 matrix 46 us, `nn.softmax` of a vector ~70.

Here the second eager call of a signature (the static arguments' values, the traced arguments'
structure, shapes, dtypes and weak types, the trace context) traces the function once into a
jaxpr and runs it, then and after, through `host_eval.evaluator`: each equation's numpy impl
called directly with the operands and result dtypes `dispatch.apply_primitive` gives it, so the
bits are those of the op-by-op call. A first call runs op by op (a one-off call pays no trace).
A signature stays op by op where the trace fails (a value-dependent Python branch), where the
program holds a loop, an effect, a bfloat16 value (eager products of bfloat16 run on AMX tiles,
which the evaluator does not) or an extended dtype (typed keys), where an output is not an array
of the trace, and where an argument is not a host value (GPU or sharded arrays).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import core, dtypes, eager_loops, host_eval
from numbax._src import tree_util as tu
from numbax._src.array import Array, unaliased
from numbax._src.compiler import inline
from numbax._src.config import config
from numbax._src.interpreters import partial_eval as pe

PROGRAMS_SIZE = 256  # signatures remembered per function (a program sweeping shapes: cleared)
_SEEN_ONCE = object()
_OP_BY_OP = object()


class _Program:
    """One signature's evaluator and how to hand back its outputs."""

    __slots__ = ("run", "out_avals", "out_tree")

    def __init__(self, run: Callable, out_avals: list, out_tree: Any | None) -> None:
        self.run, self.out_avals, self.out_tree = run, out_avals, out_tree


class ProgramCache:
    """The programs of one decorated function, by signature."""

    def __init__(self, call_named: Callable[[dict], Any]) -> None:
        self.call_named = call_named  # the function, of its arguments by name
        self.entries: dict[tuple, Any] = {}
        self.lock = threading.Lock()

    def call(self, static_items: tuple, traced: dict) -> tuple[bool, Any]:
        """(True, fun's result) where this signature runs as a program, else (False, None):
        the caller then runs fun op by op (always while NaN or inf checks are on: they
        look at each primitive's results). static_items: (name, value, its types) of the
        static arguments; traced: the array arguments by name."""
        if config.hot("jax_debug_nans") or config.hot("jax_debug_infs"):
            return False, None
        leaves = list(traced.values())
        tree = None  # (arrays only, the common case: no flattening)
        if not all(type(x) is Array or type(x) is np.ndarray for x in leaves):
            leaves, tree = tu.tree_flatten(leaves)
        signature = _signature(leaves)
        if signature is None:
            return False, None
        key = (static_items, tuple(traced), tree, signature, config.trace_context())
        entry = self.entries.get(key)
        if entry is None or entry is _SEEN_ONCE:
            with self.lock:
                if len(self.entries) >= PROGRAMS_SIZE:
                    self.entries.clear()
                if entry is None:
                    self.entries[key] = _SEEN_ONCE
                    return False, None
                entry = self.entries[key] = self._build(static_items, tuple(traced), tree,
                                                        leaves)
        if entry is _OP_BY_OP:
            return False, None
        outs = entry.run(*[core.to_numpy(x) for x in leaves])
        callers = [x for x in leaves if isinstance(x, np.ndarray)]  # results must not alias them
        arrays = [Array._from_numpy(unaliased(out, callers) if callers else out, aval.weak_type)
                  for out, aval in zip(outs, entry.out_avals, strict=True)]
        if entry.out_tree is None:
            return True, arrays[0]
        return True, tu.tree_unflatten(entry.out_tree, arrays)

    def _build(self, static_items: tuple, names: tuple, tree: Any, leaves: list) -> Any:
        out_tree: list = []

        def flat(*tracers: Any) -> list:
            values = list(tracers) if tree is None else tu.tree_unflatten(tree, list(tracers))
            out = self.call_named({**{name: value for name, value, _ in static_items},
                                   **dict(zip(names, values, strict=True))})
            out_leaves, treedef = tu.tree_flatten(out)
            if not all(isinstance(x, core.Tracer) for x in out_leaves):
                raise _NotAProgram  # (a Python value, not an array of the trace)
            out_tree.append(treedef)
            return out_leaves

        try:
            closed = pe.trace_to_closed_jaxpr(flat, [core.get_aval(x) for x in leaves])
        except Exception:  # noqa: BLE001 - the op-by-op call raises the function's own error
            return _OP_BY_OP
        # (a custom_jvp/vjp or checkpoint call evaluates its body through eval_jaxpr's binds)
        closed = core.ClosedJaxpr(inline.inline_calls(closed.jaxpr, expand=False), closed.consts)
        if not _evaluable(closed):
            return _OP_BY_OP
        run = host_eval.evaluator(closed, eager_loops.LOOPS)
        if run is None:
            return _OP_BY_OP
        single = tu.treedef_is_leaf(out_tree[0])  # (None: one array, handed back as it is)
        return _Program(run, [v.aval for v in closed.jaxpr.outvars],
                        None if single else out_tree[0])


class _NotAProgram(Exception):
    pass


def _signature(leaves: list) -> tuple | None:
    """The leaves' (shape, dtype, weak type), or None where one is not a host value."""
    signature = []
    for x in leaves:
        kind = type(x)
        if kind is Array:
            value = x._value
            signature.append((value.shape, value.dtype, x._weak_type))
        elif kind is np.ndarray or isinstance(x, np.generic):
            signature.append((np.shape(x), x.dtype, False))
        else:
            return None
    return tuple(signature)


def _evaluable(closed: core.ClosedJaxpr) -> bool:
    """No effects, bfloat16 values or extended dtypes in the program (see the docstring)."""
    jaxpr = closed.jaxpr
    if any(eqn.primitive in core.effectful_primitives for eqn in jaxpr.eqns):
        return False
    values = [*jaxpr.invars, *jaxpr.outvars,
              *(v for eqn in jaxpr.eqns for v in (*eqn.invars, *eqn.outvars))]
    return not any(dtypes.is_extended_dtype(v.aval.dtype) or v.aval.dtype == dtypes.bfloat16
                   for v in values)
