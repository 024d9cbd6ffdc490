"""Eager primitives on GPU arrays: each (primitive, params, avals, device) compiles once to a
one-equation CUDA executable (cached), so an eager op on a GpuArray returns a GpuArray without
a round trip through the host. A primitive without a CUDA lowering (or whose compile fails)
falls back to the host path (numpy impl, CPU result), as before. Operands follow JAX's rule:
numpy arrays, scalars and uncommitted Arrays move to the GpuArray's device; an Array committed
to another device (a CPU one placed by device_put, or another GPU) raises ValueError.

core.EvalTrace calls `eval_primitive` only once a GpuArray was ever created
(`core.gpu_eager_hook` is set then), so the CPU eager path pays one global lookup."""
from __future__ import annotations

from typing import Any

from numbax._src import core
from numbax._src.array import GpuArray, committed_device
from numbax._src.compiler.cuda.runtime import memory as cuda_runtime
from numbax._src.config import config

_CACHE: dict[tuple, Any] = {}
FALLBACKS: dict[tuple, str] = {}  # key -> why it runs on the host (for debugging)
_HOST = object()


def _compile(primitive: core.Primitive, params: dict, avals: tuple, device):
    from numbax._src.compiler.cuda import driver as cuda_driver
    from numbax._src.interpreters import partial_eval as pe

    def one(*xs):
        out = primitive.bind(*xs, **params)
        return list(out) if primitive.multiple_results else [out]

    closed = pe.trace_to_closed_jaxpr(one, list(avals))
    return cuda_driver.compile_jaxpr(closed, None, primitive.name, device)


def eval_primitive(primitive: core.Primitive, tracers, params: dict) -> list | None:
    """The outputs as GpuArrays, or None when no operand is a GpuArray or the primitive has no
    CUDA lowering (the caller then runs the host path)."""
    gpu = None
    for x in tracers:
        if type(x) is GpuArray:
            gpu = x
            break
    if gpu is None:
        return None
    device = committed_device(tracers, primitive.name, "operand")  # raises on two devices
    avals = tuple(core.get_aval(x) for x in tracers)
    key = (primitive, tuple(sorted(params.items())), avals, device)
    try:
        exe = _CACHE.get(key)
    except TypeError:  # an unhashable param: not cached, host path
        return None
    if exe is None:
        try:
            with cuda_runtime.on_device(device.id):
                exe = _compile(primitive, params, avals, device)
        except Exception as e:  # noqa: BLE001 - no lowering, bad input: the host path decides
            FALLBACKS[key] = f"{type(e).__name__}: {e}"
            exe = _HOST
        _CACHE[key] = exe
    if exe is _HOST:
        return None
    with cuda_runtime.on_device(device.id):
        results = exe.call_flat(list(tracers))
    if config.jax_debug_nans:
        core._check_nans(primitive, results)
    return results


def cache_size() -> int:
    """How many (primitive, params, avals, device) executables were compiled (tests)."""
    return sum(1 for v in _CACHE.values() if v is not _HOST)
