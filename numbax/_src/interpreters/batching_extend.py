"""JAX's vmap extension API (jax.interpreters.batching) over numbax's batching rule tables.

JAX's batchers return `(out, out_dim)` for a single-result primitive (`(outs, out_dims)` for a
multiple-result one) and, unlike numbax's, are not told the axis size; the tables here
translate them into numbax's list-returning `batch(axis_size, vals, dims, **params)` rules."""
from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from numbax._src import core
from numbax._src.core import Primitive, get_aval
from numbax._src.interpreters import batching


def _listed(prim: Primitive, outs: Any, dims: Any) -> tuple[list, list]:
    if prim.multiple_results:
        return list(outs), list(dims)
    return [outs], [dims]


def _single(prim: Primitive, outs: list, dims: list) -> tuple[Any, Any]:
    return (outs, dims) if prim.multiple_results else (outs[0], dims[0])


def _axis_size(vals, dims) -> int:
    for x, d in zip(vals, dims, strict=True):
        if d is not None:
            return get_aval(x).shape[d]
    raise ValueError("a batching rule was called with no batched operand")


class _Batchers(MutableMapping):
    """Rules `batcher(vals, dims, **params) -> (out, out_dim)` (JAX's primitive_batchers)."""

    def __init__(self) -> None:
        self._originals: dict[Primitive, tuple[Callable, Callable]] = {}

    def __setitem__(self, prim: Primitive, batcher: Callable) -> None:
        def rule(axis_size, vals, dims, **params):
            outs, out_dims = batcher(list(vals), tuple(dims), **params)
            return _listed(prim, outs, out_dims)

        batching.axis_batch_rules.pop(prim, None)
        batching.batch_rules[prim] = rule
        self._originals[prim] = (batcher, rule)

    def __getitem__(self, prim: Primitive) -> Callable:
        rule = batching.batch_rules[prim]
        original = self._originals.get(prim)
        if original is not None and original[1] is rule:
            return original[0]

        def batcher(vals, dims, **params):
            return _single(prim, *rule(_axis_size(vals, dims), list(vals), list(dims), **params))

        return batcher

    def __delitem__(self, prim: Primitive) -> None:
        del batching.batch_rules[prim]
        self._originals.pop(prim, None)

    def __iter__(self) -> Iterator[Primitive]:
        return iter(batching.batch_rules)

    def __len__(self) -> int:
        return len(batching.batch_rules)


class _FancyBatchers(MutableMapping):
    """Rules `batcher(axis_data, vals, dims, **params) -> (out, out_dim)`; axis_data has the
    axis's `size` and `name` (JAX's fancy_primitive_batchers)."""

    def __init__(self) -> None:
        self._originals: dict[Primitive, tuple[Callable, Callable]] = {}

    def __setitem__(self, prim: Primitive, batcher: Callable) -> None:
        def rule(axis_data, vals, dims, **params):
            outs, out_dims = batcher(axis_data, list(vals), tuple(dims), **params)
            return _listed(prim, outs, out_dims)

        batching.axis_batch_rules[prim] = rule
        self._originals[prim] = (batcher, rule)

    def __getitem__(self, prim: Primitive) -> Callable:
        rule = batching.axis_batch_rules.get(prim)
        if rule is not None:
            original = self._originals.get(prim)
            if original is not None and original[1] is rule:
                return original[0]
            return lambda axis_data, vals, dims, **params: _single(
                prim, *rule(axis_data, list(vals), list(dims), **params))
        plain = batching.batch_rules[prim]
        return lambda axis_data, vals, dims, **params: _single(
            prim, *plain(axis_data.size, list(vals), list(dims), **params))

    def __delitem__(self, prim: Primitive) -> None:
        if prim in batching.axis_batch_rules:
            del batching.axis_batch_rules[prim]
        else:
            del batching.batch_rules[prim]
        self._originals.pop(prim, None)

    def __iter__(self) -> Iterator[Primitive]:
        yield from batching.axis_batch_rules
        yield from (p for p in batching.batch_rules if p not in batching.axis_batch_rules)

    def __len__(self) -> int:
        return len(set(batching.axis_batch_rules) | set(batching.batch_rules))


class _AxisBatchers:
    """Write-only table of rules `batcher(axis_size, axis_name, main, vals, dims, **params)`
    (JAX's axis_primitive_batchers; main is always None)."""

    def __setitem__(self, prim: Primitive, batcher: Callable) -> None:
        fancy_primitive_batchers[prim] = lambda axis_data, vals, dims, **params: batcher(
            axis_data.size, axis_data.name, None, vals, dims, **params)


primitive_batchers: MutableMapping = _Batchers()
fancy_primitive_batchers: MutableMapping = _FancyBatchers()
axis_primitive_batchers = _AxisBatchers()


def defvectorized(prim: Primitive) -> None:
    """An elementwise primitive whose operands share their batch dimension: it passes through
    (operands batched differently are first aligned at the front)."""
    broadcasting = batching.broadcast_batcher(prim)

    def rule(axis_size, vals, dims, **params):
        if all(d == dims[0] for d in dims):
            outs = core.bind(prim, *vals, **params)
            return outs, [dims[0]] * len(outs)
        return broadcasting(axis_size, vals, dims, **params)

    batching.batch_rules[prim] = rule


def defbroadcasting(prim: Primitive) -> None:
    """An elementwise primitive whose operands have one shape, or rank 0 (which broadcast)."""
    batching.defbroadcasting(prim)


def defreducer(prim: Primitive) -> None:
    """A reduction with an `axes` param: the batch dimension is kept out of `axes`."""

    def rule(axis_size, vals, dims, *, axes, **params):
        (x,), (d,) = vals, dims
        axes = tuple(a + 1 if a >= d else a for a in axes)
        outs = core.bind(prim, x, axes=axes, **params)
        kept = [i for i in range(get_aval(x).ndim) if i not in axes]
        return outs, [kept.index(d)] * len(outs)

    batching.batch_rules[prim] = rule


def broadcast(x: Any, sz: int, axis: int, mesh_axis: Any = None) -> Any:
    """x with a new axis of size sz at `axis` (copies along it)."""
    return batching.broadcast_batched(x, int(sz), int(axis))


def bdim_at_front(x: Any, bdim: int | None, size: int, mesh_axis: Any = None) -> Any:
    """x with its batch dimension moved to the front (broadcast there when bdim is None)."""
    return batching.bdim_at_front(x, bdim, int(size))



def register_vmappable(data_type: type, spec_type: type, axis_size_type: type,
                       to_elt: Callable, from_elt: Callable, make_iota: Callable | None) -> None:
    """Makes vmap map values of data_type through handlers instead of as arrays: in_axes and
    out_axes for them are spec_type values; `to_elt(cont, get_idx, x, spec)` turns x into
    its per-example value (cont(array, axis) maps an array along axis), and
    `from_elt(cont, axis_size, elt, spec)` stacks per-example values back (cont(axis_size,
    array, axis) puts the batch axis at axis). axis_size_type and make_iota are accepted for
    JAX compatibility (numbax's axis sizes are ints)."""
    batching.vmappables[data_type] = (spec_type, axis_size_type, to_elt, from_elt)


def unregister_vmappable(data_type: type) -> None:
    """Forgets data_type's vmap handlers (vmap treats its values as before)."""
    batching.vmappables.pop(data_type, None)
