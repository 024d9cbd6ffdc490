"""numpy's function-mapping helpers on vmap: vectorize (with gufunc signatures and excluded
arguments), apply_along_axis, apply_over_axes and fromfunction."""
from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from numbax._src import dtypes, tree_util
from numbax._src.core import get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import shape_ops
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import asarray, canonicalize_axis

__all__ = ["vectorize", "apply_along_axis", "apply_over_axes", "fromfunction"]

_DIM = r"\w+"
_CORE = rf"(?:{_DIM}(?:,{_DIM})*)?"
_ARG = rf"\({_CORE}\)"
_ARGS = rf"{_ARG}(?:,{_ARG})*"
_SIGNATURE = rf"^{_ARGS}->{_ARGS}$"


def _parse_signature(signature: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """'(m,n),(n)->(m)' -> ([('m', 'n'), ('n',)], [('m',)])."""
    compact = re.sub(r"\s+", "", signature)
    if not re.match(_SIGNATURE, compact):
        raise NumbaxValueError(f"numbax.numpy.vectorize: signature {signature!r} is not a valid "
                               "gufunc signature, expected e.g. '(m,n),(n)->(m)'.")
    ins, outs = compact.split("->")
    parse = lambda part: [tuple(re.findall(_DIM, a)) for a in re.findall(_ARG, part)]  # noqa: E731
    return parse(ins), parse(outs)


def _bind_sizes(sizes: dict, shape: tuple[int, ...], core_dims: tuple[str, ...],
                what: str) -> None:
    if len(shape) < len(core_dims):
        raise NumbaxValueError(f"numbax.numpy.vectorize: {what} has shape {shape}, expected at "
                               f"least {len(core_dims)} dimensions for core dimensions "
                               f"{core_dims}.")
    for name, size in zip(core_dims, shape[len(shape) - len(core_dims):]):
        if sizes.setdefault(name, size) != size:
            raise NumbaxValueError(f"numbax.numpy.vectorize: {what} has size {size} for core "
                                   f"dimension {name!r}, which is {sizes[name]} elsewhere.")


def _split_excluded(func: Callable, excluded: Collection, args: tuple,
                    kwargs: dict) -> tuple[Callable, list, dict]:
    """func with the excluded positional (and all keyword) arguments bound, and the rest."""
    fixed = {i: a for i, a in enumerate(args) if i in excluded}
    dynamic = [a for i, a in enumerate(args) if i not in excluded]
    n = len(args)

    def bound(*dyn: Any) -> Any:
        it = iter(dyn)
        full = [fixed[i] if i in fixed else next(it) for i in range(n)]
        return func(*full, **kwargs)

    return bound, dynamic, kwargs


def vectorize(pyfunc: Callable, *, excluded: Collection[int | str] = frozenset(),
              signature: str | None = None) -> Callable:
    """numpy.vectorize on vmap: pyfunc mapped over the broadcast loop dimensions.

    Args:
      pyfunc: the function of the core (by default scalar) arguments.
      excluded: positions or keyword names of arguments passed through unmapped.
      signature: a gufunc signature such as '(m,n),(n)->(m)' naming core dimensions.

    Returns:
      The vectorized function. Unlike numpy (and as with JAX's excluded names), keyword
      arguments are passed to pyfunc unmapped.

    >>> vectorize(lambda a, b: a * b + 1)(asarray([1, 2]), asarray([[1], [10]]))
    Array([[ 2,  3],
           [11, 21]], dtype=int64)
    """
    if not callable(pyfunc):
        raise NumbaxTypeError(f"numbax.numpy.vectorize: pyfunc has type "
                              f"{type(pyfunc).__name__}, expected a callable.")
    excluded = frozenset(excluded)
    for e in excluded:
        if not isinstance(e, (int, str)) or (isinstance(e, int) and e < 0):
            raise NumbaxTypeError(f"numbax.numpy.vectorize: excluded has {e!r}, expected "
                                  "non-negative argument positions or keyword names.")
    parsed = _parse_signature(signature) if signature is not None else None

    @functools.wraps(pyfunc)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        func, dyn, kw = _split_excluded(pyfunc, excluded, args, kwargs)
        dyn = [asarray(a) for a in dyn]
        ins, outs = parsed if parsed is not None else ([()] * len(dyn), None)
        if len(ins) != len(dyn):
            raise NumbaxTypeError(f"numbax.numpy.vectorize: got {len(dyn)} mapped arguments, "
                                  f"but the signature {signature!r} has {len(ins)} inputs.")
        sizes: dict[str, int] = {}
        loops = []
        for i, (a, dims) in enumerate(zip(dyn, ins)):
            shape = get_aval(a).shape
            _bind_sizes(sizes, shape, dims, f"argument {i}")
            loops.append(shape[:len(shape) - len(dims)])
        loop_shape = ufuncs.broadcast_shapes("vectorize", *loops)
        checked = _checked(func, outs, sizes, signature)
        if not loop_shape:
            return checked(*dyn)
        count = int(np.prod(loop_shape, dtype=np.int64))
        flat = []
        for a, dims in zip(dyn, ins):
            core_shape = get_aval(a).shape[get_aval(a).ndim - len(dims):]
            a = ufuncs.broadcast_to_shape(a, loop_shape + core_shape)
            flat.append(shape_ops.reshape(a, (count,) + core_shape))
        from numbax._src.api import vmap

        result = vmap(checked)(*flat)
        return tree_util.tree_map(
            lambda r: shape_ops.reshape(r, loop_shape + get_aval(r).shape[1:]), result)

    return wrapped


def _checked(func: Callable, outs: list | None, sizes: dict, signature: Any) -> Callable:
    """func whose outputs are checked against the signature's output core dimensions."""
    if outs is None:
        return func

    def check(*args: Any) -> Any:
        out = func(*args)
        results = out if isinstance(out, tuple) else (out,)
        if len(outs) > 1 and not isinstance(out, tuple):
            raise NumbaxTypeError(f"numbax.numpy.vectorize: the function returned one value, "
                                  f"but the signature {signature!r} has {len(outs)} outputs.")
        if len(results) != len(outs):
            raise NumbaxTypeError(f"numbax.numpy.vectorize: the function returned "
                                  f"{len(results)} values, but the signature {signature!r} has "
                                  f"{len(outs)} outputs.")
        seen = dict(sizes)
        for i, (r, dims) in enumerate(zip(results, outs)):
            shape = get_aval(asarray(r)).shape
            if len(shape) != len(dims):
                raise NumbaxValueError(f"numbax.numpy.vectorize: output {i} has shape {shape}, "
                                       f"expected core dimensions {dims} from the signature "
                                       f"{signature!r}.")
            _bind_sizes(seen, shape, dims, f"output {i}")
        return out

    return check


def apply_along_axis(func1d: Callable, axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
    """numpy.apply_along_axis: func1d applied (by vmap) to every 1-d slice along `axis`; its
    output dimensions replace `axis`.

    >>> apply_along_axis(lambda v: v[0] + v[-1], 1, asarray([[1, 2, 3], [4, 5, 6]]))
    Array([ 4, 10], dtype=int64)
    """
    from numbax._src.api import vmap
    from numbax._src.numpy.shapes import moveaxis, reshape

    arr = asarray(arr)
    nd = get_aval(arr).ndim
    if nd == 0:
        raise NumbaxValueError("numbax.numpy.apply_along_axis: arr has shape (), expected at "
                               "least 1 dimension.")
    ax = canonicalize_axis(axis, nd, "apply_along_axis")
    moved = moveaxis(arr, ax, -1)
    lead = get_aval(moved).shape[:-1]
    count = int(np.prod(lead, dtype=np.int64))
    rows = reshape(moved, (count, get_aval(moved).shape[-1]))
    out = asarray(vmap(lambda r: asarray(func1d(r, *args, **kwargs)))(rows))
    res_shape = get_aval(out).shape[1:]
    out = reshape(out, lead + res_shape)
    k = len(res_shape)
    perm = (list(range(ax)) + list(range(len(lead), len(lead) + k))
            + list(range(ax, len(lead))))
    return shape_ops.transpose(out, tuple(perm))


def apply_over_axes(func: Callable, a: Any, axes: Sequence[int]) -> Any:
    """numpy.apply_over_axes: a = func(a, axis) for each axis, keeping the rank (a result
    one rank lower gets the axis back with size 1).

    >>> apply_over_axes(lambda x, ax: x.sum(ax), asarray([[1, 2], [3, 4]]), [0, 1])
    Array([[10]], dtype=int64)
    """
    from numbax._src.numpy.shapes import expand_dims

    a = asarray(a)
    for axis in (axes if isinstance(axes, (list, tuple)) else [axes]):
        nd = get_aval(a).ndim
        b = asarray(func(a, axis))
        if get_aval(b).ndim == nd:
            a = b
        elif get_aval(b).ndim == nd - 1:
            a = expand_dims(b, axis)
        else:
            raise NumbaxValueError(f"numbax.numpy.apply_over_axes: func returned shape "
                                   f"{get_aval(b).shape} for an input of shape "
                                   f"{get_aval(a).shape}, expected the same rank or one less.")
    return a


def fromfunction(function: Callable, shape: Any, *, dtype: Any = float, **kwargs: Any) -> Any:
    """numpy.fromfunction, as JAX: `function` is called (by vmap) on the scalar coordinates
    of every element, so it is written for one element.

    >>> fromfunction(lambda i, j: i * 10 + j, (2, 3), dtype=int)
    Array([[ 0,  1,  2],
           [10, 11, 12]], dtype=int64)
    """
    from numbax._src.api import vmap
    from numbax._src.numpy.creation import _shape, indices

    shape = _shape(shape, "fromfunction")
    if not callable(function):
        raise NumbaxTypeError(f"numbax.numpy.fromfunction: function has type "
                              f"{type(function).__name__}, expected a callable.")
    dtype = dtypes.canonicalize_dtype(dtype, context="numbax.numpy.fromfunction")
    count = int(np.prod(shape, dtype=np.int64))
    grid = indices(shape, dtype=dtype)
    coords = [shape_ops.reshape(grid[i], (count,)) for i in range(len(shape))]
    out = vmap(lambda *c: function(*c, **kwargs))(*coords) if shape else function(**kwargs)
    return tree_util.tree_map(lambda r: shape_ops.reshape(r, shape + get_aval(r).shape[1:]), out)

