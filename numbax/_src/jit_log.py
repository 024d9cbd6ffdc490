"""What jit reports about its compiles: JAX's `jax_log_compiles` (each trace, lowering and Numba
compile, with its cause and time) and `jax_explain_cache_misses` (why a call traced again),
through the logging module under JAX's logger names, with numbax's package prefix."""
from __future__ import annotations

import inspect
import logging
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from numba.core import event

from numbax._src import tree_util as tu
from numbax._src.compiler import cache
from numbax._src.config import TRACE_CONTEXT, config

# JAX's loggers: dispatch times each stage, pxla announces the compile, partial_eval explains
dispatch_logger = logging.getLogger("numbax._src.dispatch")
pxla_logger = logging.getLogger("numbax._src.interpreters.pxla")
explain_logger = logging.getLogger("numbax._src.interpreters.partial_eval")

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _level() -> int:
    """WARNING with jax_log_compiles on (JAX's choice, so the default logging setup shows it),
    else DEBUG."""
    return logging.WARNING if config.jax_log_compiles else logging.DEBUG


def structure_of(key: tuple) -> tuple:
    """A jit cache key with the array sizes left out: one per program structure, as the
    size-generic kernels see it (a new shape of a known structure compiles no kernel)."""
    in_tree, avals, statics, context, device = key
    return in_tree, tuple((len(s), d, w) for s, d, w in avals), statics, context, device


class CompileLog:
    """One cache miss of a jitted function, from its trace to the first run of what compiled.

    `cause` is "new function" (its first compile), "new structure" (pytree, dtypes, ranks,
    statics, config or device differ from every earlier call) or "new shape" (only sizes
    differ: the kernels already exist)."""

    def __init__(self, name: str, cause: str, avals: list) -> None:
        self.name, self.cause, self.avals = name, cause, avals
        self.start = time.perf_counter()

    def traced(self) -> None:
        _log(dispatch_logger, "Finished tracing %s for jit in %.9f sec", self.name,
             time.perf_counter() - self.start)
        self.start = time.perf_counter()
        _log(pxla_logger, "Compiling jit(%s) with global shapes and types (%s). Cause: %s.",
             self.name, ", ".join(a.str_short() for a in self.avals), self.cause)

    def lowered(self) -> None:
        _log(dispatch_logger, "Finished jaxpr to Numba source conversion jit(%s) in %.9f sec",
             self.name, time.perf_counter() - self.start)

    def first_run(self, run: Callable[[], Any]) -> Any:
        """run(), reporting the Numba compiles and disk-cache loads it set off (kernels compile
        at their first call)."""
        if not dispatch_logger.isEnabledFor(_level()):
            return run()
        before = cache.numba_compile_stats()
        timer = _NumbaTimer()
        event.register("numba:compile", timer)
        try:
            out = run()
        finally:
            event.unregister("numba:compile", timer)
        after = cache.numba_compile_stats()
        compiled = after["cache_misses"] - before["cache_misses"]
        loaded = after["cache_hits"] - before["cache_hits"]
        _log(dispatch_logger, "Finished Numba compilation of jit(%s) in %.9f sec: %d kernels "
             "compiled, %d loaded from the disk cache", self.name, timer.seconds, compiled,
             loaded)
        return out


class _NumbaTimer(event.Listener):
    """Seconds spent in outermost Numba compiles (nested ones are part of their parent)."""

    def __init__(self) -> None:
        self.depth, self.seconds, self.t0 = 0, 0.0, 0.0

    def on_start(self, ev: event.Event) -> None:
        if self.depth == 0:
            self.t0 = time.perf_counter()
        self.depth += 1

    def on_end(self, ev: event.Event) -> None:
        self.depth -= 1
        if self.depth == 0:
            self.seconds += time.perf_counter() - self.t0


def _log(logger: logging.Logger, msg: str, *args: Any) -> None:
    level = _level()
    if logger.isEnabledFor(level):
        logger.log(level, msg, *args)


