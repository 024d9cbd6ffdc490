"""jax.smap: shard_map over one axis of the context mesh, with vmap-style in_axes/out_axes
instead of PartitionSpecs; nested smaps map a function one mesh axis at a time."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from numbax._src import tree_util as tu
from numbax._src.errors import NumbaxTypeError
from numbax._src.parallel.shard_map import Infer, _resolve_mesh, shard_map
from numbax._src.sharding.mesh import AxisType
from numbax._src.sharding.shardings import PartitionSpec


def smap(f: Callable | None = None, /, *, in_axes: Any = Infer, out_axes: Any,
         axis_name: Any) -> Callable:
    """jax.smap: shard_map over the one mesh axis `axis_name` of the context mesh
    (numbax.set_mesh), with vmap-style axes in place of PartitionSpecs.

    Args:
      f: the per-device function (collectives name `axis_name`).
      in_axes: an int or None for every argument, or a tuple (pytree) of them per positional
        argument: the axis each argument is split along over `axis_name` (None: every device
        gets all of it). Left out, each argument's own sharding (only when `axis_name` is an
        Explicit axis, as in JAX).
      out_axes: an int, None, or a pytree of them: where each result's blocks are
        concatenated (None: the result is the same on every device).
      axis_name: the mesh axis f is manual over; the other axes stay automatic.

    >>> import numbax, numpy as np
    >>> auto = (numbax.sharding.AxisType.Auto,)
    >>> with numbax.set_mesh(numbax.make_mesh((1,), ("x",), axis_types=auto)):
    ...     numbax.smap(lambda b: b + 1, in_axes=0, out_axes=0, axis_name="x")(
    ...         np.zeros(2)).tolist()
    [1.0, 1.0]
    """
    if isinstance(axis_name, (list, tuple)):
        raise NumbaxTypeError(f"smap: axis_name is {axis_name!r}; it names one mesh axis (a "
                              "str or another hashable). Nest smaps for several axes.")
    if in_axes is not Infer:
        _check_axes("in_axes", in_axes)
    _check_axes("out_axes", out_axes)
    if f is None:
        return functools.partial(smap, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)

    def spec(axis):
        return PartitionSpec() if axis is None else PartitionSpec(*[None] * axis, axis_name)

    in_specs = in_axes if in_axes is Infer else tu.tree_map(spec, in_axes,
                                                             is_leaf=lambda a: a is None)
    out_specs = tu.tree_map(spec, out_axes, is_leaf=lambda a: a is None)
    mapped = shard_map(f, in_specs=in_specs, out_specs=out_specs, axis_names={axis_name})

    @functools.wraps(f)
    def wrapped(*args):
        if in_axes is Infer:
            m = _resolve_mesh(None)
            if axis_name in m.axis_names and \
                    m.axis_types[m.axis_names.index(axis_name)] != AxisType.Explicit:
                raise NumbaxTypeError(
                    f"smap: in_axes was not given and axis {axis_name!r} of the context mesh "
                    f"is {m.axis_types[m.axis_names.index(axis_name)]}; only an Explicit "
                    "axis lets smap read the split from the arguments. Pass in_axes.")
        return mapped(*args)

    return wrapped


def _check_axes(what: str, axes: Any) -> None:
    """`axes` is an int, None or a (nested) container of them, the ints non-negative."""
    leaves = tu.tree_leaves(axes, is_leaf=lambda a: a is None)
    bad = [a for a in leaves if a is not None and (isinstance(a, bool) or
                                                   not isinstance(a, int) or a < 0)]
    if bad:
        raise NumbaxTypeError(
            f"smap: {what} is {axes!r}; expected an int, None, or a (nested) container of "
            f"them, each int a non-negative axis (got {bad[0]!r}).")
