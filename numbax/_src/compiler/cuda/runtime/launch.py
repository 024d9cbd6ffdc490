"""Kernel launchers for generated CUDA drivers: `kernel[grid, block]` configured once when the
driver module loads, and, on a real GPU, numba-cuda's per-call type dispatch skipped once a
launch site has run twice (a driver passes the same argument types at a site on every call).

numba-cuda's `dispatcher[grid, block](*args)` goes configure → `_LaunchConfiguration.__call__`
→ `CUDADispatcher.call` (stream conversion, the C dispatcher's typeof of every argument and
overload search) → `_Kernel.launch(args, griddim, blockdim, stream, sharedmem)` (argument
marshalling, cuLaunchKernel). A launcher's second launch still takes that path, with the
resolved overload's `launch` wrapped to record the exact arguments numba passes it (the
stream object, for one, differs across numba-cuda versions); later launches call the
overload's `launch` directly with those. Anything unexpected (the simulator, several
overloads, argument types other than the overload's, a `launch` the ordinary path does not
call, a first direct call rejected before launching, several visible GPUs: a launch site is
shared by every device's executable and the recorded stream belongs to one) keeps the
ordinary path.

Launch sites are configured on the work stream (stream.py); while the calling thread captures a
CUDA graph, a launch goes to the capture stream through the ordinary path instead.

A third stage skips numba's per-call argument preparation (for each array: wrapping it, reading
size, itemsize, pointer, shape and strides; ~10 of the 22 µs a 3-array launch costs on an
H100 host). numba-cuda 0.30 ends `_Kernel.launch` with `launch(stream, config, kernel,
*kernelargs)` (cuda.core's launcher, looked up in the dispatcher's module at call time): one
more direct call runs with that name wrapped to record its arguments; later launches reuse them
with only each array's data pointer replaced (5.3 µs measured for that call). It needs every
argument to be an array — a launch site's shapes and strides never change, its kernel is
compiled for them — and the recorded list to hold each array's pointer where numba's layout
puts it (5 + 2 * ndim entries per array, the pointer fifth); otherwise the direct path stays.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from numbax._src.compiler.cuda.runtime import memory as cuda_runtime
from numbax._src.compiler.cuda.runtime import stream

FAST = True  # benchmarks/bench_cuda_driver.py switches it off to measure the ordinary path


def launcher(dispatcher: Any, grid, block) -> Callable[..., None]:
    """A function launching `dispatcher` on (grid, block) with its positional arguments."""
    work = stream.work_stream()
    configured = dispatcher[grid, block] if work is None else dispatcher[grid, block, work]
    if cuda_runtime.gpu_count() != 1:
        return configured
    capturing = stream.capturing
    # [launches so far (capped at 3), overload's launch, recorded (rest, kwargs), verified,
    #  packed launch (None: not tried yet, False: not possible here)]
    state: list[Any] = [0, None, None, False, None]

    def launch(*args) -> None:
        capture = capturing()
        if capture is not None:  # a CUDA graph being captured: its stream, the ordinary path
            dispatcher[grid, block, capture](*args)
            return
        direct = state[1]
        if direct is not None and FAST:
            rest, kw = state[2]
            if state[3]:
                packed = state[4]
                if packed:
                    packed(args)
                elif packed is None:
                    state[4] = _pack(dispatcher, args, direct, rest, kw) or False
                else:
                    direct(args, *rest, **kw)
                return
            try:  # the first direct call: a rejection (nothing launched yet) disables it
                direct(args, *rest, **kw)
            except (TypeError, AttributeError, ValueError):
                state[1] = None
            else:
                state[3] = True
                return
        if state[0] == 1 and direct is None:
            state[1], state[2] = _record(dispatcher, configured, args)
            state[0] = 2
            return
        configured(*args)
        state[0] = min(state[0] + 1, 3)

    return launch


def _pack(dispatcher: Any, args: tuple, direct: Callable, rest: tuple, kw: dict):
    """Launches `args` through `direct` while recording what it passes the launcher named
    `launch` in the overload's module; returns a function relaunching with those arguments
    and new data pointers, or None. The launch happens exactly once either way."""
    kernel = _overload(dispatcher, args)
    module = sys.modules.get(type(kernel).__module__) if kernel is not None else None
    real = getattr(module, "launch", None)
    types = getattr(kernel, "argument_types", ())
    arrays = all(hasattr(t, "ndim") and hasattr(t, "layout") for t in types)
    if not callable(real) or not arrays or not types:
        direct(args, *rest, **kw)
        return None
    calls: list = []

    def recorder(*a, **k):
        calls.append((a, k))
        return real(*a, **k)

    module.launch = recorder
    try:
        direct(args, *rest, **kw)
    finally:
        module.launch = real
    if len(calls) != 1 or calls[0][1] or len(calls[0][0]) < 3:
        return None
    head, params = calls[0][0][:3], list(calls[0][0][3:])
    offsets, at = [], 0
    for t in types:
        offsets.append(at + 4)
        at += 5 + 2 * t.ndim
    try:
        ok = len(params) == at and all(params[o] == cuda_runtime.pointer(a)
                                       for o, a in zip(offsets, args, strict=True))
    except Exception:  # noqa: BLE001 - an unexpected layout keeps the direct path
        ok = False
    if not ok:
        return None
    pairs = list(enumerate(offsets))

    def packed(new_args: tuple) -> None:
        values = params.copy()  # a fresh list per call: concurrent launches stay apart
        for q, o in pairs:
            values[o] = cuda_runtime.pointer(new_args[q])
        real(*head, *values)

    return packed


def _record(dispatcher: Any, configured: Callable, args: tuple):
    """Launches through the ordinary path while recording how it calls the overload's
    `launch`; returns (that bound launch, (positional rest, keywords)) or (None, None)."""
    kernel = _overload(dispatcher, args)
    if kernel is None:
        configured(*args)
        return None, None
    real = kernel.launch
    calls: list = []

    def recorder(a, *rest, **kw):
        calls.append((rest, kw))
        return real(a, *rest, **kw)

    try:
        kernel.launch = recorder
    except (AttributeError, TypeError):
        configured(*args)
        return None, None
    try:
        configured(*args)
    finally:
        del kernel.launch
    if len(calls) != 1:
        return None, None
    return real, calls[0]


def _overload(dispatcher: Any, args: tuple) -> Any:
    """The compiled overload whose argument types are `args`' types, or None. A kernel may
    hold several (graphs.py's copy kernel serves every program whose buffers have its sizes,
    float32 and bfloat16 ones alike): taking only a lone overload left the second program on
    Numba's ordinary launch, ~20 µs of host time a launch."""
    overloads = getattr(dispatcher, "overloads", None)
    typeof = getattr(dispatcher, "typeof_pyval", None)
    if not overloads or typeof is None:
        return None
    try:
        wanted = tuple(typeof(a) for a in args)
        found = [k for k in overloads.values()
                 if tuple(getattr(k, "argument_types", None) or ()) == wanted]
    except Exception:  # noqa: BLE001 - any surprise keeps the ordinary path
        return None
    if len(found) != 1:
        return None
    return found[0] if callable(getattr(found[0], "launch", None)) else None
