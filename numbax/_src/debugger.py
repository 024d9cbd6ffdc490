"""jax.debug.breakpoint: an interactive debugger ("jdb", JAX's command-line debugger's
commands) over the user's stack frames, entered with concrete values at run time, also under
jit/vmap. The traced locals of each frame travel through a debug callback and come back as
the Arrays they hold when the program runs."""
from __future__ import annotations

import cmd
import dataclasses
import inspect
import pprint
import sys
import threading
import traceback
from pathlib import Path
from typing import IO, Any

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.callback_api import pure_callback
from numbax._src.custom_derivatives import stop_gradient
from numbax._src.debugging import debug_callback
from numbax._src.errors import NumbaxValueError

_NUMBAX_DIR = str(Path(__file__).resolve().parents[1])


@dataclasses.dataclass(frozen=True)
class DebuggerFrame:
    """One Python frame as the debugger shows it: its locals (traced ones made concrete) and
    enough source to list the lines around the current one."""

    filename: str
    locals: dict[str, Any]
    globals: dict[str, Any]
    code_context: Any
    source: list[str]
    lineno: int
    offset: int | None

    @classmethod
    def from_frameinfo(cls, frame_info: inspect.FrameInfo) -> DebuggerFrame:
        try:
            _, start = inspect.getsourcelines(frame_info.frame)
            source = inspect.getsource(frame_info.frame).split("\n")
            offset: int | None = frame_info.lineno - max(start, 1)
            if offset >= len(source):
                source, offset = [], None
        except (OSError, TypeError):
            source, offset = [], None
        return cls(frame_info.filename, dict(frame_info.frame.f_locals), {},
                   frame_info.code_context, source, frame_info.lineno, offset)


def _traced_leaves(frames: list[DebuggerFrame]):
    """(the tracers among the frames' locals, a function rebuilding the frames from their
    values): only traced values need to travel through the callback."""
    slots = []  # (frame index, local name, leaves, treedef, positions of traced leaves)
    traced = []
    for i, frame in enumerate(frames):
        for name, value in frame.locals.items():
            try:
                leaves, tree = tu.tree_flatten(value)
            except Exception:  # noqa: BLE001 - a local that is no pytree is shown as it is
                continue
            # live tracers only: a stale one (kept from an earlier trace) is shown as it is
            pos = [j for j, x in enumerate(leaves)
                   if isinstance(x, core.Tracer) and x._trace.main.active]
            if pos:
                slots.append((i, name, leaves, tree, pos))
                traced.extend(leaves[j] for j in pos)

    def rebuild(values: list[Any]) -> list[DebuggerFrame]:
        new_locals = [dict(f.locals) for f in frames]
        it = iter(values)
        for i, name, leaves, tree, pos in slots:
            leaves = list(leaves)
            for j in pos:
                leaves[j] = next(it)
            new_locals[i][name] = tu.tree_unflatten(tree, leaves)
        return [dataclasses.replace(f, locals=loc)
                for f, loc in zip(frames, new_locals, strict=True)]

    return traced, rebuild


