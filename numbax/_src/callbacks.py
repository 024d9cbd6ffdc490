"""Host callbacks as primitives: debug_callback and debug_print (effects, no outputs),
pure_callback (pure: dropped when unused, batched by its vmap_method) and io_callback
(effectful). Under jit each stays one equation that the compiled driver runs through its eager
impl at every call (compiler/lowerings/callbacks.py); core.effectful_primitives keeps DCE and
CSE from dropping or merging the effectful ones. The callback param is a plain function of flat
numpy arrays; numbax/_src/callback_api.py builds it (and turns the arrays into Arrays)."""
from __future__ import annotations

import copy
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.core import Primitive, ShapedArray
from numbax._src.dtypes import kind_of
from numbax._src.errors import JaxRuntimeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import shape_ops
from numbax._src.lax.control_flow import loops

# ----------------------------------------------------------------------------- effects


class Effect:
    """An effect a primitive has beyond its outputs (JAX's jax._src.effects.Effect)."""

    def __repr__(self) -> str:
        return str(self)


class DebugEffect(Effect):
    """jax.debug.callback/print: runs for its side effect, in any order."""

    __str__ = lambda self: "Debug"  # noqa: E731


class OrderedDebugEffect(Effect):
    """jax.debug.callback/print with ordered=True: runs in program order."""

    __str__ = lambda self: "OrderedDebug"  # noqa: E731


class IOEffect(Effect):
    __str__ = lambda self: "IO"  # noqa: E731


class OrderedIOEffect(Effect):
    __str__ = lambda self: "OrderedIO"  # noqa: E731


debug_effect = DebugEffect()
ordered_debug_effect = OrderedDebugEffect()
io_effect = IOEffect()
ordered_io_effect = OrderedIOEffect()


def _unrolled_batch(prim: Primitive) -> Callable:
    """Batches an output-less callback by calling it once per example, in order (JAX's rule):
    under vmap a print prints each example."""

    def batch(axis_size, vals, dims, **params):
        for i in range(axis_size):
            prim.bind(*[x if d is None else shape_ops.index_in_dim(x, i, d, keepdims=False)
                        for x, d in zip(vals, dims, strict=True)], **params)
        return [], []

    return batch


def _primals_only(prim: Primitive) -> Callable:
    """A debug callback sees primal values only: its jvp calls it on the primals."""
    return lambda primals, tangents, **params: (prim.bind(*primals, **params), [])


def _no_cotangents(cts, *args, **params):
    return [None] * len(args)


def _debug_rules(prim: Primitive, impl: Callable) -> None:
    """The rules every debug callback shares: no outputs, an effect, primal values only under
    differentiation, once per example under vmap."""
    core.abstract_eval_rules[prim] = lambda *avals, **params: []
    core.impl_rules[prim] = impl
    core.effectful_primitives.add(prim)
    ad.jvp_rules[prim] = _primals_only(prim)
    ad.transpose_rules[prim] = _no_cotangents
    batching.batch_rules[prim] = _unrolled_batch(prim)


# ----------------------------------------------------------------------------- debug_callback

debug_callback_p = Primitive("debug_callback", multiple_results=True)


def _debug_callback_impl(*args, callback, effect, partitioned):
    callback(*args)
    return []


_debug_rules(debug_callback_p, _debug_callback_impl)

# ----------------------------------------------------------------------------- debug_print

debug_print_p = Primitive("debug_print", multiple_results=True)

# How the arrays a callback receives are wrapped: numbax Arrays, installed by callback_api.py
# (this module sits below Array, as core sits below dispatch).
user_array: Callable[[np.ndarray], Any] = lambda x: x  # noqa: E731


def install_user_array(wrap: Callable[[np.ndarray], Any]) -> None:
    global user_array
    user_array = wrap


def merge_static(dyn_args: Sequence[Any], static_args: Sequence[tuple[int, Any]]) -> list:
    """The flat leaves of a call's (args, kwargs): the traced ones with the static (non-array)
    ones put back at their positions."""
    statics = dict(static_args)
    dyn = iter(dyn_args)
    return [statics[i] if i in statics else next(dyn)
            for i in range(len(dyn_args) + len(statics))]


def format_print(fmt: str, args: Sequence[Any], kwargs: dict, np_printoptions: tuple,
                 has_placeholders: bool) -> str:
    """jax.debug.print's message: str.format under the numpy print options of the call site;
    without placeholders the arguments are appended, separated by spaces."""
    if has_placeholders:
        with np.printoptions(**dict(np_printoptions)):
            return fmt.format(*args, **kwargs)
    return " ".join((fmt, *(str(a) for a in args)))


def _debug_print_impl(*args, fmt, has_placeholders, in_tree, logging_record, np_printoptions,
                      ordered, partitioned, static_args):
    leaves = merge_static([user_array(np.asarray(x)) for x in args], static_args)
    c_args, c_kwargs = tu.tree_unflatten(in_tree, leaves)
    msg = format_print(fmt, c_args, c_kwargs, np_printoptions, has_placeholders)
    if logging_record is not None:  # jax.debug.log: the call site's record, with the message
        record = copy.copy(logging_record)
        record.msg = msg
        logging.getLogger(record.name).handle(record)
    else:
        sys.stdout.write(msg + "\n")
    return []


_debug_rules(debug_print_p, _debug_print_impl)

# ----------------------------------------------------------------------------- results


