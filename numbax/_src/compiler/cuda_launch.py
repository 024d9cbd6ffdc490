"""Kernel launchers for generated CUDA drivers: `kernel[grid, block]` configured once when the
driver module loads, and, on a real GPU, numba-cuda's per-call type dispatch skipped after the
first launch (a driver passes the same argument types at a launch site on every call).

numba-cuda's `dispatcher[grid, block](*args)` goes configure → `_LaunchConfiguration.__call__`
→ `CUDADispatcher.call` → the C dispatcher's `_cuda_call` (typeof of every argument, overload
search) → `_Kernel.launch` (argument marshalling, cuLaunchKernel). A launcher keeps the
`_Kernel` the first launch resolved to and calls its `launch` directly; anything unexpected
(the simulator, several overloads, argument types that differ from the overload's) keeps the
ordinary path.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

FAST = True  # benchmarks/bench_cuda_driver.py switches it off to measure the ordinary path


def _dims(d) -> tuple[int, int, int]:
    d = tuple(d) if isinstance(d, tuple) else (d,)
    return tuple(int(x) for x in d) + (1,) * (3 - len(d))


def launcher(dispatcher: Any, grid, block) -> Callable[..., None]:
    """A function launching `dispatcher` on (grid, block) with its positional arguments."""
    configured = dispatcher[grid, block]
    griddim, blockdim = _dims(grid), _dims(block)
    state: list[Any] = [None, False]  # the resolved kernel's launch method, tried yet

    def launch(*args) -> None:
        fast = state[0]
        if fast is not None and FAST:
            fast(args, griddim, blockdim, 0, 0)
            return
        configured(*args)
        if not state[1]:
            state[1] = True
            state[0] = _resolved(dispatcher, args)

    return launch


def _resolved(dispatcher: Any, args: tuple) -> Callable | None:
    """The bound `launch` of the one compiled overload matching `args`' types, or None."""
    overloads = getattr(dispatcher, "overloads", None)
    typeof = getattr(dispatcher, "typeof_pyval", None)
    if not overloads or typeof is None or len(overloads) != 1:
        return None
    (kernel,) = overloads.values()
    types = getattr(kernel, "argument_types", None)
    launch = getattr(kernel, "launch", None)
    try:
        same = types is not None and tuple(types) == tuple(typeof(a) for a in args)
        params = list(inspect.signature(launch).parameters)
    except Exception:  # noqa: BLE001 - any surprise keeps the ordinary path
        return None
    if params != ["args", "griddim", "blockdim", "stream", "sharedmem"]:
        return None  # a numba-cuda whose _Kernel.launch differs from the one this was written for
    return launch if same else None
