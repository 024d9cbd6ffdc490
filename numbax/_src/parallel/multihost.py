"""jax.experimental.multihost_utils: moving data between the processes of a job outside
compiled programs (broadcast_one_to_all, process_allgather, sync_global_devices, assert_equal)
and converting between process-local and global arrays (as pmap does across processes).

The first group runs in the parent processes over MPI (crossproc.gather_bytes) and returns
numpy arrays, as JAX's do. In a single process they need no MPI."""
from __future__ import annotations

import pickle
import zlib
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src import devices as devices_mod
from numbax._src import tree_util as tu
from numbax._src.array import Array, asarray_value
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.parallel import crossproc
from numbax._src.sharding.mesh import Mesh
from numbax._src.sharding.sharded_array import (
    ShardedArray,
    make_array_from_process_local_data,
)
from numbax._src.sharding.shardings import NamedSharding, PartitionSpec


def _host_value(api: str, x: Any) -> np.ndarray:
    if isinstance(x, core.Tracer):
        raise NumbaxTypeError(f"{api}: got a traced value; it moves concrete data between "
                              "processes, so call it outside jit/grad/vmap.")
    return np.asarray(x._value if isinstance(x, Array) else asarray_value(x)._value)


def _gather(api: str, value: np.ndarray) -> list[np.ndarray]:
    """Every process's array (each must have the same dtype; shapes may differ)."""
    parts = crossproc.gather_bytes(api, pickle.dumps(np.asarray(value, order="C"),
                                                     protocol=pickle.HIGHEST_PROTOCOL))
    return [pickle.loads(p) for p in parts]


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
    """The source process's values on every process (process 0's unless is_source says
    otherwise; as in JAX, several sources add up). Every process passes the same shapes.

    Returns:
      A pytree of numpy arrays, like in_tree, holding the source's data.
    """
    if devices_mod.process_count() == 1:
        return tu.tree_map(lambda x: _host_value("broadcast_one_to_all", x), in_tree)
    if is_source is None:
        is_source = devices_mod.process_index() == 0

    def one(x):
        value = _host_value("broadcast_one_to_all", x)
        parts = _gather("broadcast_one_to_all", value if is_source else np.zeros_like(value))
        _same_shapes("broadcast_one_to_all", parts)
        total = parts[0].copy()
        for p in parts[1:]:
            total = total + p
        return total.astype(value.dtype, copy=False)

    return tu.tree_map(one, in_tree)


def _same_shapes(api: str, parts: list[np.ndarray]) -> None:
    shapes = [p.shape for p in parts]
    if len(set(shapes)) > 1:
        raise NumbaxValueError(f"{api}: the processes passed arrays of shapes {shapes}, "
                               "expected the same shape on every process.")


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every process's data, on every process.

    Args:
      in_tree: a pytree of arrays, each of the same shape on every process; or arrays laid
        out over several processes' devices (jax.Array not fully addressable).
      tiled: concatenate the processes' arrays along axis 0 instead of stacking them along a
        new axis 0 (scalars are always stacked). Must be True for arrays over several
        processes, whose result is their global value.

    Returns:
      A pytree of numpy arrays.
    """
    return tu.tree_map(lambda x: _allgather_leaf(x, tiled), in_tree)


def _allgather_leaf(x: Any, tiled: bool) -> np.ndarray:
    api = "process_allgather"
    if type(x) is ShardedArray and not x.is_fully_addressable:
        if not tiled:
            raise ValueError("Gathering global non-fully-addressable arrays only supports "
                             "tiled=True")
        return _global_value(api, x)
    value = _host_value(api, x)
    if devices_mod.process_count() == 1:
        return value if tiled else np.expand_dims(value, 0)
    parts = _gather(api, value)
    _same_shapes(api, parts)
    if value.ndim == 0 or not tiled:
        return np.stack(parts)
    return np.concatenate(parts)


def _global_value(api: str, x: ShardedArray) -> np.ndarray:
    """The global value of an array spanning processes: each process contributes its
    devices' distinct blocks."""
    if not x.is_local_box:
        return np.array(x._data)
    mine = {}
    for shard in x.addressable_shards:
        key = tuple((s.start, s.stop) for s in shard.index)
        if key not in mine:
            mine[key] = np.asarray(shard.data._value)
    out = np.empty(x.shape, x.dtype)
    for blocks in crossproc.gather_bytes(api, pickle.dumps(mine)):
        for key, block in pickle.loads(blocks).items():
            out[tuple(slice(lo, hi) for lo, hi in key)] = block
    return out


