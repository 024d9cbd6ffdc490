"""numpy.convolve and numpy.correlate on traced arrays: one 1-D lax.conv_general_dilated."""
from __future__ import annotations

from typing import Any

from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxValueError
from numbax._src.lax import elementwise as ew
from numbax._src.lax import shape_ops
from numbax._src.lax.conv_ops import conv_general_dilated
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import asarray

__all__ = ["convolve", "correlate"]


def _conv1d(api: str, a: Any, v: Any, mode: str, precision: Any,
            preferred_element_type: Any) -> Any:
    """Full/same/valid 1-D convolution (correlate=False) or correlation of a and v."""
    a, v = asarray(a), asarray(v)
    for name, x in (("a", a), ("v", v)):
        if get_aval(x).ndim != 1:
            raise NumbaxValueError(
                f"numbax.numpy.{api}: {name} has shape {get_aval(x).shape}, expected a "
                "1-dimensional array.")
        if get_aval(x).shape[0] == 0:
            raise NumbaxValueError(f"numbax.numpy.{api}: {name} is empty, expected at least "
                                   "one element.")
    if mode not in ("full", "same", "valid"):
        raise NumbaxValueError(
            f"numbax.numpy.{api}: mode has {mode!r}, expected 'full', 'same' or 'valid'.")
    if preferred_element_type is None:
        a, v = ufuncs.promote_dtypes_inexact(api, a, v)
    else:
        a, v = ufuncs.promote_dtypes(api, a, v)
    reverse = False
    if api == "correlate":
        if kind_of(get_aval(v).dtype) == "c":
            v = ew.conj(v)
        if get_aval(a).shape[0] < get_aval(v).shape[0]:
            a, v, reverse = v, a, True
    else:
        if get_aval(a).shape[0] < get_aval(v).shape[0]:
            a, v = v, a
        v = shape_ops.rev(v, (0,))
    m = get_aval(v).shape[0]
    padding = {"valid": (0, 0), "same": (m // 2, m - m // 2 - 1), "full": (m - 1, m - 1)}[mode]
    out = conv_general_dilated(shape_ops.reshape(a, (1, 1, get_aval(a).shape[0])),
                               shape_ops.reshape(v, (1, 1, m)), (1,), (padding,),
                               precision=precision,
                               preferred_element_type=preferred_element_type)
    out = shape_ops.reshape(out, (get_aval(out).shape[-1],))
    return shape_ops.rev(out, (0,)) if reverse else out


def convolve(a: Any, v: Any, mode: str = "full", *, precision: Any = None,
             preferred_element_type: Any = None) -> Any:
    """numpy.convolve: the discrete linear convolution of two 1-D arrays.

    Args:
      a, v: 1-D arrays (promoted to a common floating dtype unless preferred_element_type is
        given).
      mode: 'full' (length len(a) + len(v) - 1), 'same' (max(len(a), len(v))) or 'valid'.
      precision: as in lax.conv_general_dilated.
      preferred_element_type: the accumulation and output dtype.

    Returns:
      The convolution.

    >>> import numpy as np
    >>> convolve(np.array([1., 2., 3.]), np.array([0., 1., 0.5]))
    Array([0. , 1. , 2.5, 4. , 1.5], dtype=float64)
    """
    return _conv1d("convolve", a, v, mode, precision, preferred_element_type)


def correlate(a: Any, v: Any, mode: str = "valid", *, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    """numpy.correlate: the cross-correlation of two 1-D arrays (v conjugated).

    Args:
      a, v: 1-D arrays.
      mode: 'valid' (default), 'same' or 'full'.
      precision, preferred_element_type: as in convolve.

    Returns:
      The correlation.

    >>> import numpy as np
    >>> correlate(np.array([1., 2., 3.]), np.array([0., 1., 0.5]), "full")
    Array([0.5, 2. , 3.5, 3. , 0. ], dtype=float64)
    """
    return _conv1d("correlate", a, v, mode, precision, preferred_element_type)
