"""numbax.scipy.ndimage.map_coordinates: sampling an array at fractional coordinates by
nearest-neighbour (order 0) or linear (order 1) interpolation, with JAX's boundary modes."""
from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.numpy import lax_numpy, ufuncs
from numbax._src.numpy.lax_numpy import where

__all__ = ["map_coordinates"]


def _mirror(index: Any, size: int) -> Any:
    half = max(size - 1, 1)  # the half-wavelength of the triangular wave
    folded = ufuncs.abs((index + half) % (2 * half) - half)
    return folded if size > 1 else index * 0


def _reflect(index: Any, size: int) -> Any:
    return ufuncs.floor_divide(_mirror(2 * index + 1, 2 * size + 1) - 1, 2)


_MODES = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: lax_numpy.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _nearest(coordinate: Any) -> list[tuple[Any, Any]]:
    if kind_of(coordinate.dtype) in "iu":
        index = coordinate
    else:
        index = lax.round(coordinate)  # half away from zero, as JAX
    return [(lax.convert_element_type(index, np.int32), None)]


def _linear(coordinate: Any) -> list[tuple[Any, Any]]:
    lower = ufuncs.floor(coordinate)
    upper_weight = coordinate - lower
    index = lax.convert_element_type(lower, np.int32)
    return [(index, 1 - upper_weight), (index + 1, upper_weight)]


def map_coordinates(input: Any, coordinates: Sequence[Any], order: int,  # noqa: A002
                    mode: str = "constant", cval: Any = 0.0) -> Any:
    """input sampled at `coordinates` (one array per axis of input, broadcast together).

    Args:
      input: the array to sample.
      coordinates: a sequence of input.ndim arrays of (fractional) indices.
      order: 0 (nearest, rounding half away from zero) or 1 (linear).
      mode: how indices outside the array are handled: 'constant' (cval), 'nearest',
        'wrap', 'mirror', 'reflect' (JAX's definitions; 'wrap' is index % size).
      cval: the value outside the array in mode 'constant'.

    Returns:
      The samples, of the coordinates' broadcast shape and input's dtype (integer inputs
      round the interpolated value half away from zero).

    >>> import numpy as np
    >>> float(map_coordinates(np.array([0.0, 10.0, 20.0]), [np.array(1.5)], order=1))
    15.0
    """
    if not (isinstance(input, (list, tuple)) or core.is_array_like(input)):
        raise NumbaxTypeError(
            f"numbax.scipy.ndimage.map_coordinates: input has type {type(input).__name__}, "
            "expected an array.")
    input_arr = lax_numpy.asarray(input)
    if not isinstance(coordinates, (list, tuple)) and not hasattr(coordinates, "shape"):
        raise NumbaxTypeError(
            "numbax.scipy.ndimage.map_coordinates: coordinates must be a sequence of arrays, "
            f"got {type(coordinates).__name__}.")
    coordinate_arrs = [lax_numpy.asarray(c) for c in coordinates]
    if len(coordinate_arrs) != input_arr.ndim:
        raise NumbaxValueError(
            "numbax.scipy.ndimage.map_coordinates: coordinates must be a sequence of "
            f"input.ndim = {input_arr.ndim} arrays, got {len(coordinate_arrs)}.")
    if mode not in _MODES:
        raise NotImplementedError(
            f"numbax.scipy.ndimage.map_coordinates: mode {mode!r} is not supported (as in "
            f"JAX); use one of {sorted(_MODES)}.")
    if order not in (0, 1):
        raise NotImplementedError(
            f"numbax.scipy.ndimage.map_coordinates: order {order!r} is not supported (as in "
            "JAX); use order 0 or 1.")
    fix = _MODES[mode]
    cval = lax_numpy.asarray(cval, dtype=input_arr.dtype)
    nodes = _nearest if order == 0 else _linear
    per_axis = []
    for coordinate, size in zip(coordinate_arrs, input_arr.shape, strict=True):
        entries = []
        for index, weight in nodes(coordinate):
            valid = ((index >= 0) & (index < size)) if mode == "constant" else None
            entries.append((fix(index, size), valid, weight))
        per_axis.append(entries)
    total = None
    for combo in itertools.product(*per_axis):
        indices = tuple(lax_numpy.clip(i, 0, max(s - 1, 0))
                        for (i, _, _), s in zip(combo, input_arr.shape))
        value = input_arr[indices]
        valids = [v for _, v, _ in combo if v is not None]
        if valids:
            value = where(functools.reduce(operator.and_, valids), value, cval)
        weights = [w for _, _, w in combo if w is not None]
        if weights:
            value = functools.reduce(operator.mul, weights) * value
        total = value if total is None else total + value
    if kind_of(input_arr.dtype) in "iu" and kind_of(total.dtype) == "f":
        total = lax.round(total)  # half away from zero, as JAX
    return lax.convert_element_type(total, input_arr.dtype)