def sync_global_devices(name: str) -> None:
    """A barrier across every process; they must all pass the same name."""
    assert_equal(np.uint32(zlib.crc32(name.encode())),
                 f"sync_global_devices name mismatch ('{name}')")


def assert_equal(in_tree: Any, fail_message: str = "") -> None:
    """Raises AssertionError unless every process passed the same tree of values."""
    api = "assert_equal"
    for leaf in tu.tree_leaves(in_tree):
        if type(leaf) is ShardedArray and not leaf.is_fully_addressable:
            mine = _global_value(api, leaf)
        else:
            mine = _host_value(api, leaf)
        every = _gather(api, mine)
        if not all(p.shape == mine.shape and np.array_equal(p, mine) for p in every):
            raise AssertionError(f"{fail_message}. Expected: {every[0]}; got: "
                                 f"{[p.tolist() for p in every]} on the processes.")


# ----------------------------------------------------------------------------- local <-> global


def _specs(api: str, tree: Any, pspecs: Any) -> list:
    leaves, structure = tu.tree_flatten(tree)
    if isinstance(pspecs, PartitionSpec):
        return [pspecs] * len(leaves)
    flat = tu.broadcast_prefix_leaves(pspecs, structure, is_leaf=lambda s: s is None)
    if flat is None:
        raise NumbaxValueError(f"{api}: pspecs must be a PartitionSpec or a tree prefix of the "
                               f"inputs; got {pspecs} for {structure}.")
    for s in flat:
        if s is None:
            raise ValueError("`None` is not a valid input to the pspecs argument. Please use "
                             "jax.sharding.PartitionSpec() if you wanted to replicate your "
                             "input.")
    return flat


def host_local_array_to_global_array(local_inputs: Any, global_mesh: Mesh,
                                     pspecs: Any) -> Any:
    """Each process's local data as its blocks of global arrays laid out by pspecs on
    global_mesh (dimensions split over axes that span processes grow by the number of
    processes along them).

    Returns:
      A pytree of global arrays (of which each process holds its blocks).
    """
    specs = _specs("host_local_array_to_global_array", local_inputs, pspecs)
    leaves, tree = tu.tree_flatten(local_inputs)
    return tu.tree_unflatten(tree, [to_global(x, global_mesh, spec)
                                    for x, spec in zip(leaves, specs, strict=True)])


def to_global(x: Any, global_mesh: Mesh, spec: PartitionSpec) -> Array:
    """One process-local leaf as this process's blocks of a global array."""
    sharding = NamedSharding(global_mesh, spec)
    if type(x) is ShardedArray and x.sharding == sharding:
        return x
    return make_array_from_process_local_data(sharding, x)


def global_array_to_host_local_array(global_inputs: Any, global_mesh: Mesh,
                                     pspecs: Any) -> Any:
    """This process's blocks of global arrays (laid out by pspecs on global_mesh) as arrays
    over its own devices (global_mesh.local_mesh).

    Returns:
      A pytree of arrays, each fully addressable.
    """
    specs = _specs("global_array_to_host_local_array", global_inputs, pspecs)
    leaves, tree = tu.tree_flatten(global_inputs)
    return tu.tree_unflatten(tree, [to_local(x, global_mesh, spec)
                                    for x, spec in zip(leaves, specs, strict=True)])


def to_local(x: Any, global_mesh: Mesh, spec: PartitionSpec) -> Array:
    """This process's blocks of one global leaf as an array over its own devices."""
    if isinstance(x, Array) and x.is_fully_addressable:
        return x
    local = NamedSharding(global_mesh.local_mesh, spec)
    value = x._data if type(x) is ShardedArray else np.asarray(x)
    block = NamedSharding(global_mesh, spec).shard_shape(x.shape)
    want = tuple(b * f for b, f in zip(block, local._factors((0,) * len(block)), strict=True))
    if value.shape != want:
        raise NumbaxValueError(
            f"global_array_to_host_local_array: this process holds a block of shape "
            f"{value.shape} of the global array of shape {x.shape}, expected {want} under "
            f"{spec} on {global_mesh}.")
    return ShardedArray._make(value, x.weak_type, local)
