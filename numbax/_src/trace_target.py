"""The backend a jit trace is for. `jit` sets it while it traces a function for compiling, so a
library function with a form that suits one backend's compiled code traces that form: on the
CPU `lax.associative_scan` is one sequential loop (JAX's tree of whole-array rounds compiled a
Numba kernel per round there: seconds to compile), elsewhere JAX's tree. Outside such a trace
(eager calls, eager grad and vmap, `make_jaxpr`, `jit(f).trace`) it is None, and functions
trace the form JAX traces."""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

_BACKEND: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "numbax_trace_target", default=None)


def current() -> str | None:
    """"cpu" or "gpu" inside a jit trace for that backend, else None."""
    return _BACKEND.get()


@contextlib.contextmanager
def tracing_for(backend: str | None) -> Iterator[None]:
    """`current()` is `backend` inside the block."""
    token = _BACKEND.set(backend)
    try:
        yield
    finally:
        _BACKEND.reset(token)
