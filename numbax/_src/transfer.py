"""device_put, device_get, block_until_ready: moving pytrees of arrays to and from devices."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src import core, devices
from numbax._src import tree_util as tu
from numbax._src.array import Array, GpuArray, asarray_value
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax.sharding_ops import ArrayCopySemantics, device_put_p
from numbax._src.sharding import sharded_array
from numbax._src.sharding.shardings import PartitionSpec, Sharding


def device_put(x: Any, device: devices.Device | None = None, *, src: Any = None,
               donate: bool = False, may_alias: bool | None = None) -> Any:
    """Places every array leaf of `x` on `device`, committing it there; with no device the
    leaves become uncommitted Arrays on the default device (Arrays are returned as they are).
    JAX's rule: jit and eager ops move uncommitted values (numpy arrays, scalars, Arrays never
    placed) to the device of committed ones, and refuse arguments on two committed devices.
    Under a transform (jit, grad, vmap) a traced `x` becomes one `device_put` equation
    (device_put_p) over all its leaves, as in JAX.

    `device` may also be a Sharding (NamedSharding(mesh, P(...)) lays the array out over the
    mesh's devices) or a bare PartitionSpec over the mesh numbax.set_mesh installed. `src`,
    `donate` and `may_alias` are recorded in the equation (copy_semantics); host arrays are
    never donated.

    Unlike JAX: a GpuArray (any GPU result) is always committed to its GPU."""
    if donate and may_alias:
        raise NumbaxValueError("may_alias and donate cannot be True at the same time.")
    leaves, tree = tu.tree_flatten(x)
    if any(isinstance(leaf, core.Tracer) for leaf in leaves) and (
            device is None or isinstance(device, devices.Device)):
        copy = (ArrayCopySemantics.DONATE_INPUT if donate else
                ArrayCopySemantics.ALWAYS_COPY if may_alias is False else
                ArrayCopySemantics.REUSE_INPUT)
        n = len(leaves)
        outs = device_put_p.bind(*leaves, devices=(device,) * n, srcs=(src,) * n,
                                 copy_semantics=(copy,) * n)
        return tu.tree_unflatten(tree, outs)
    if isinstance(device, (Sharding, PartitionSpec)):
        sharding = sharded_array.resolve("device_put", device)
        return tu.tree_map(lambda leaf: sharded_array.put(leaf, sharding), x)
    if device is not None and not isinstance(device, devices.Device):
        raise NumbaxTypeError(
            f"device_put: device is a {type(device).__name__}, expected a Device such as "
            "numbax.devices()[0]."
        )
    if device is not None and device.platform == "gpu":
        from numbax._src.compiler.cuda.runtime import memory as cuda_runtime

        cuda_runtime.get_cuda()
        cuda_runtime.check_device_id(device.id, "device_put")
        return tu.tree_map(lambda leaf: _put_gpu(leaf, device), x)

    def put(leaf):
        if isinstance(leaf, core.Tracer) or (device is None and isinstance(leaf, Array)):
            return leaf
        arr = leaf if isinstance(leaf, Array) else asarray_value(leaf)
        return Array._from_numpy(arr._value, arr.weak_type, device)

    return tu.tree_map(put, x)


def _put_gpu(leaf: Any, target: devices.Device) -> Any:
    """One leaf onto a GPU: a GpuArray already there and __cuda_array_interface__ objects
    (CuPy, PyTorch) are shared without a copy; host data is copied once, and a GpuArray of
    another GPU goes through the host."""
    from numbax._src import dtypes
    from numbax._src.compiler.cuda.runtime import memory as cuda_runtime

    if isinstance(leaf, core.Tracer):
        return leaf
    if type(leaf) is GpuArray and leaf.device == target:
        return leaf
    with cuda_runtime.on_device(target.id):
        if type(leaf) is not GpuArray and not isinstance(leaf, Array) and \
                hasattr(leaf, "__cuda_array_interface__"):
            buf = cuda_runtime.from_cuda_array_interface(leaf)
            dtypes.canonicalize_dtype(buf.dtype, context="device_put")
            shape = tuple(leaf.__cuda_array_interface__["shape"])
            return GpuArray._from_buffer(buf, shape, False, target)
        if isinstance(leaf, np.ndarray) and kind_of(leaf.dtype) in "biufc" and \
                dtypes.canonicalize_dtype(leaf.dtype, context="device_put") == leaf.dtype:
            value, weak = leaf, False  # the device copy is the copy: no host copy first
        else:
            arr = leaf if isinstance(leaf, Array) else asarray_value(leaf)
            value, weak = arr._value, arr.weak_type  # another GPU's array: via the host
        buf = cuda_runtime.to_device(value)
    return GpuArray._from_buffer(buf, value.shape, weak, target, value.dtype)


def device_get(x: Any) -> Any:
    """Brings every Array leaf of `x` to the host as a numpy array (other leaves unchanged)."""
    return tu.tree_map(lambda leaf: np.asarray(leaf) if isinstance(leaf, Array) else leaf, x)


def block_until_ready(x: Any) -> Any:
    """Waits for every array in `x` (CPU results are ready when returned; GPU ones synchronise)."""
    for leaf in tu.tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x
