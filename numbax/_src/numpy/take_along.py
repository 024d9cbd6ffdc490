"""jnp.take_along_axis's gather of flat positions (numpy/indexing.py takes it where arr's
other axes are the result's)."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src.core import get_aval
from numbax._src.lax import elementwise as ew
from numbax._src.lax import indexing as lax_indexing
from numbax._src.lax import shape_ops
from numbax._src.numpy import ufuncs


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
        return shape_ops.full(out_shape, np.int64(value), np.int64)

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

