"""Where the user's code made each traced equation (file:line:column (function)), recorded
only while a tool asks for it (print_saved_residuals), so tracing pays nothing otherwise."""
from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_NUMBAX_DIR = str(Path(__file__).resolve().parents[1])


class _Recording(threading.local):
    table: dict[Any, str] | None = None
    inherited: str | None = None  # the source of the equation being re-evaluated
    offloaded: list | None = None  # residuals a checkpoint policy offloads (Offloadable)


_recording = _Recording()


def user_frame_summary() -> str:
    """The innermost frame outside numbax, as JAX summarizes source info: `file:line:col
    (function)`."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_NUMBAX_DIR):
        frame = frame.f_back
    if frame is None:
        return "unknown"
    code = frame.f_code
    positions = list(code.co_positions())
    line, _, col, _ = positions[frame.f_lasti // 2] if frame.f_lasti >= 0 else (
        frame.f_lineno, None, None, None)
    where = f"{code.co_filename}:{line if line is not None else frame.f_lineno}"
    if col is not None:
        where += f":{col}"
    return f"{where} ({code.co_qualname})"


def record(outvars: Any) -> None:
    """Notes the user's frame for each of these jaxpr variables, while recording is on."""
    table = _recording.table
    if table is not None:
        where = _recording.inherited or user_frame_summary()
        for v in outvars:
            table[v] = where


def eval_jaxpr(jaxpr: Any, consts: Any, *args: Any) -> list:
    """core.eval_jaxpr, where the equations it makes keep the source of the equation they
    replay (a transform re-evaluating a traced jaxpr: checkpoint's jvp and partial eval)."""
    from numbax._src import core  # core sits below; imported here to stay a leaf

    table = _recording.table
    if table is None:
        return core.eval_jaxpr(jaxpr, consts, *args)
    env: dict[Any, Any] = dict(zip(jaxpr.constvars, consts, strict=True))
    env.update(zip(jaxpr.invars, args, strict=True))
    read = lambda x: (core.literal_value(x.val, x.aval)  # noqa: E731
                      if isinstance(x, core.Literal) else env[x])
    for eqn in jaxpr.eqns:
        prev = _recording.inherited
        _recording.inherited = table.get(eqn.outvars[0]) if eqn.outvars else None
        try:
            outs = core.bind(eqn.primitive, *map(read, eqn.invars), **eqn.params)
        finally:
            _recording.inherited = prev
        env.update(zip(eqn.outvars, outs, strict=True))
    return [read(v) for v in jaxpr.outvars]


@contextlib.contextmanager
def recording() -> Iterator[dict[Any, str]]:
    """Records the source of every equation traced to a jaxpr inside the block."""
    prev = _recording.table, _recording.offloaded
    _recording.table, _recording.offloaded = {}, []
    try:
        yield _recording.table
    finally:
        _recording.table, _recording.offloaded = prev


def note_offloaded(values: list) -> None:
    """Notes residual values a checkpoint policy offloads, while recording is on."""
    if _recording.offloaded is not None:
        _recording.offloaded.extend(values)


def offloaded() -> list:
    """The values noted by note_offloaded inside the current recording."""
    return list(_recording.offloaded or [])
