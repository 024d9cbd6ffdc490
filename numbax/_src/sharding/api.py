"""The sharding functions users call on values: reshard, with_sharding_constraint,
auto_axes/explicit_axes, and the layout eager results of sharded operands get (dispatch.py
asks `relayout` after running a primitive on the global values)."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.errors import NumbaxValueError
from numbax._src.lax.shard_map import shard_map_p
from numbax._src.lax.sharding_ops import sharding_constraint_p
from numbax._src.sharding import mesh as mesh_mod
from numbax._src.sharding import rules
from numbax._src.sharding.mesh import AxisType
from numbax._src.sharding.sharded_array import ShardedArray, put, resolve, sharding_of, wrap
from numbax._src.sharding.shardings import NamedSharding, Sharding, spec_names


def _apply(api: str, x: Any, shardings: Any, check: Callable | None = None) -> Any:
    leaves, tree = tu.tree_flatten(x)
    if isinstance(shardings, (Sharding, mesh_mod.Mesh)) or not tu.tree_leaves(shardings) or \
            not isinstance(shardings, (list, tuple, dict)):
        targets = [shardings] * len(leaves)
    else:
        targets = tu.tree_leaves(shardings, is_leaf=lambda s: s is None or not isinstance(
            s, (list, tuple, dict)))
        if len(targets) != len(leaves):
            raise NumbaxValueError(
                f"{api}: got {len(targets)} shardings for {len(leaves)} arrays; pass one "
                "sharding, or a tree of them matching the arrays.")
    out = []
    for leaf, target in zip(leaves, targets, strict=True):
        sharding = resolve(api, target)
        if check is not None:
            check(sharding, isinstance(leaf, core.Tracer))
        if isinstance(leaf, core.Tracer):
            out.append(sharding_constraint_p.bind(leaf, sharding=sharding))
        else:
            out.append(put(leaf, sharding, api))
    return tu.tree_unflatten(tree, out)


def reshard(xs: Any, out_shardings: Any) -> Any:
    """`xs` laid out by `out_shardings` (a Sharding, a PartitionSpec over the current mesh, or
    a tree of them). Eagerly no data moves: numbax's virtual devices share one memory, so a
    new layout of the same global value is only new bookkeeping.

    >>> import numbax, numpy as np
    >>> mesh = numbax.make_mesh((1,), ("x",))
    >>> reshard(np.arange(4.0), NamedSharding(mesh, P("x"))).sharding.spec
    P('x',)
    """
    return _apply("reshard", xs, out_shardings)


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """Pins the layout of `x` inside jit (eagerly it lays `x` out like device_put). As in JAX,
    the spec may only name Auto mesh axes: use reshard for Explicit ones."""

    def auto_only(sharding: Sharding, traced: bool) -> None:
        if traced and isinstance(sharding, NamedSharding):
            mesh = sharding.mesh
            for name in spec_names(sharding.spec):
                if dict(zip(mesh.axis_names, mesh.axis_types, strict=True))[name] != \
                        AxisType.Auto:
                    raise NumbaxValueError(
                        "The spec of NamedSharding passed to with_sharding_constraint can only "
                        f"refer to Auto axes of the mesh. Got spec={sharding.spec} and "
                        f"mesh={mesh.abstract_mesh!r}. You probably meant to use `reshard` "
                        "API?")

    return _apply("with_sharding_constraint", x, shardings, auto_only)


def _switch_axes(f: Callable | None, axes: Any, kind: AxisType, api: str, kw: str) -> Callable:
    """auto_axes/explicit_axes: run f with `axes` of the current mesh switched to `kind`, then
    lay its results out by the `kw` keyword (out_shardings) given at the call."""
    if f is None:
        return functools.partial(_switch_axes, axes=axes, kind=kind, api=api, kw=kw)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        target = kwargs.pop(kw, None)
        mesh = mesh_mod.get_mesh()
        names = mesh.axis_names if axes is None else \
            ((axes,) if isinstance(axes, str) else tuple(axes))
        if kind == AxisType.Explicit and target is not None:
            args = _apply(api, args, target)
        switched = mesh.update_axis_types({n: kind for n in names}) if not mesh.empty else mesh
        with mesh_mod.set_mesh(switched if not mesh.empty else None):
            out = f(*args, **kwargs)
        if kind == AxisType.Auto and target is not None:
            out = _apply(api, out, target)
        return out

    return wrapped


def auto_axes(f: Callable | None = None, /, *, axes: Any = None,
              out_sharding: Any = None) -> Callable:
    """f run with `axes` (default: all) of the current mesh Auto; call it with
    out_shardings=... to lay its results out when it returns."""
    return _switch_axes(f, axes, AxisType.Auto, "auto_axes", "out_shardings")


def explicit_axes(f: Callable | None = None, /, *, axes: Any = None,
                  in_sharding: Any = None) -> Callable:
    """f run with `axes` (default: all) of the current mesh Explicit; call it with
    in_shardings=... to lay its arguments out first."""
    return _switch_axes(f, axes, AxisType.Explicit, "explicit_axes", "in_shardings")


# ----------------------------------------------------------------------------- eager results


def relayout(primitive: core.Primitive, operands: list, params: dict, results: list) -> list:
    """Eager results of a primitive with sharded operands, laid out as its sharding rule says
    (strictly when the operands' layouts use explicit axes, as JAX's types do)."""
    if primitive is sharding_constraint_p:
        return [put(operands[0], params["sharding"], "reshard")]
    if primitive is shard_map_p:
        mesh = params["mesh"]
        return [wrap(r._value, r.weak_type, NamedSharding(mesh, rules.to_spec(
            rules.layout_of(NamedSharding(mesh, spec), r.ndim))))
            for r, spec in zip(results, params["out_specs"], strict=True)]
    shardings = [sharding_of(x) for x in operands]
    mesh = next(s.mesh for s in shardings if s is not None)
    avals = [core.get_aval(x) for x in operands]
    layouts = [rules.layout_of(s, a.ndim) for s, a in zip(shardings, avals, strict=True)]
    strict = any(a._sharding is not None for a in avals)
    out_avals = [r.aval for r in results]
    new = rules.apply(primitive, avals, layouts, params, out_avals, strict=strict,
                      mesh_sizes=dict(mesh.shape))
    return [wrap(r._value, r.weak_type, NamedSharding(mesh, rules.to_spec(lay)))
            for r, lay in zip(results, new, strict=True)]


LAYOUT_PRIMITIVES = (sharding_constraint_p, shard_map_p)  # results laid out by their params


def has_sharded(operands: list) -> bool:
    return any(type(x) is ShardedArray for x in operands)
