"""The sharding functions users call on values: reshard, with_sharding_constraint,
auto_axes/explicit_axes, and the layout eager results of sharded operands get (dispatch.py
asks `relayout` after running a primitive on the global values)."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.array import Array
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
    >>> reshard(np.arange(4.0), numbax.NamedSharding(mesh, numbax.P("x"))).sharding.spec
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


def _onto(api: str, tree: Any, mesh: mesh_mod.Mesh, spec: Any) -> Any:
    """Every array of `tree` laid out on `mesh` (the same devices, other axis types): by `spec`
    when given, else by its own spec. No data moves."""

    def move(leaf: Any) -> Any:
        if spec is not None:
            target = spec
        elif isinstance(leaf, core.Tracer):
            own = leaf.aval._sharding
            target = own.spec if own is not None else None
        else:
            own = sharding_of(leaf)
            target = own.spec if isinstance(own, NamedSharding) else None
        if target is None:
            return leaf
        sharding = NamedSharding(mesh, resolve(api, target).spec
                                 if isinstance(target, Sharding) else target)
        if isinstance(leaf, core.Tracer):
            return sharding_constraint_p.bind(leaf, sharding=sharding)
        return put(leaf, sharding, api)

    return tu.tree_map(move, tree)


def _switch_axes(f: Callable | None, axes: Any, kind: AxisType, api: str, kw: str,
                 given: Any) -> Callable:
    """auto_axes/explicit_axes: f run with `axes` of the current mesh switched to `kind`; the
    arguments laid out on the switched mesh (by in_sharding for explicit_axes), the results
    laid back on the caller's mesh (by out_sharding for auto_axes). The sharding may be given
    when wrapping or as a keyword of the call."""
    if f is None:
        return functools.partial(_switch_axes, axes=axes, kind=kind, api=api, kw=kw,
                                 given=given)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        target = kwargs.pop(kw, given)
        mesh = mesh_mod.get_mesh()
        if mesh.empty:
            raise NumbaxValueError(f"{api}: no mesh is set; call it under "
                                   "numbax.set_mesh(mesh).")
        names = mesh.axis_names if axes is None else \
            ((axes,) if isinstance(axes, str) else tuple(axes))
        switched = mesh.update_axis_types({n: kind for n in names})
        args = _onto(api, args, switched, target if kind == AxisType.Explicit else None)
        with mesh_mod.set_mesh(switched):
            out = f(*args, **kwargs)
        return _onto(api, out, mesh, target if kind == AxisType.Auto else None)

    return wrapped


def auto_axes(f: Callable | None = None, /, *, axes: Any = None,
              out_sharding: Any = None) -> Callable:
    """f run with `axes` (default: all) of the current mesh Auto: inside, types carry no
    sharding over them; the results are laid out by out_sharding (given here or as a keyword
    of the call)."""
    return _switch_axes(f, axes, AxisType.Auto, "auto_axes", "out_sharding", out_sharding)


def explicit_axes(f: Callable | None = None, /, *, axes: Any = None,
                  in_sharding: Any = None) -> Callable:
    """f run with `axes` (default: all) of the current mesh Explicit, its arguments laid out
    by in_sharding (given here or as a keyword of the call) so their types carry it."""
    return _switch_axes(f, axes, AxisType.Explicit, "explicit_axes", "in_sharding",
                        in_sharding)


# ----------------------------------------------------------------------------- eager results


def relayout(primitive: core.Primitive, operands: list, params: dict, results: list) -> list:
    """Eager results of a primitive with sharded operands, laid out as its sharding rule says
    (strictly when the operands' layouts use explicit axes, as JAX's types do)."""
    if primitive is sharding_constraint_p:
        return [put(operands[0], params["sharding"], "reshard")]
    if primitive is shard_map_p:
        mesh = params["mesh"]
        return [_laid_out(r, NamedSharding(mesh, rules.to_spec(
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


def _laid_out(r: Any, sharding: NamedSharding) -> Any:
    if type(r) is ShardedArray and r.is_local_box:  # no value here to relabel: new bookkeeping
        return ShardedArray._make(r._data, r.weak_type, sharding, r._block, r._offset, r.shape)
    return wrap(r._value, r.weak_type, sharding)


LAYOUT_PRIMITIVES = (sharding_constraint_p, shard_map_p)  # results laid out by their params


def has_sharded(operands: list) -> bool:
    return any(type(x) is ShardedArray for x in operands)


def has_local_boxes(operands: list) -> bool:
    """Whether an operand spans processes, only this process's box of it held here."""
    return any(type(x) is ShardedArray and x.is_local_box for x in operands)


def apply_to_boxes(primitive: core.Primitive, operands: list, params: dict) -> list:
    """Eager results of a primitive with an operand of which this process holds only its box:
    shard_map runs each process's blocks, a sharding constraint relabels; anything else would
    need the whole value, which no process holds."""
    from numbax._src.parallel import shard_map

    if primitive is sharding_constraint_p:
        return [put(operands[0], params["sharding"], "reshard")]
    if primitive is not shard_map_p:
        raise RuntimeError(
            f"numbax: `{primitive.name}` was applied eagerly to an array that spans devices of "
            "several processes, whose value no process holds whole. Run the computation under "
            "jax.jit (each process then computes its blocks), inside shard_map or pmap, or "
            "gather the array first with jax.experimental.multihost_utils.process_allgather.")
    outs = shard_map.run_boxes(operands, **params)
    avals = core.abstract_eval(primitive, [core.get_aval(x) for x in operands], params)
    results = [o if isinstance(o, Array) else Array._from_numpy(np.asarray(o), a.weak_type)
               for o, a in zip(outs, avals, strict=True)]
    return relayout(primitive, operands, params, results)
