"""jnp.take_along_axis where arr's other axes are the result's (numpy/indexing.py picks one
of these): a few positions a line through along_axis.take_along_axis, or a gather of flat
positions."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src.core import get_aval
from numbax._src.lax import along_axis, shape_ops
from numbax._src.lax import elementwise as ew
from numbax._src.lax import indexing as lax_indexing
from numbax._src.numpy import ufuncs

# Lines of at most this many indices (a label per example, the k of top-k) take the
# along-axis primitive, whose transpose the compilers turn into selects fused into the
# cotangent's readers (compiler/few_scatters.py).
FEW_POSITIONS = 8


def few_positions(arr: Any, indices: Any, axis: int, out_shape: tuple, gmode: str,
                  fill_value: Any) -> Any:
    """take_along_axis of at most FEW_POSITIONS indices a line: the clamped indices taken
    along the axis, and for mode "fill" the fill where an index was out of bounds. As a
    flat gather, its gradient was a scatter-add into the flattened zeros of arr's shape, a
    pass writing them, a pass each for the operations after it: cross-entropy's gradient
    with integer labels (4096 x 1000 float32) took 4.8 ms on the VM against jax.jit's 1.7."""
    n = get_aval(arr).shape[axis]
    idx = ufuncs.broadcast_to_shape(indices, out_shape)
    clamped = ew.max(ew.min(idx, _full(out_shape, n - 1)), _full(out_shape, 0))
    taken = along_axis.take_along_axis(arr, clamped, axis)
    if gmode != "fill":
        return taken
    dtype = get_aval(arr).dtype
    fill = lax_indexing.default_fill(dtype) if fill_value is None else fill_value
    outside = ew.bitwise_or(ew.lt(idx, _full(out_shape, 0)), ew.ge(idx, _full(out_shape, n)))
    return ew.select(outside, shape_ops.full(out_shape, np.asarray(fill, dtype), dtype), taken)


def _full(shape: tuple, value: int) -> Any:
    return shape_ops.full(shape, np.int64(value), np.int64)


def flat_positions(arr: Any, indices: Any, axis: int, out_shape: tuple, gmode: str,
                   fill_value: Any) -> Any:
    """take_along_axis where arr's other axes are the result's: one gather from arr's flat
    elements at computed positions (the index along `axis` times its stride plus the iotas of
    the other axes times theirs, one fused kernel), an index out of bounds along `axis` sent
    past the end for mode "fill". The general form concatenates a coordinate array a result
    element and gathers by every coordinate: 1000² with 1000² indices took 28x jax.jit's
    time (docs/performance.md)."""
    a_shape = get_aval(arr).shape
    n = a_shape[axis]

    def full(value):
        return _full(out_shape, value)

    idx = ufuncs.broadcast_to_shape(indices, out_shape)
    if gmode == "clip":
        idx = ew.select(ew.lt(idx, full(0)), full(0), ew.select(ew.ge(idx, full(n)),
                                                                full(n - 1), idx))
    strides = [int(np.prod(a_shape[d + 1:], dtype=np.int64)) for d in range(len(a_shape))]
    flat = ew.mul(idx, full(strides[axis]))
    for d in range(len(a_shape)):
        if d != axis and a_shape[d] > 1:
            iota = shape_ops.broadcasted_iota(np.int64, out_shape, d)
            flat = ew.add(flat, ew.mul(iota, full(strides[d])))
    if gmode == "fill":  # (negative indices were wrapped by _take_mode)
        outside = ew.bitwise_or(ew.lt(idx, full(0)), ew.ge(idx, full(n)))
        flat = ew.select(outside, full(get_aval(arr).size), flat)
    flat_arr = shape_ops.reshape(arr, (get_aval(arr).size,))
    return lax_indexing.gather(flat_arr, shape_ops.reshape(flat, (*out_shape, 1)), (0,),
                               mode=gmode, fill_value=fill_value)

