"""Running a compiled program on a call's arguments: argument buffers in (with donation),
result buffers wrapped as Arrays, and the per-signature callers jit's fast paths keep.

Two fast paths skip jit's general call (flatten, avals, cache key) once a signature has run:
one for positional numbax Arrays, one for positional host values (numpy arrays, numpy and
Python scalars, Arrays mixed in) when the program donates nothing."""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src import tree_util as tu
from numbax._src.array import Array, GpuArray, _DeletedArray, unaliased
from numbax._src.compiler.backend import Executable
from numbax._src.compiler.cuda.runtime import memory as cuda_runtime
from numbax._src.compiler.cuda.runtime import stream as cuda_stream


def _wrap_owned(o: np.ndarray, weak_type: bool) -> Array:
    o.setflags(write=False)
    a = object.__new__(Array)
    a._value, a._weak_type, a._device = o, weak_type, None
    return a


def run_executable(exe: Executable, leaves: Sequence[Any], donate: bool = False) -> list[Array]:
    """Runs a compiled program on argument leaves; returns its outputs as Arrays.

    CPU: leaves become C-contiguous numpy arrays; with `donate`, the buffers of the donated
    leaves that qualify (`_donations`) go to the driver's trailing parameters and their
    Arrays are deleted. Outputs the driver allocated are wrapped as they are (read-only, no
    view), so a later call can take them as donations; others (views of inputs...) through a
    read-only view, copied first when they view a numpy argument the caller may change.
    GPU: device buffers pass through, host leaves are copied over, outputs stay on the
    device."""
    avals = exe.in_avals
    if exe.device is None:
        values = [leaf_value(x, a) for x, a in zip(leaves, avals, strict=True)]
        bufs, donors = _donations(leaves, exe.donate, 1) if donate and exe.donate else ((), ())
        _delete(donors)
        outs = exe(*values, donated=bufs)
        fresh = exe.out_fresh or (False,) * len(outs)
        return [_wrap_owned(o, w) if f else Array._from_numpy(unaliased(o, leaves), w)
                for o, w, f in zip(outs, exe.out_weak, fresh, strict=True)]
    with cuda_runtime.on_device(exe.device.id):
        args = [x._dbuf if type(x) is GpuArray else
                cuda_stream.upload(leaf_value(x, a))
                for x, a in zip(leaves, avals, strict=True)]
        outs = exe(*args)
    return [GpuArray._from_buffer(o, a.shape, w, exe.device, a.dtype)
            for o, a, w in zip(outs, exe.out_avals, exe.out_weak, strict=True)]


def _local_refcount() -> int:
    v = np.empty(0)
    return sys.getrefcount(v)


_SOLE = _local_refcount()  # a buffer's refcount when a function's local is its one reference


def _donations(leaves: Sequence[Any], donate: tuple[int, ...], held: int):
    """The buffers jit may write into, one per donated leaf (None where it may not), and the
    Arrays they come from. A buffer qualifies when it is a numbax Array's own allocation that
    nothing else references (no other Array, view or numpy handle: its refcount is the Array's
    plus `held`, the caller's list); it is made writeable here."""
    bufs, donors = [], []
    for i in donate:
        a = leaves[i]
        v = a._value if type(a) is Array else None
        if v is not None and v.flags.c_contiguous and _sole_buffer(v) and \
                sys.getrefcount(v) == _SOLE + 1 + held and sum(x is a for x in leaves) == 1:
            if v.base is not None:
                v.base.setflags(write=True)
            v.setflags(write=True)
            bufs.append(v)
            donors.append(a)
        else:
            bufs.append(None)
    return bufs, donors


def _sole_buffer(v: np.ndarray) -> bool:
    """Whether `v` owns its memory, or is the one view of a whole buffer that nothing else
    references (how Array._from_numpy wraps a buffer numbax wrote: read-only, through a view)."""
    if v.base is None:
        return v.flags.owndata
    b = v.base
    return type(b) is np.ndarray and b.base is None and b.flags.owndata and \
        b.flags.c_contiguous and b.shape == v.shape and b.dtype == v.dtype and \
        b.ctypes.data == v.ctypes.data and sys.getrefcount(b) == _SOLE + 1


def _delete(donors: list[Array]) -> None:
    """Marks donated Arrays deleted: their class becomes one whose every use raises."""
    for a in donors:
        a._value = None
        a.__class__ = _DeletedArray


def leaf_value(x: Any, aval: core.ShapedArray) -> np.ndarray:
    if type(x) is Array:
        return x._value
    if type(x) is int:  # wraps within int64, a clear OverflowError beyond (as JAX)
        return dtypes.python_scalar_value(x, aval.dtype)
    value = np.asarray(x, dtype=aval.dtype)
    return value if value.flags.c_contiguous else np.ascontiguousarray(value)


