"""ravel_pytree: a pytree of arrays as one 1-D array, and the function that undoes it."""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src import tree_util as tu
from numbax._src.lax import elementwise, shape_ops


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """Ravels a pytree of arrays and scalars into one 1-D array.

    Args:
      pytree: a pytree whose leaves are arrays or scalars.

    Returns:
      (flat, unravel): the leaves raveled, converted to their common dtype and concatenated
      (an empty float32 array when the tree has no leaves), and a function mapping such a 1-D
      array back to a pytree of the input's structure, each leaf in its own shape and dtype.

    Unlike JAX: the common dtype follows numbax's NumPy promotion rules (Python scalars are
    weak), so an int32 array with a float32 array ravels to float64 where JAX gives float32.

    >>> import numbax.numpy as jnp
    >>> from numbax.flatten_util import ravel_pytree
    >>> flat, unravel = ravel_pytree({"w": jnp.ones((2, 2)), "b": jnp.zeros(2)})
    >>> flat.tolist()
    [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    >>> unravel(flat)["w"].shape
    (2, 2)
    """
    leaves, treedef = tu.tree_flatten(pytree)
    for i, leaf in enumerate(leaves):
        if not core.is_array_like(leaf):
            raise TypeError(f"ravel_pytree: leaf {i} is a {type(leaf).__name__}, expected an "
                            "array or a scalar.")
    if not leaves:
        return shape_ops.full((0,), 0, np.float32), _Unravel(treedef, (), (), (), None)
    avals = [core.get_aval(x) for x in leaves]
    from_dtypes = tuple(a.dtype for a in avals)
    to_dtype, _ = dtypes.result_type(*[(a.dtype, a.weak_type) for a in avals])
    sizes = tuple(a.size for a in avals)
    shapes = tuple(a.shape for a in avals)
    parts = [shape_ops.reshape(elementwise.convert_element_type(x, to_dtype), (a.size,))
             for x, a in zip(leaves, avals, strict=True)]
    flat = shape_ops.concatenate(parts, 0) if len(parts) > 1 else parts[0]
    if all(dt == to_dtype for dt in from_dtypes):
        return flat, _Unravel(treedef, sizes, shapes, None, None)
    return flat, _Unravel(treedef, sizes, shapes, from_dtypes, to_dtype)


class _Unravel:
    """ravel_pytree's inverse: comparable and hashable, so it can be a static argument."""

    __slots__ = ("treedef", "sizes", "shapes", "from_dtypes", "to_dtype")

    def __init__(self, treedef, sizes, shapes, from_dtypes, to_dtype) -> None:
        self.treedef, self.sizes, self.shapes = treedef, sizes, shapes
        self.from_dtypes, self.to_dtype = from_dtypes, to_dtype

    def _key(self) -> tuple:
        return (self.treedef, self.sizes, self.shapes, self.from_dtypes, self.to_dtype)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Unravel) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"unravel_pytree({self.treedef})"

    def __call__(self, flat: Any) -> Any:
        aval = core.get_aval(flat)
        total = sum(self.sizes)
        if aval.shape != (total,):
            raise ValueError(f"unravel_pytree: flat has shape {aval.shape}, expected ({total},) "
                             "(the shape ravel_pytree returned).")
        if self.to_dtype is not None and aval.dtype != self.to_dtype:
            raise TypeError(f"unravel_pytree: flat has dtype {aval.dtype}, expected "
                            f"{self.to_dtype} (the dtype ravel_pytree returned).")
        leaves = []
        start = 0
        for i, (size, shape) in enumerate(zip(self.sizes, self.shapes, strict=True)):
            chunk = shape_ops.reshape(shape_ops.slice(flat, (start,), (start + size,)), shape)
            if self.from_dtypes is not None:
                with warnings.catch_warnings():  # complex -> real keeps the real part, as JAX
                    warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
                    chunk = elementwise.convert_element_type(chunk, self.from_dtypes[i])
            leaves.append(chunk)
            start += size
        return self.treedef.unflatten(leaves)
