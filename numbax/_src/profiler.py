"""jax.profiler on numbax: traces of a program's annotated regions and jitted calls, written
where JAX writes its own (`<log_dir>/plugins/profile/<date>/<host>.trace.json.gz`, and
`perfetto_trace.json.gz` when asked), in the Chrome trace-event format that Perfetto
(ui.perfetto.dev), chrome://tracing and TensorBoard's trace viewer open.

There is no XLA here, so no device planes or per-op timelines: the events are the regions
user code marks (TraceAnnotation, StepTraceAnnotation, annotate_function) and each jitted
call, with the part that ran the compiled program (`<name>: run`) inside it; the rest of a
call is tracing, compiling or dispatch. While a trace runs, jitted calls take the dispatch
path that records them (config._fast_ctx is None), so a traced call costs a little more."""
from __future__ import annotations

import contextlib
import functools
import gzip
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from numbax._src.config import config
from numbax._src.errors import NumbaxTypeError

_lock = threading.Lock()
_session: dict[str, Any] = {}  # the running trace: its log_dir, options, start and events


def _now_us() -> float:
    return time.perf_counter_ns() / 1e3


def active() -> bool:
    """Whether a trace is being recorded."""
    return bool(_session)


def record(name: str, start_us: float, args: dict | None = None) -> None:
    """An event `name` from `start_us` (_now_us) until now, on this thread, if a trace runs."""
    end = _now_us()
    with _lock:
        if not _session or start_us < _session["start"]:
            return
        _session["events"].append({
            "ph": "X", "pid": os.getpid(), "tid": threading.get_ident(),
            "ts": start_us - _session["start"], "dur": end - start_us, "name": name,
            "args": {k: str(v) for k, v in (args or {}).items()}})


def start_trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False, profiler_options: Any = None) -> None:
    """Starts recording a trace, written to `log_dir` by stop_trace (JAX's
    jax.profiler.start_trace). `create_perfetto_trace` also writes perfetto_trace.json.gz;
    `create_perfetto_link` prints how to open it (no server is started). Only one trace may
    run at a time."""
    if not isinstance(log_dir, (str, os.PathLike)):
        raise NumbaxTypeError(f"profiler.start_trace: log_dir is {log_dir!r}; expected a "
                              "directory path (str or os.PathLike).")
    with _lock:
        if _session:
            raise RuntimeError("Profile has already been started. Only one profile may be run "
                               "at a time (call jax.profiler.stop_trace() first).")
        _session.update(log_dir=os.fspath(log_dir), events=[], start=_now_us(),
                        perfetto=bool(create_perfetto_trace or create_perfetto_link),
                        link=bool(create_perfetto_link))
    config._set_profiling(True)  # (jitted calls leave the unrecorded fast path)


def stop_trace() -> None:
    """Stops the trace and writes it (JAX's jax.profiler.stop_trace)."""
    with _lock:
        if not _session:
            raise RuntimeError("No profile started: call jax.profiler.start_trace(log_dir) "
                               "(or use `with jax.profiler.trace(log_dir):`) first.")
        session = dict(_session)
        _session.clear()
    config._set_profiling(False)
    folder = os.path.join(session["log_dir"], "plugins", "profile",
                          time.strftime("%Y_%m_%d_%H_%M_%S"))
    os.makedirs(folder, exist_ok=True)
    trace = {"displayTimeUnit": "ns", "traceEvents": [
        {"ph": "M", "pid": os.getpid(), "name": "process_name",
         "args": {"name": "numbax (host)"}}, *session["events"]]}
    data = json.dumps(trace).encode()
    names = [f"{socket.gethostname()}.trace.json.gz"]
    if session["perfetto"]:
        names.append("perfetto_trace.json.gz")
    for name in names:
        with gzip.open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    if session["link"]:
        print(f"numbax: trace written to {os.path.join(folder, names[-1])}; open it at "
              "https://ui.perfetto.dev (Open trace file).")


@contextlib.contextmanager
def trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
          create_perfetto_trace: bool = False, profiler_options: Any = None) -> Iterator[None]:
    """A trace of the enclosed code, written to `log_dir` (JAX's jax.profiler.trace)."""
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


class TraceAnnotation:
    """Marks the enclosed code as one event of the trace, with `kwargs` as its arguments."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        self.name, self.kwargs = str(name), kwargs
        self._start: float | None = None

    def __enter__(self) -> TraceAnnotation:
        self._start = _now_us()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._start is not None:
            record(self.name, self._start, self.kwargs)
            self._start = None


class StepTraceAnnotation(TraceAnnotation):
    """A training step's event: TraceAnnotation with its `step_num` among the kwargs."""


def annotate_function(func: Callable, name: str | None = None,
                      **decorator_kwargs: Any) -> Callable:
    """func with each call recorded as an event named `name` (default: its qualified name)."""
    label = name or getattr(func, "__qualname__", getattr(func, "__name__", repr(func)))

    @functools.wraps(func)
    def annotated(*args: Any, **kwargs: Any) -> Any:
        with TraceAnnotation(label, **decorator_kwargs):
            return func(*args, **kwargs)

    return annotated


def _no_profiler_service(api: str) -> NotImplementedError:
    return NotImplementedError(
        f"jax.profiler.{api}: numbax has no XLA profiler service (no gRPC server, no device "
        "memory planes). Record a trace with `with jax.profiler.trace(log_dir):` instead and "
        "open it in Perfetto (ui.perfetto.dev) or TensorBoard's trace viewer.")


def start_server(port: int, requires_backend: bool = True) -> Any:
    raise _no_profiler_service("start_server")


def stop_server() -> None:
    raise _no_profiler_service("stop_server")


def device_memory_profile(backend: str | None = None) -> bytes:
    raise _no_profiler_service("device_memory_profile")


def save_device_memory_profile(filename: Any, backend: str | None = None) -> None:
    raise _no_profiler_service("save_device_memory_profile")
