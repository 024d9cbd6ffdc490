"""Eager execution, installed into core: each primitive bound outside any transform runs its
numpy implementation (core.impl_rules) on the host, or, when an operand lives on a GPU, a
one-equation CUDA program compiled once per (primitive, params, avals, device).

core cannot import Array or the compiler (they sit above it), so this module hands core the
function its EvalTrace calls (`core.install_eager`). GPU eager ops follow JAX's rule: numpy
arrays, scalars and uncommitted Arrays move to the GpuArray's device; an Array committed to
another device raises ValueError. A primitive without a CUDA lowering (or whose compile fails)
runs on the host, giving a CPU result."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src import core, eager_compile, eager_loops, eager_programs, host_eval
from numbax._src.array import Array, GpuArray, committed_device, unaliased
from numbax._src.compiler import api as compiler
from numbax._src.compiler.cuda.runtime import memory as cuda_runtime
from numbax._src.config import config
from numbax._src.dtypes import kind_of
from numbax._src.jit_run import run_executable
from numbax._src.sharding import api as sharding_api

host_eval.NEEDS_APPLY.update(sharding_api.LAYOUT_PRIMITIVES)  # (relaid out after their impl)
eager_compile.install_programs(eager_programs.ProgramCache)  # small eager library calls
_GPU_CACHE: dict[tuple, Any] = {}
GPU_FALLBACKS: dict[tuple, str] = {}  # key -> why it runs on the host (for debugging)
_OUT_AVALS: dict[tuple, list] = {}  # out_avals_of's answers
OUT_AVALS_SIZE = 4096
_HOST = object()


def apply_primitive(primitive: core.Primitive, tracers: list, params: dict) -> list:
    """Runs `primitive` on concrete operands; its outputs as Arrays."""
    if GpuArray.created:  # once a GpuArray exists, eager ops on GpuArrays stay on the GPU
        outs = _on_gpu(primitive, tracers, params)
        if outs is not None:
            return outs
    if _host_arrays_only(primitive, tracers):
        return _apply_on_host_arrays(primitive, tracers, params)
    sharded = sharding_api.has_sharded(tracers)
    if sharded and sharding_api.has_local_boxes(tracers):  # spanning processes: no value here
        return sharding_api.apply_to_boxes(primitive, tracers, params)
    impl = core.impl_rules.get(primitive)
    if impl is None:
        raise NotImplementedError(f"Evaluation rule for '{primitive.name}' not implemented")
    if primitive in core.abstract_eval_rules:
        out_avals = out_avals_of(primitive, [core.get_aval(x) for x in tracers], params)
    else:  # a user primitive with only def_impl: its outputs say what they are
        out_avals = None
    args = [core.to_numpy(x) for x in tracers]
    outs = eager_loops.run(primitive, args, params) if primitive in eager_loops.LOOPS else None
    if outs is None:
        outs = host_eval.tile_product(primitive, args, params)
    if outs is None:
        args, impl_params = host_eval.host_operands(args, primitive, params)
        outs = host_eval.run_impl(primitive, args, impl_params)
    caller_arrays = [x for x in tracers if isinstance(x, np.ndarray)]  # usually none
    results = _as_arrays(primitive, outs, out_avals, caller_arrays)
    if sharded or primitive in sharding_api.LAYOUT_PRIMITIVES:
        results = sharding_api.relayout(primitive, tracers, params, results)
    if config.hot("jax_debug_nans") or config.hot("jax_debug_infs"):
        check_nans(primitive, results)
    return results


# Whether a primitive's eager call on host Arrays only needs its abstract evaluation, its numpy
# impl (operands widened from bfloat16; bfloat16 products on AMX tiles) and wrapping: not a
# loop (eager_loops), not a sharded layout, with a rule that reads only avals and params.
_PLAIN: dict[core.Primitive, bool] = {}


def _host_arrays_only(primitive: core.Primitive, operands: list) -> bool:
    """Whether `_apply_on_host_arrays` runs this call: a plain primitive, host Arrays."""
    plain = _PLAIN.get(primitive)
    if plain is None:
        plain = _PLAIN[primitive] = (
            primitive in core.impl_rules and primitive in core.avals_only
            and primitive not in eager_loops.LOOPS and primitive not in host_eval.NEEDS_APPLY)
    return plain and all(type(x) is Array for x in operands)


def _apply_on_host_arrays(primitive: core.Primitive, arrays: list, params: dict) -> list:
    """apply_primitive for host Arrays of a plain primitive, without the checks the other
    operands need (~3 us of a 10 us eager op)."""
    out_avals = out_avals_of(primitive, [x.aval for x in arrays], params)
    args = [x._value for x in arrays]
    outs = host_eval.tile_product(primitive, args, params)  # (bfloat16 products on AMX tiles)
    if outs is None:
        args, impl_params = host_eval.host_operands(args, primitive, params)
        outs = host_eval.run_impl(primitive, args, impl_params)
    results = _as_arrays(primitive, outs, out_avals, ())
    if config.hot("jax_debug_nans") or config.hot("jax_debug_infs"):
        check_nans(primitive, results)
    return results


def _as_arrays(primitive: core.Primitive, outs: list, out_avals: list | None,
               caller_arrays: list) -> list:
    """An impl's outputs as Arrays of the abstract evaluation's dtypes and weak types."""
    if out_avals is not None and len(outs) != len(out_avals):
        raise ValueError(f"{primitive.name}: the implementation returned {len(outs)} "
                         f"outputs, its abstract evaluation {len(out_avals)}.")
    results = []
    for i, out in enumerate(outs):
        aval = None if out_avals is None else out_avals[i]
        if isinstance(out, Array):
            # A loop's impl hands back its body's Arrays: give them the primitive's weak type
            # (a while_loop over a Python scalar stays weak, as under jit).
            if type(out) is Array and aval is not None and out.weak_type != aval.weak_type:
                out = Array._from_numpy(out._value, aval.weak_type, out._device)
            results.append(out)
            continue
        out = np.asarray(out)
        if aval is not None and out.dtype != aval.dtype:
            out = out.astype(aval.dtype)
        elif caller_arrays:
            out = unaliased(out, caller_arrays)  # a view of (or one of) the caller's arrays
        results.append(Array._from_numpy(out, aval is not None and aval.weak_type))
    return results


def out_avals_of(primitive: core.Primitive, avals: list, params: dict) -> list:
    """core.abstract_eval, remembered for the primitives whose answer is a function of their
    avals, params and the trace context (core.avals_only): an eager op called again with the
    same types skips its rule (3-6 us of a 15-40 us call). A param's type is part of the key
    (1, 1.0 and True hash alike); explicitly sharded avals, unhashable params and the rule's
    refusals are not remembered."""
    if primitive not in core.avals_only or (core.sharding_rules and any(
            a._sharding is not None for a in avals)):
        return core.abstract_eval(primitive, avals, params)
    try:
        key = (primitive, config.trace_context(), *avals,
               *[(name, type(value), value) for name, value in params.items()])
        return _OUT_AVALS[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable param
        return core.abstract_eval(primitive, avals, params)
    out = core.abstract_eval(primitive, avals, params)
    if len(_OUT_AVALS) >= OUT_AVALS_SIZE:  # a program sweeping shapes: start again
        _OUT_AVALS.clear()
    _OUT_AVALS[key] = out
    return out


def check_nans(primitive: core.Primitive, results: list) -> None:
    """jax_debug_nans / jax_debug_infs: raises FloatingPointError naming the primitive that
    made a NaN (an inf)."""
    for r in results:
        value = r._value
        if kind_of(value.dtype) not in "fc":
            continue
        if config.jax_debug_nans and np.isnan(value).any():
            raise FloatingPointError(
                f"jax_debug_nans: invalid value (nan) encountered in {primitive.name}. "
                "Turn jax_debug_nans off once the source is found."
            )
        if config.jax_debug_infs and np.isinf(value).any():
            raise FloatingPointError(
                f"jax_debug_infs: invalid value (inf) encountered in {primitive.name}. "
                "Turn jax_debug_infs off once the source is found."
            )


def _gpu_program(primitive: core.Primitive, params: dict, avals: tuple, device):
    from numbax._src.interpreters import partial_eval as pe

    def one(*xs):
        out = primitive.bind(*xs, **params)
        return list(out) if primitive.multiple_results else [out]

    closed = pe.trace_to_closed_jaxpr(one, list(avals))
    return compiler.compile(closed, "gpu", name=primitive.name, device=device)


def _on_gpu(primitive: core.Primitive, tracers, params: dict) -> list | None:
    """The outputs as GpuArrays, or None when no operand is a GpuArray or the primitive has no
    CUDA lowering (the caller then runs the host path)."""
    if not any(type(x) is GpuArray for x in tracers):
        return None
    device = committed_device(tracers, primitive.name, "operand")  # raises on two devices
    avals = tuple(core.get_aval(x) for x in tracers)
    key = (primitive, tuple(sorted(params.items())), avals, device)
    try:
        exe = _GPU_CACHE.get(key)
    except TypeError:  # an unhashable param: not cached, host path
        return None
    if exe is None:
        try:
            with cuda_runtime.on_device(device.id):
                exe = _gpu_program(primitive, params, avals, device)
        except Exception as e:  # noqa: BLE001 - no lowering, bad input: the host path decides
            GPU_FALLBACKS[key] = f"{type(e).__name__}: {e}"
            exe = _HOST
        _GPU_CACHE[key] = exe
    if exe is _HOST:
        return None
    results = run_executable(exe, list(tracers))
    if config.hot("jax_debug_nans") or config.hot("jax_debug_infs"):
        check_nans(primitive, results)
    return results


def gpu_cache_size() -> int:
    """How many (primitive, params, avals, device) GPU programs were compiled (tests)."""
    return sum(1 for v in _GPU_CACHE.values() if v is not _HOST)


core.install_eager(apply_primitive)
