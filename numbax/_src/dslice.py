"""jax.ds (dslice): a slice with a traced start and a static size, usable as an index of arrays
and Refs (`x[ds(i, 2)]` where `x[i:i + 2]` would need a static i)."""
from __future__ import annotations

import dataclasses
import operator
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.errors import NumbaxTypeError, NumbaxValueError


@dataclasses.dataclass
class Slice:
    """`size` elements from `start` every `stride`: start may be traced, size and stride are
    static (as in JAX's state indexing)."""

    start: Any
    size: int
    stride: int = 1

    def __post_init__(self) -> None:
        if self.stride < 0:
            raise NumbaxValueError("`stride` must be >= 0.")

    @property
    def is_dynamic_start(self) -> bool:
        return isinstance(self.start, core.Tracer) or not isinstance(self.start, int)


def _flatten(s: Slice):
    dynamic = s.is_dynamic_start
    return ((s.start,) if dynamic else ()), (None if dynamic else s.start, s.size, s.stride)


def _unflatten(aux: tuple, children: tuple) -> Slice:
    start, size, stride = aux
    return Slice(children[0] if children else start, size, stride)


tu.register_pytree_node(Slice, _flatten, _unflatten)


def ds(start: Any, size: int | None = None, stride: int | None = None) -> slice | Slice:
    """A slice from a possibly traced start: `ds(None)` is `:`, `ds(j)` is `:j`, `ds(i, j)`
    is `i:i+j` and `ds(i, j, k)` is `i:i+j:k`; the size and stride must be static.

    >>> import numbax, numbax.numpy as jnp
    >>> numbax.jit(lambda x, i: x[ds(i, 2)])(jnp.arange(10), 4)
    Array([4, 5], dtype=int64)
    """
    if start is None:
        return slice(None)
    stride = 1 if stride is None else stride
    if not isinstance(stride, int):
        raise NumbaxValueError("Non-static stride in `dslice`")
    if size is None:
        start, size = 0, start
    try:
        size = operator.index(size)
    except TypeError:
        raise NumbaxTypeError(f"ds: size is a {type(size).__name__}, expected a static int "
                              "(the length of the slice).") from None
    return Slice(start, size, stride)


dslice = ds


def has_slices(idx: Any) -> bool:
    return isinstance(idx, Slice) or (isinstance(idx, tuple)
                                      and any(isinstance(i, Slice) for i in idx))


def _axes_used(entry: Any) -> int:
    """How many axes of the indexed array one index entry consumes."""
    if entry is None or entry is Ellipsis:
        return 0
    dtype = getattr(entry, "dtype", None)
    if dtype is not None and np.dtype(dtype) == np.bool_:
        return core.get_aval(entry).ndim  # a mask covers as many axes as it has
    return 1


def expand(x: Any, idx: Any) -> tuple[Any, Any]:
    """(x', idx'): every Slice of idx applied to x as a dynamic slice along its axis, its
    place in the index taken by a static full slice; x'[idx'] is x[idx]."""
    from numbax._src.lax import indexing, shape_ops

    entries = list(idx) if isinstance(idx, tuple) else [idx]
    ndim = core.get_aval(x).ndim
    axis = 0
    out = []
    for e in entries:
        if e is Ellipsis:
            axis += ndim - sum(_axes_used(f) for f in entries)
        elif isinstance(e, Slice):
            span = (e.size - 1) * e.stride + 1 if e.size else 0
            x = indexing.dynamic_slice_in_dim(x, e.start, span, axis)
            if e.stride != 1:
                x = shape_ops.slice_in_dim(x, 0, span, e.stride, axis)
            e = slice(None)
        out.append(e)
        axis += _axes_used(e)
    return x, tuple(out)