def array_key(args: tuple) -> tuple | None:
    """The signature of a call with only Array positional args, or None (use the slow path)."""
    key = []
    for a in args:
        if type(a) is not Array:
            return None
        v = a._value
        key.append((v.shape, v.dtype, a._weak_type))
    return tuple(key)


def array_caller(entry) -> Callable:
    """The whole call for one signature of plain Array arguments: run the driver, wrap the
    fresh output buffers as Arrays (made read-only in place, no view) and rebuild the tree."""
    exe, tree = entry.exe, entry.out_tree
    driver, consts, weak = exe.driver, tuple(exe.consts), tuple(exe.out_weak)
    wrap = _wrap_owned  # a fresh buffer or a view of an Array's: never a caller's own flags

    if exe.donate:  # donated leaves: buffers taken before the values are read, then deleted
        donate = exe.donate

        def call(args):
            bufs, donors = _donations(args, donate, 0)
            values = [a._value for a in args]
            _delete(donors)
            outs = driver(*consts, *values, *bufs)
            return tu.tree_unflatten(tree, [wrap(o, w) for o, w in zip(outs, weak)])
    elif tree.node_type is None:  # one array out
        (w0,) = weak

        def call(args):
            (o,) = driver(*consts, *[a._value for a in args])
            return wrap(o, w0)
    elif tree.node_type is tuple and all(c.node_type is None for c in tree.children):
        def call(args):
            outs = driver(*consts, *[a._value for a in args])
            return tuple([wrap(o, w) for o, w in zip(outs, weak)])
    else:
        def call(args):
            outs = driver(*consts, *[a._value for a in args])
            return tu.tree_unflatten(tree, [wrap(o, w) for o, w in zip(outs, weak)])
    return call


# Host values a signature may be keyed by without looking at their contents: numpy arrays by
# (shape, dtype, contiguity), numpy scalars by type, Python bools/floats by type, Python ints
# by type while they fit every integer dtype jit may give them (larger ones take the general
# path, which raises JAX's OverflowError).
_INT32 = (-2**31, 2**31)


def host_key(args: tuple) -> tuple | None:
    """The signature of a call whose positional args are numpy arrays, numpy or Python
    scalars and Arrays (at least one not an Array), or None (use the general path)."""
    key, host = [], False
    for a in args:
        t = type(a)
        if t is Array:
            v = a._value
            key.append((v.shape, v.dtype, a._weak_type))
            continue
        host = True
        if t is np.ndarray:
            key.append((a.shape, a.dtype, a.flags.c_contiguous, None))
        elif t is float or t is bool or isinstance(a, np.generic):
            key.append(t)
        elif t is int and _INT32[0] <= a < _INT32[1]:
            key.append(int)
        else:
            return None
    return tuple(key) if host else None


def host_caller(entry, key: tuple) -> Callable | None:
    """The whole call for one signature `key` of host values (host_key), or None where the
    program donates or runs off the host. Inputs convert as in run_executable, except that
    the leaves `key` shows to be C-contiguous numpy arrays of the program's dtypes go to the
    driver as they are (converting three such arguments was 1 us of a 15 us call); results
    that may view a caller's numpy array are copied (unaliased), fresh ones wrapped as they
    are."""
    exe, tree = entry.exe, entry.out_tree
    if exe.device is not None or exe.donate:
        return None
    driver, consts, avals = exe.driver, tuple(exe.consts), tuple(exe.in_avals)
    if len(key) == len(avals) and all(type(k) is tuple and len(k) == 4 and k[2] and
                                      k[1] == a.dtype for k, a in zip(key, avals)):
        def values(args):
            return args
    else:
        def values(args):
            return [leaf_value(x, a) for x, a in zip(args, avals)]
    weak = tuple(exe.out_weak)
    fresh = tuple(exe.out_fresh) if exe.out_fresh else (False,) * len(weak)
    if not all(fresh):
        def call(args):
            outs = driver(*consts, *values(args))
            return tu.tree_unflatten(tree, [
                _wrap_owned(o, w) if f else Array._from_numpy(unaliased(o, args), w)
                for o, w, f in zip(outs, weak, fresh)])
    elif tree.node_type is None:  # one array out
        (w0,) = weak

        def call(args):
            (o,) = driver(*consts, *values(args))
            return _wrap_owned(o, w0)
    else:
        def call(args):
            outs = driver(*consts, *values(args))
            return tu.tree_unflatten(tree, [_wrap_owned(o, w) for o, w in zip(outs, weak)])
    return call