def start(fun: Callable, key: tuple, seen: Any, avals: list, call: tuple) -> CompileLog | None:
    """The log of a cache miss of jit(fun) on `key` (None when nothing would be printed),
    after explaining the miss when jax_explain_cache_misses is on. `seen` holds the keys of
    the executables jit keeps, `call` = (args, kwargs, statics) as jit split them."""
    if config.jax_explain_cache_misses and explain_logger.isEnabledFor(logging.WARNING):
        explain_logger.warning("%s", explain(fun, key, list(seen), call))
    if not (dispatch_logger.isEnabledFor(_level()) or pxla_logger.isEnabledFor(_level())):
        return None
    structure = structure_of(key)
    cause = "new function" if not seen else (
        "new shape" if any(structure_of(k) == structure for k in seen) else "new structure")
    return CompileLog(getattr(fun, "__name__", "<function>"), cause, avals)


# ----------------------------------------------------------------------------- explanations


def explain(fun: Callable, key: tuple, seen: list[tuple], call: tuple) -> str:
    """JAX's TRACING CACHE MISS message: where the call came from and, against the closest
    key jit still holds, which arguments' pytree, types or static values differ, or which
    configuration or device."""
    name = getattr(fun, "__name__", "<function>")
    lines = [f"TRACING CACHE MISS at {_call_site()}:"]
    if not seen:
        lines += ["  never seen function:", f"    {name} id={id(fun)} defined at {_def_site(fun)}"]
        return "\n".join(lines)
    lines += [f"  for {name} defined at {_def_site(fun)}",
              "  all previously seen cache keys differ. For the closest previous key:"]
    names = _leaf_names(fun, call)
    params = _params(fun)
    closest = min(seen, key=lambda k: len(_differences(k, key, names, params)))
    lines += _differences(closest, key, names, params)
    return "\n".join(lines)


def _differences(before: tuple, now: tuple, names: list[str], params: list[str]) -> list[str]:
    tree0, avals0, statics0, ctx0, dev0 = before
    tree1, avals1, statics1, ctx1, dev1 = now
    out: list[str] = []
    if tree0 != tree1:
        out += ["  different input pytree:", f"  * now {tree1} and before {tree0}"]
    elif avals0 != avals1:
        out.append("  different input types:")
        for where, a, b in zip(names, avals1, avals0, strict=True):
            if a != b:
                out.append(f"  * at {where}, now {_aval_text(a)} and before {_aval_text(b)}")
    if statics0 != statics1:
        out.append("  different static arguments:")
        old, new = dict(statics0), dict(statics1)
        for k in sorted({*old, *new}, key=str):
            if old.get(k, _NONE) != new.get(k, _NONE):
                where = params[k] if isinstance(k, int) and k < len(params) else k
                out.append(f"  * at {where}, now {new.get(k, _NONE)!r} and before "
                           f"{old.get(k, _NONE)!r}")
    if ctx0 != ctx1:
        out.append("  different configuration:")
        out += [f"  * {n}, now {a!r} and before {b!r}"
                for n, a, b in zip(TRACE_CONTEXT, ctx1, ctx0, strict=True) if a != b]
    if dev0 != dev1:
        out += ["  different device:", f"  * now {dev1} and before {dev0}"]
    return out


class _Missing:
    def __repr__(self) -> str:
        return "(not passed)"


_NONE = _Missing()


def _aval_text(sig: tuple) -> str:
    shape, dtype, weak = sig
    from numbax._src import dtypes

    text = f"{dtypes.short_name(dtype)}[{','.join(str(d) for d in shape)}]"
    return f"{text}{{weak_type=True}}" if weak else text


def _params(fun: Callable) -> list[str]:
    """fun's parameter names (positional ones first), or [] when it has no signature."""
    try:
        return list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        return []


def _leaf_names(fun: Callable, call: tuple) -> list[str]:
    """Each argument leaf as a path from the parameter it was passed as (`x`, `params[0][1]`),
    in the order jit flattens (args, kwargs)."""
    args, kwargs, statics = call
    static_pos = {k for k, _ in statics if isinstance(k, int)}
    params = _params(fun)
    positions = [i for i in range(len(args) + len(static_pos)) if i not in static_pos]
    names = []
    for path, _ in tu.tree_flatten_with_path((args, kwargs))[0]:
        if path[0].idx == 0:
            pos = positions[path[1].idx]
            base = params[pos] if pos < len(params) else f"args[{pos}]"
        else:
            base = path[1].key
        names.append(base + tu.keystr(path[2:]))
    return names


def _call_site() -> str:
    """file:line (function) of the innermost frame outside numbax."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} ({frame.f_code.co_name})"


def _def_site(fun: Callable) -> str:
    code = getattr(inspect.unwrap(fun), "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else "<unknown>"
