"""numbax.scipy.interpolate.RegularGridInterpolator: linear or nearest interpolation on a
rectilinear grid (a pytree, so it passes through jit)."""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.numpy import lax_numpy, shapes, sorting, ufuncs
from numbax._src.numpy.lax_numpy import where
from numbax._src.tree_util import register_pytree_node

__all__ = ["RegularGridInterpolator"]


def _check_array(name: str, value: Any) -> Any:
    if not (isinstance(value, (list, tuple)) or core.is_array_like(value)):
        raise NumbaxTypeError(
            f"numbax.scipy.interpolate.RegularGridInterpolator: {name} has type "
            f"{type(value).__name__}, expected an array.")
    return lax_numpy.asarray(value)


class RegularGridInterpolator:
    """Interpolation of values on the grid points[0] x points[1] x ... (each ascending).

    Args:
      points: a sequence of 1-D coordinate arrays, one per leading axis of values.
      values: the data on the grid; axes past len(points) are carried along.
      method: 'linear' or 'nearest'.
      bounds_error: must be False (as in JAX: it cannot be checked under jit).
      fill_value: the value outside the grid (nan by default); None extrapolates.

    >>> import numpy as np
    >>> f = RegularGridInterpolator((np.array([0.0, 1.0]),), np.array([0.0, 10.0]))
    >>> float(f(np.array([0.25]))[0])
    2.5
    """

    def __init__(self, points: Any, values: Any, method: str = "linear",
                 bounds_error: bool = False, fill_value: Any = np.nan) -> None:
        if method not in ("linear", "nearest"):
            raise NumbaxValueError(
                f"numbax.scipy.interpolate.RegularGridInterpolator: method is {method!r}, "
                "expected 'linear' or 'nearest'.")
        if bounds_error:
            raise NotImplementedError(
                "numbax.scipy.interpolate.RegularGridInterpolator: bounds_error=True is not "
                "supported (as in JAX: it would need a check under jit).")
        values = _check_array("values", values)
        if len(points) > values.ndim:
            raise NumbaxValueError(
                f"numbax.scipy.interpolate.RegularGridInterpolator: there are {len(points)} "
                f"point arrays but values has {values.ndim} dimensions.")
        (values,) = ufuncs.promote_dtypes_inexact("scipy.interpolate.RegularGridInterpolator",
                                                  values)
        if fill_value is not None:
            fill_value = _check_array("fill_value", fill_value)
            if not np.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise NumbaxValueError(
                    "numbax.scipy.interpolate.RegularGridInterpolator: fill_value has dtype "
                    f"{fill_value.dtype}, which does not cast to values' {values.dtype}.")
        self.method = method
        self.bounds_error = bounds_error
        self.fill_value = fill_value
        self.grid = tuple(_check_array(f"points[{i}]", p) for i, p in enumerate(points))
        self.values = values

    def __call__(self, xi: Any, method: str | None = None) -> Any:
        """Interpolated values at xi (..., ndim) (or a tuple of coordinate arrays)."""
        method = self.method if method is None else method
        if method not in ("linear", "nearest"):
            raise NumbaxValueError(
                f"numbax.scipy.interpolate.RegularGridInterpolator: method is {method!r}, "
                "expected 'linear' or 'nearest'.")
        ndim = len(self.grid)
        xi = self._coordinates(xi, ndim)
        if xi.shape[-1] != ndim:
            raise NumbaxValueError(
                f"numbax.scipy.interpolate.RegularGridInterpolator: the points xi have "
                f"dimension {xi.shape[-1]}, but the grid has dimension {ndim}.")
        xi_shape = xi.shape
        xi = xi.reshape((-1, ndim))
        indices, distances, outside = self._find_indices(xi)
        if method == "linear":
            result = self._linear(indices, distances)
        else:
            picked = tuple(where(d <= 0.5, i, i + 1) for i, d in zip(indices, distances))
            result = self.values[picked]
        if self.fill_value is not None:
            mask = outside.reshape(outside.shape + (1,) * (result.ndim - 1))
            result = where(mask, self.fill_value, result)
        return result.reshape(xi_shape[:-1] + self.values.shape[ndim:])

    @staticmethod
    def _coordinates(xi: Any, ndim: int) -> Any:
        if isinstance(xi, tuple) and len(xi) == 1:
            xi = xi[0]
        if isinstance(xi, tuple):
            parts = shapes.broadcast_arrays(*[lax_numpy.asarray(p) for p in xi])
            return shapes.stack(parts, axis=-1)
        xi = _check_array("xi", xi)
        return xi.reshape((-1, ndim)) if xi.ndim == 1 else xi

    def _find_indices(self, xi: Any) -> tuple[list, list, Any]:
        indices, distances = [], []
        outside = None
        for k, grid in enumerate(self.grid):
            x = xi[:, k]
            i = sorting.searchsorted(grid, x) - 1
            i = lax_numpy.clip(i, 0, grid.shape[0] - 2)
            indices.append(i)
            distances.append((x - grid[i]) / (grid[i + 1] - grid[i]))
            out = (x < grid[0]) | (x > grid[-1])
            outside = out if outside is None else outside | out
        return indices, distances, outside

    def _linear(self, indices: list, distances: list) -> Any:
        extra = (slice(None),) + (None,) * (self.values.ndim - len(indices))
        total = None
        for corner in itertools.product(*[(i, i + 1) for i in indices]):
            weight = None
            for ci, i, d in zip(corner, indices, distances):
                w = (1 - d) if ci is i else d
                weight = w if weight is None else weight * w
            term = self.values[corner] * weight[extra]
            total = term if total is None else total + term
        return total


register_pytree_node(
    RegularGridInterpolator,
    lambda obj: ((obj.grid, obj.values, obj.fill_value), (obj.method, obj.bounds_error)),
    lambda aux, children: RegularGridInterpolator(*children[:2], *aux, *children[2:]),
)
