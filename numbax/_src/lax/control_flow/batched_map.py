"""lax.map's batch_size path: a scan over vmapped batches plus a vmapped remainder, as JAX.

It stands alone because it needs vmap (from api) on top of scan, and loops.py is full.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import shape_ops


def batched_map(f: Callable, xs: Any, batch_size: int) -> Any:
    """f over xs in vmapped batches of batch_size (0: one vmap over everything)."""
    from numbax._src.api import vmap  # api sits above lax
    from numbax._src.lax.control_flow.loops import scan

    batch_size = _check_batch_size(batch_size)
    scan_xs, rest_xs = _batch_and_remainder(xs, batch_size)
    if scan_xs is None:
        return vmap(f)(rest_xs)
    _, scan_ys = scan(lambda _, x: ((), vmap(f)(x)), (), scan_xs)
    flat_ys = tu.tree_map(_merge_leading, scan_ys)
    if rest_xs is None:
        return flat_ys
    rest_ys = vmap(f)(rest_xs)
    return tu.tree_map(lambda y, r: shape_ops.concatenate([y, r], 0), flat_ys, rest_ys)


def _check_batch_size(batch_size: Any) -> int:
    if isinstance(batch_size, bool) or not hasattr(batch_size, "__index__"):
        raise NumbaxTypeError(
            f"map: batch_size has type {type(batch_size).__name__}, expected a non-negative "
            "int. Pass an int, e.g. batch_size=8.")
    if int(batch_size) < 0:
        raise NumbaxValueError(
            f"map: batch_size has {int(batch_size)}, expected a non-negative int. Pass "
            "batch_size >= 0 (0 maps everything in one vmap).")
    return int(batch_size)


def _batch_and_remainder(xs: Any, batch_size: int) -> tuple[Any, Any]:
    """(xs reshaped to [num_batches, batch_size, ...] or None, the leftover rows or None)."""
    leaves, treedef = tu.tree_flatten(xs)
    if not leaves:
        return xs, None
    n = core.get_aval(leaves[0]).shape[0]
    num_batches, remainder = divmod(n, batch_size) if batch_size else (0, n)
    cut = num_batches * batch_size
    rest = [_rows(leaf, cut, n) for leaf in leaves] if remainder else None
    if num_batches == 0:
        return None, treedef.unflatten(rest)
    batched = [shape_ops.reshape(_rows(leaf, 0, cut),
                                 (num_batches, batch_size, *core.get_aval(leaf).shape[1:]))
               for leaf in leaves]
    return treedef.unflatten(batched), None if rest is None else treedef.unflatten(rest)


def _rows(leaf: Any, start: int, stop: int) -> Any:
    shape = core.get_aval(leaf).shape
    return shape_ops.slice(leaf, (start, *[0] * (len(shape) - 1)), (stop, *shape[1:]))


def _merge_leading(y: Any) -> Any:
    shape = core.get_aval(y).shape
    return shape_ops.reshape(y, (shape[0] * shape[1], *shape[2:]))