class CliDebugger(cmd.Cmd):
    """A text debugger over captured frames: p/pp EXPR, u(p), d(own), l(ist), w(here),
    c(ontinue), q(uit); any other line is evaluated as an expression (JAX's jdb)."""

    prompt = "(jdb) "

    def __init__(self, frames: list[DebuggerFrame], thread_id: int | None,
                 stdin: IO[str] | None = None, stdout: IO[str] | None = None,
                 completekey: str = "tab") -> None:
        super().__init__(stdin=stdin, stdout=stdout, completekey=completekey)
        self.use_rawinput = stdin is None
        self.frames = frames
        self.frame_index = 0
        self.thread_id = thread_id
        self.intro = "Entering jdb:"

    def evaluate(self, expr: str) -> Any:
        frame = self.frames[self.frame_index]
        return eval(expr, {}, {**frame.globals, **frame.locals})  # noqa: S307 - a debugger

    def _show(self, fmt, expr: str) -> None:
        try:
            print(fmt(self.evaluate(expr)), file=self.stdout)
        except Exception:  # noqa: BLE001 - reported to the user, as pdb does
            msg = traceback.format_exception_only(*sys.exc_info()[:2])[-1].strip()
            print("***", msg, file=self.stdout)

    def default(self, line: str) -> None:
        self._show(repr, line)

    def do_p(self, arg: str) -> None:
        """p expression: evaluates and prints the value of an expression."""
        self._show(repr, arg)

    def do_pp(self, arg: str) -> None:
        """pp expression: evaluates and pretty-prints the value of an expression."""
        self._show(pprint.pformat, arg)

    def print_context(self, num_lines: int = 2) -> None:
        frame = self.frames[self.frame_index]
        lines = [f"> {frame.filename}({frame.lineno})"]
        if frame.offset is not None:
            for i, line in enumerate(frame.source):
                if frame.offset - 1 - num_lines <= i <= frame.offset + num_lines:
                    lines.append(f"->  {line}" if i == frame.offset else f"    {line}")
        print("\n".join(lines), file=self.stdout)

    def do_up(self, arg: str) -> None:
        """u(p): move up a stack frame."""
        if self.frame_index == len(self.frames) - 1:
            print("At topmost frame.", file=self.stdout)
        else:
            self.frame_index += 1
        self.print_context()

    def do_down(self, arg: str) -> None:
        """d(own): move down a stack frame."""
        if self.frame_index == 0:
            print("At bottommost frame.", file=self.stdout)
        else:
            self.frame_index -= 1
        self.print_context()

    def do_list(self, arg: str) -> None:
        """l(ist): list the source around the current line."""
        self.print_context(num_lines=5)

    def do_where(self, arg: str) -> None:
        """w(here): print the stack, most recent frame last."""
        lines = ["Traceback:"]
        for frame in self.frames[::-1]:
            lines.append(f'  File "{frame.filename}", line {frame.lineno}')
            lines.append("    <no source>" if frame.offset is None
                         else f"    {frame.source[frame.offset].strip()}")
        print("\n".join(lines), file=self.stdout)

    def do_continue(self, arg: str) -> bool:
        """c(ont(inue)): continue the program."""
        return True

    def do_quit(self, arg: str) -> None:
        """q(uit): quit the debugger; the program exits (as JAX's jdb)."""
        sys.exit(0)

    do_u, do_d, do_l, do_w, do_bt = do_up, do_down, do_list, do_where, do_where
    do_c = do_cont = do_continue
    do_q = do_EOF = do_exit = do_quit


_DEBUGGERS = {"cli": lambda frames, thread_id, **kw: CliDebugger(frames, thread_id,
                                                                  **kw).cmdloop()}
_lock = threading.Lock()


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,  # noqa: A001
               num_frames: int | None = None, ordered: bool = False, token: Any = None,
               **kwargs: Any) -> Any:
    """Enters the jdb debugger here, with the concrete values of the calling frames, when the
    program runs (at every call of a jitted function; once per example under vmap).

    Commands: `p expr`, `pp expr`, `u`/`d` (move between frames), `l` (list source), `w`
    (stack), `c` (continue), `q` (quit: exits the program); any other line is evaluated.

    Args:
      backend: the debugger; numbax has JAX's command-line one, "cli" (the default).
      filter_frames: hide numbax's own frames.
      num_frames: how many frames above this one to make available.
      ordered: accepted for JAX compatibility (numbax runs callbacks in program order).
      token: a pytree of arrays returned unchanged once the breakpoint ran; pass it on
        to the computation (the breakpoint is then dropped if the result is unused).
      **kwargs: passed to the debugger (`stdin=`, `stdout=` streams for the cli one).

    Returns:
      `token` when given, else None.
    """
    if backend is not None and backend not in _DEBUGGERS:
        raise NumbaxValueError(f"debug.breakpoint: backend is {backend!r}, expected one of "
                               f"{sorted(_DEBUGGERS)} (numbax has JAX's command-line "
                               "debugger only).")
    if token is not None and ordered:
        raise NumbaxValueError("`ordered` and `token` are mutually exclusive arguments.")
    infos = inspect.stack()[1:]
    if filter_frames:
        infos = [f for f in infos if not f.filename.startswith(_NUMBAX_DIR)]
    frames = [DebuggerFrame.from_frameinfo(f) for f in infos]
    if num_frames is not None:
        frames = frames[:num_frames]
    traced, rebuild = _traced_leaves(frames)
    debugger = _DEBUGGERS[backend or "cli"]

    def run(*values: Any) -> None:
        thread_id = (None if threading.current_thread() is threading.main_thread()
                     else threading.get_ident())
        with _lock:
            debugger(rebuild(list(values)), thread_id, **kwargs)

    if token is None:
        debug_callback(run, *traced, ordered=ordered)
        return None

    def run_then_pass(tok: Any, *values: Any) -> Any:
        run(*values)
        return tok

    token, traced = stop_gradient((token, traced))
    shapes = tu.tree_map(lambda x: core.get_aval(x), token)
    return pure_callback(run_then_pass, shapes, token, *traced, vmap_method="sequential")
