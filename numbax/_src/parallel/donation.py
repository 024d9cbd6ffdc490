"""pmap's donate_argnums: which argument leaves a call donates, which of them are deleted (an
Array already laid out as pmap lays that argument, as in JAX, where any other is copied onto
the devices first and survives), and which outputs the workers write into a donated buffer.
jit's donation (jit_run.py) covers plain Arrays; this is its counterpart for ShardedArrays."""
from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import jit_options
from numbax._src import tree_util as tu
from numbax._src.array import _DeletedArray
from numbax._src.errors import NumbaxValueError
from numbax._src.jit_run import _SOLE
from numbax._src.parallel import shm
from numbax._src.sharding.sharded_array import ShardedArray
from numbax._src.sharding.shardings import NamedSharding


def argnums(donate_argnums: Any, static_argnums: tuple[int, ...]) -> tuple[int, ...]:
    """donate_argnums checked as JAX's pmap checks them: ints (TypeError otherwise), none of
    them static (ValueError, JAX's message). Entries past the positional arguments of a call,
    and negative ones, donate nothing there, as in JAX."""
    donate = jit_options.normalize_argnums("donate_argnums", donate_argnums, api="pmap")
    if set(donate) & set(static_argnums):
        raise NumbaxValueError(f"`static_argnums` {sorted(set(static_argnums))} and "
                               f"`donate_argnums` {sorted(set(donate))} cannot intersect.")
    return tuple(sorted(set(donate)))


def leaves(donate: tuple[int, ...], args: tuple, static_pos: set[int]) -> tuple[int, ...]:
    """The flat positions, among the dynamic arguments' leaves, of the donated arguments'."""
    at, found = 0, []
    for k, x in enumerate(args):
        if k in static_pos:
            continue
        n = len(tu.tree_leaves(x))
        if k in donate:
            found.extend(range(at, at + n))
        at += n
    return tuple(found)


class _DeletedShardedArray(_DeletedArray, ShardedArray):
    """A donated ShardedArray: every use raises jit's deleted-Array error."""

    __slots__ = ()
    _data = _DeletedArray._value


def deletable(leaves_: Sequence[Any], donated: tuple[int, ...], mesh, in_specs) -> list[int]:
    """The donated leaves to delete after the call: ShardedArrays laid out as pmap lays them
    (the same blocks on the same devices), each once."""
    out = []
    for i in donated:
        x = leaves_[i]
        if type(x) is ShardedArray and not x.is_local_box and \
                all(x is not leaves_[j] for j in out) and \
                x._sharding.is_equivalent_to(NamedSharding(mesh, in_specs[i]), x.ndim):
            out.append(i)
    return out


def pair(leaves_: Sequence[Any], donors: list[int], in_specs, out_specs,
         out_avals: Sequence) -> dict[int, int]:
    """Output k -> the donor leaf whose buffer it is written into: the first donor not yet
    taken of its global shape and dtype, split alike (each device writes its block where it
    read its own, and reads no other's), that lies in the heap and that nothing else
    references (no other Array, view or numpy handle of its buffer)."""
    free = [i for i in donors if any(in_specs[i]._normalized(leaves_[i].ndim)) and
            _sole(leaves_[i]) and sum(x is leaves_[i] for x in leaves_) == 1 and
            shm.heap().home(leaves_[i]._data) is not None]
    into = {}
    for k, (aval, spec) in enumerate(zip(out_avals, out_specs, strict=True)):
        for i in free:
            x = leaves_[i]
            if x.shape == aval.shape and x.dtype == aval.dtype and in_specs[i] == spec:
                into[k] = i
                free.remove(i)
                break
    return into


def _sole(x: ShardedArray) -> bool:
    """Whether x's buffer is x's alone: its value and every base up to the heap block's owner
    are referenced once (by x's slot, then by the view above)."""
    obj = x._data
    while obj is not None:
        if sys.getrefcount(obj) != _SOLE + 1:
            return False
        obj = obj.base if isinstance(obj, np.ndarray) else None
    return True


def delete(arrays: list[ShardedArray]) -> None:
    """Marks donated ShardedArrays deleted (their buffers go with them, or live on in the
    outputs written into them)."""
    for a in arrays:
        a._data = None
        a._block = None
        a.__class__ = _DeletedShardedArray
