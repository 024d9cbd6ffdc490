"""jax.experimental.shard_map: shard_map with JAX's older signature (mesh, in_specs and
out_specs positional, check_rep for check_vma); new code uses numbax.shard_map."""
from collections.abc import Callable
from typing import Any

from numbax._src.parallel.shard_map import shard_map as _shard_map


def shard_map(f: Callable, mesh: Any, in_specs: Any, out_specs: Any, check_rep: bool = True,
              auto: Any = frozenset()) -> Callable:
    """numbax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
    check_vma=check_rep), manual over the mesh axes not in `auto`."""
    names = frozenset(n for n in getattr(mesh, "axis_names", ()) if n not in frozenset(auto))
    return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                      axis_names=names, check_vma=check_rep)


__all__ = ["shard_map"]
