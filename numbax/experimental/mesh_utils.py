"""jax.experimental.mesh_utils: device grids for Mesh. numbax's virtual CPU devices have no
topology, so the grid is the devices in id order."""
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import devices as devices_mod
from numbax._src.errors import NumbaxValueError


def create_device_mesh(mesh_shape: Sequence[int], devices: Sequence[Any] | None = None, *,
                       contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False) -> np.ndarray:
    """An array of shape `mesh_shape` holding the devices (default: numbax.devices()).

    >>> import numbax
    >>> create_device_mesh((1,), numbax.devices()[:1]).shape
    (1,)
    """
    shape = tuple(int(s) for s in mesh_shape)
    devs = list(devices) if devices is not None else devices_mod.devices()
    need = int(np.prod(shape))
    if need != len(devs):
        raise NumbaxValueError(
            f"create_device_mesh: mesh_shape {shape} needs {need} devices, but got "
            f"{len(devs)}. Pass devices=numbax.devices()[:{need}], or set "
            f"NUMBAX_NUM_CPU_DEVICES={need}.")
    grid = np.empty(need, dtype=object)
    grid[:] = devs
    return grid.reshape(shape)


def create_hybrid_device_mesh(mesh_shape: Sequence[int], dcn_mesh_shape: Sequence[int],
                              devices: Sequence[Any] | None = None, **kwargs: Any) -> np.ndarray:
    """One process: the data-center-network axes must all be 1, and this is
    create_device_mesh."""
    if any(int(s) != 1 for s in dcn_mesh_shape):
        raise NumbaxValueError(f"create_hybrid_device_mesh: dcn_mesh_shape is "
                               f"{tuple(dcn_mesh_shape)}; numbax runs one process, so every "
                               "entry must be 1.")
    return create_device_mesh(mesh_shape, devices)


__all__ = ["create_device_mesh", "create_hybrid_device_mesh"]