def check_results(api: str, outs: Sequence[Any], result_avals: Sequence[ShapedArray]) -> list:
    """The callback's flat results as arrays of the promised shapes and dtypes (a result of
    the same kind, e.g. float64 for float32, is cast as in JAX); JaxRuntimeError otherwise."""
    if len(outs) != len(result_avals):
        raise JaxRuntimeError(
            f"{api}: the callback returned {len(outs)} arrays, expected {len(result_avals)} "
            "(the leaves of result_shape_dtypes).")
    checked = []
    for i, (out, aval) in enumerate(zip(outs, result_avals, strict=True)):
        arr = np.asarray(out)
        if arr.shape != aval.shape:
            raise JaxRuntimeError(
                f"{api}: result {i} of the callback has shape {arr.shape}, expected "
                f"{aval.shape} as result_shape_dtypes says. Return arrays of the promised "
                "shapes.")
        if arr.dtype != aval.dtype:
            if kind_of(arr.dtype) != kind_of(aval.dtype):
                raise JaxRuntimeError(
                    f"{api}: result {i} of the callback has dtype {arr.dtype}, expected "
                    f"{aval.dtype} as result_shape_dtypes says.")
            arr = arr.astype(aval.dtype)
        checked.append(arr)
    return checked


def _run(api: str, callback: Callable, args: Sequence[Any], result_avals) -> list:
    try:
        outs = callback(*args)
    except Exception as e:
        raise JaxRuntimeError(f"{api}: the callback raised {type(e).__name__}: {e}") from e
    return check_results(api, outs, result_avals)


# ----------------------------------------------------------------------------- pure_callback

pure_callback_p = Primitive("pure_callback", multiple_results=True)
VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized")


def _pure_callback_impl(*args, callback, result_avals, sharding, vmap_method):
    return _run("pure_callback", callback, args, result_avals)


def _pure_callback_jvp(primals, tangents, **params):
    raise NumbaxValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to "
                           "use callbacks while taking gradients.")


def _pure_callback_transpose(cts, *args, **params):
    raise NumbaxValueError("Pure callbacks do not support transpose. Please use "
                           "`jax.custom_vjp` to use callbacks while taking gradients.")


def _pure_callback_batch(axis_size, vals, dims, *, callback, result_avals, sharding,
                         vmap_method):
    """vmap by vmap_method, as JAX's ffi_batching_rule: a sequential map over the examples, or
    one call on arrays with a leading batch axis (unbatched inputs given a size-1 axis for
    expand_dims, broadcast for broadcast_all, left as they are for legacy_vectorized)."""
    params = dict(callback=callback, sharding=sharding, vmap_method=vmap_method)
    if vmap_method in ("sequential", "sequential_unrolled"):
        return loops.map_batched(axis_size, pure_callback_p, list(vals), list(dims),
                                 dict(params, result_avals=result_avals))
    if vmap_method not in VMAP_METHODS:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one "
            "of 'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
    front = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(vals, dims,
                                                                              strict=True)]
    if vmap_method != "legacy_vectorized":
        size = axis_size if vmap_method == "broadcast_all" else 1
        front = [shape_ops.broadcast(x, (size,)) if d is None else x
                 for x, d in zip(front, dims, strict=True)]
    batched_avals = tuple(a.update(shape=(axis_size, *a.shape)) for a in result_avals)
    outs = pure_callback_p.bind(*front, result_avals=batched_avals, **params)
    return outs, [0] * len(outs)


core.abstract_eval_rules[pure_callback_p] = lambda *avals, result_avals, **params: list(
    result_avals)
core.impl_rules[pure_callback_p] = _pure_callback_impl
ad.jvp_rules[pure_callback_p] = _pure_callback_jvp
ad.transpose_rules[pure_callback_p] = _pure_callback_transpose
batching.batch_rules[pure_callback_p] = _pure_callback_batch

# ----------------------------------------------------------------------------- io_callback

io_callback_p = Primitive("io_callback", multiple_results=True)


def _io_callback_impl(*args, callback, result_avals, sharding, ordered):
    return _run("io_callback", callback, args, result_avals)


def _io_callback_jvp(primals, tangents, **params):
    raise NumbaxValueError("IO callbacks do not support JVP.")


def _io_callback_transpose(cts, *args, **params):
    raise NumbaxValueError("IO callbacks do not support transpose.")


def _io_callback_batch(axis_size, vals, dims, *, callback, result_avals, sharding, ordered):
    """A sequential map over the examples, as JAX; an ordered callback cannot be vmapped."""
    if ordered:
        raise NumbaxValueError("Cannot `vmap` ordered IO callback.")
    return loops.map_batched(axis_size, io_callback_p, list(vals), list(dims),
                             dict(callback=callback, result_avals=result_avals,
                                  sharding=sharding, ordered=False))


core.abstract_eval_rules[io_callback_p] = lambda *avals, result_avals, **params: list(
    result_avals)
core.impl_rules[io_callback_p] = _io_callback_impl
core.effectful_primitives.add(io_callback_p)
ad.jvp_rules[io_callback_p] = _io_callback_jvp
ad.transpose_rules[io_callback_p] = _io_callback_transpose
batching.batch_rules[io_callback_p] = _io_callback_batch


def effect_of(prim: Primitive, params: dict) -> Effect | None:
    """The effect an equation of a callback primitive has (None for pure_callback)."""
    if prim is debug_callback_p:
        return params["effect"]
    if prim is debug_print_p:
        return ordered_debug_effect if params["ordered"] else debug_effect
    if prim is io_callback_p:
        return ordered_io_effect if params["ordered"] else io_effect
    return None
