"""Eager calls of composite library functions (samplers, nn activations) run compiled when
they are large, as JAX's jit-decorated library functions always do.

Run op by op, a sampler is dozens of numpy passes with ~10-50 us of dispatch each:
`random.normal(key, (10**6,))` took 0.47 s eagerly against 3 ms compiled. JAX jits these
functions at their definition. numbax's first compile of a new structure costs seconds where
XLA's costs ~0.1 s (disk-cached after that: ~0.5 s to load in a new process), so a call runs
compiled only when it works on COMPILE_AT_ELEMENTS elements or more (the largest shape argument
or array argument), where one compiled call saves more than loading costs. The choice depends
only on the call's signature, never on how often it was made, so the same call always gives
the same bits (compiled transcendental functions may differ from numpy's in the last ulp:
docs/sharp_bits.md). A smaller call runs op by op the first time its signature is seen and
as a straight-line numpy program after that (eager_programs.py: the op-by-op call's bits at a
fraction of its dispatch); `compile_large=False` (jnp's reductions) keeps large calls op by op.

Arguments that are arrays (numpy, Array, typed keys and other pytrees of arrays) are traced;
everything else (shapes, dtypes, axes, flags, Python scalars) is static. Under a trace (jit,
grad, vmap, ...) the function is simply traced inline, and with `jax_disable_jit` it always
runs eagerly.
"""
from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.array import Array
from numbax._src.config import config

COMPILE_AT_ELEMENTS = 1 << 16  # eager calls this large run compiled

# `jit`, installed by jit.py when it is imported (library modules sit below the transforms, and
# the compiler's lowerings import library modules, so importing jit here would be a cycle).
_jit: list[Callable] = []
# eager_programs.ProgramCache, installed by dispatch.py (it evaluates jaxprs through host_eval,
# which imports lax, whose modules use this decorator)
_program_cache: list[Callable] = []


def install_jit(jit: Callable) -> None:
    _jit[:] = [jit]


def install_programs(program_cache: Callable) -> None:
    _program_cache[:] = [program_cache]


def _is_array_leaf(x: Any) -> bool:
    """numpy arrays and scalars, Arrays, tracers; not Python scalars (those stay static)."""
    return core.is_array_like(x) and not isinstance(x, (bool, int, float, complex))


# the arguments' common types, answered without the general checks
_ARRAYS = (Array, np.ndarray)
_SCALARS = (int, float, bool, str, type(None))


def _is_traced(x: Any) -> bool:
    """Arrays and registered pytrees holding arrays (typed keys) are traced arguments."""
    kind = type(x)
    if kind in _ARRAYS:
        return True
    if kind in _SCALARS:
        return False
    if _is_array_leaf(x):
        return True
    if isinstance(x, (tuple, list, dict)) or x is None:
        return False  # containers of statics (shapes) stay static; arrays in them are rare
    leaves = tu.tree_leaves(x)
    return bool(leaves) and leaves != [x] and all(_is_array_leaf(v) for v in leaves)


def _types(x: Any) -> Any:
    """The type of a static value, element by element in tuples."""
    return tuple(map(_types, x)) if type(x) is tuple else type(x)


def _holds_tracer(x: Any) -> bool:
    if type(x) in _ARRAYS:  # (the common leaves, without flattening)
        return False
    return any(isinstance(v, core.Tracer) for v in tu.tree_leaves(x))


def _static(x: Any) -> Any:
    """A hashable form of a static argument (lists become tuples), or raise TypeError."""
    if type(x) in _SCALARS:
        return x
    if isinstance(x, list):
        x = tuple(_static(v) for v in x)
    elif isinstance(x, tuple):
        x = tuple(_static(v) for v in x)
    hash(x)
    return x


def _elements(x: Any) -> int:
    if type(x) in _SCALARS:
        return 1
    if isinstance(x, tuple) and all(isinstance(d, (int, np.integer)) for d in x):
        return math.prod(int(d) for d in x)  # a shape argument
    size = getattr(x, "size", None)
    return int(size) if isinstance(size, (int, np.integer)) else 1


def compiled_when_eager(fun: Callable | None = None, *, compile_large: bool = True
                        ) -> Callable:
    """`fun`, run through an internal per-signature `jit` when an eager call is large (see the
    module docstring), as a straight-line numpy program when it is small and its signature was
    seen before (eager_programs.py); traced inline under transforms. `compile_large=False`:
    large calls run op by op (numpy's passes over large operands are what a compiled call
    would run, without its first compile)."""
    if fun is None:
        return functools.partial(compiled_when_eager, compile_large=compile_large)
    params = inspect.signature(fun).parameters
    names = [n for n, p in params.items()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params.values()):
        raise TypeError(f"compiled_when_eager: {fun.__name__} takes *args/**kwargs")
    jitted: dict[tuple, Callable] = {}
    programs: list = []  # its eager_programs.ProgramCache, made at the first small call
    positional = [n for n, p in params.items() if p.kind is p.POSITIONAL_ONLY]

    def call_named(named: dict) -> Any:
        """fun of arguments by name (its positional-only ones passed by position)."""
        named = dict(named)
        return fun(*[named.pop(n) for n in positional if n in named], **named)

    def compiled(traced_names: tuple) -> Callable:
        """One jit per set of traced arguments; the static values are its static argument,
        so its executable LRU bounds what is kept."""
        f = jitted.get(traced_names)
        if f is None:
            def bound(static_items, *traced):
                return call_named({**{name: value for name, value, _ in static_items},
                                   **dict(zip(traced_names, traced, strict=True))})

            bound.__name__ = bound.__qualname__ = fun.__name__
            f = jitted.setdefault(traced_names, _jit[0](bound, static_argnums=0))
        return f

    @functools.wraps(fun)
    def call(*args, **kwargs):
        if (config.jax_disable_jit or not _jit or core._state.dynamic_trace is not None
                or core.trace_stack_depth() > 1 or len(args) > len(names)):
            return fun(*args, **kwargs)
        given = {**dict(zip(names, args)), **kwargs}
        traced, static = {}, {}
        try:
            for name, value in given.items():
                if _is_traced(value):
                    if _holds_tracer(value):
                        return fun(*args, **kwargs)  # under a transform: trace inline
                    traced[name] = value
                else:
                    static[name] = _static(value)
        except TypeError:  # an unhashable static value: stay eager
            return fun(*args, **kwargs)
        work = max([_elements(v) for v in (*static.values(), *traced.values())], default=1)
        if work >= COMPILE_AT_ELEMENTS and not compile_large:
            return fun(*args, **kwargs)
        # (name, value, its types): 1 and 1.0 are equal and hash alike, but clip(ints, 0, 1)
        # stays integer where clip(ints, 0.0, 1.0) becomes float
        static_items = tuple(sorted((name, value, _types(value))
                                    for name, value in static.items()))
        if work < COMPILE_AT_ELEMENTS:
            if _program_cache:
                if not programs:
                    programs.append(_program_cache[0](call_named))
                done, out = programs[0].call(static_items, traced)
                if done:
                    return out
            return fun(*args, **kwargs)
        return compiled(tuple(traced))(static_items, *traced.values())

    return call
