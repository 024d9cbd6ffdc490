"""The streams numbax's GPU work is issued on, and the CUDA driver calls that graph capture and
replay need (through cuda.bindings, the binding numba-cuda itself depends on).

With one visible GPU on a real card, every launch, cuBLAS call and device-to-device copy of a
generated driver goes to one **work stream**: a blocking stream, so that work on the legacy
default stream (numba's host copies, CuPy's default stream, cuFFT through CuPy) and work on it
stay ordered both ways, as they were when everything ran on the default stream. A CUDA graph
cannot be captured on the legacy stream, and replaying one is a launch on this stream.

Capture happens on a second, **non-blocking** stream, marked thread-locally while a driver runs
for capture: a blocking stream under capture would make any legacy-stream call of another
thread fail ("operation would make the legacy stream depend on a capturing blocking stream"),
and another thread's launches must not end up in the graph. Nothing runs during capture; the
graph is then replayed on the work stream.

No work stream (launches on the default stream, no graphs): under the simulator, with several
GPUs (a launch site is shared by every device's executable), with numba's per-thread default
stream configured (it does not order with a blocking stream), or without cuda.bindings.
"""
from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src.compiler.cuda.runtime import memory

# .capture: the numba stream this thread is capturing on, or absent; .capture_stream: the
# thread's own capture stream, once made
_TLS = threading.local()


@functools.cache
def _driver() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError:
        return None
    return driver


@functools.cache
def work_stream() -> Any:
    """The numba Stream drivers launch on, or None for the default stream."""
    if memory.simulator_enabled() or memory.gpu_count() != 1 or _driver() is None:
        return None
    import numba

    if getattr(numba.config, "CUDA_PER_THREAD_DEFAULT_STREAM", 0):
        return None
    return memory.get_cuda().stream()  # cuStreamCreate(flags=0): a blocking stream


def handle(stream: Any) -> int:
    """A numba stream's CUstream as an int (0 for None: the default stream)."""
    if stream is None:
        return 0
    h = stream.handle
    value = getattr(h, "value", None)  # ctypes handles (numba's own binding)
    return int(value if value is not None else h)


def _capture_stream() -> Any:
    """This thread's non-blocking stream to capture graphs on (a numba view of it, for
    launches): one per thread, so two threads can capture at once."""
    s = getattr(_TLS, "capture_stream", None)
    if s is None:
        d = _driver()
        (raw,) = _check(d.cuStreamCreate(d.CUstream_flags.CU_STREAM_NON_BLOCKING))
        s = _TLS.capture_stream = memory.get_cuda().external_stream(int(raw))
    return s


def capturing() -> Any:
    """The numba stream this thread is capturing on, or None (launch sites read it)."""
    return getattr(_TLS, "capture", None)


def current() -> int:
    """The stream a library call or copy issued now belongs on, as an int."""
    s = getattr(_TLS, "capture", None)
    return handle(work_stream() if s is None else s)


def upload(value: np.ndarray) -> Any:
    """A call's host argument as a pooled device buffer, copied on the work stream without
    waiting for the card: cuMemcpyHtoDAsync stages pageable memory and returns, where numba's
    synchronous copy first waits for every launch before it, so a jitted call with a host
    argument (a PRNG key) could not overlap the kernels of the call before it (a 1e8-element
    random.normal: 0.69 ms a call against 0.55 for its kernel, H200). The default stream's
    synchronous copy where there is no work stream, or while this thread captures a graph."""
    value = np.asarray(value)
    if value.dtype == memory.BFLOAT16:
        value = value.view(np.uint16)
    s = work_stream()
    if s is None or capturing() is not None:
        return memory.to_device(value)
    value = np.ascontiguousarray(value).reshape(-1)
    buf = memory.empty(value.size, value.dtype)
    if value.size:
        buf.copy_to_device(value, stream=s)  # numba: cuMemcpyHtoDAsync on the stream
    return buf


def _check(result: tuple) -> tuple:
    err = result[0]
    if err != _driver().CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver call failed: {getattr(err, 'name', err)}")
    return result[1:]


# ----------------------------------------------------------------------------- graphs
# The binding boundary: tests under the simulator replace capture, launch and release with a
# model that reruns the captured function (see tests/compiler/cuda/sim_checks_graphs.py).


def capture(record: Callable[[], Any]) -> tuple[Any, Any]:
    """Runs `record` with this thread's launches, library calls and copies captured (relaxed
    mode: allocations may happen meanwhile) and returns (executable graph, record's result).
    On any failure the capture is ended and the exception raised; nothing ran."""
    d = _driver()
    s = _capture_stream()
    h = handle(s)
    _check(d.cuStreamBeginCapture(h, d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED))
    _TLS.capture = s
    try:
        with memory.get_cuda().defer_cleanup():  # no cuMemFree while capturing
            result = record()
    except BaseException:
        _TLS.capture = None
        graph = d.cuStreamEndCapture(h)  # invalidated: ends the capture, graph discarded
        if graph[0] == d.CUresult.CUDA_SUCCESS and graph[1]:
            d.cuGraphDestroy(graph[1])
        raise
    _TLS.capture = None
    (graph,) = _check(d.cuStreamEndCapture(h))
    try:
        (executable,) = _check(d.cuGraphInstantiate(graph, 0))
    finally:
        d.cuGraphDestroy(graph)
    return executable, result


def launch(executable: Any) -> None:
    """Replays a captured graph on the work stream."""
    _check(_driver().cuGraphLaunch(executable, handle(work_stream())))


def release(executable: Any) -> None:
    d = _driver()
    if d is not None:
        d.cuGraphExecDestroy(executable)


def copy(dst: Any, src: Any) -> None:
    """Device-to-device copy of the flat buffer src into dst (as large) on the current stream
    (async)."""
    nbytes = src.size * src.dtype.itemsize
    if nbytes:
        _check(_driver().cuMemcpyDtoDAsync(memory.pointer(dst), memory.pointer(src), nbytes,
                                           current()))


def copy_into(dst: Any, src: Any) -> None:
    """A driver's device-to-device copy of a flat buffer into a view (a scan's ys row), on the
    stream its launches go to."""
    if work_stream() is None:
        dst.copy_to_device(src)
    else:
        copy(dst, src)
