"""numbax.sharding: JAX's jax.sharding on numbax's virtual CPU devices (meshes, partition specs,
shardings, the current mesh, reshard and the explicit/auto axis switches)."""
from numbax._src.sharding.api import auto_axes, explicit_axes, reshard  # noqa: F401
from numbax._src.sharding.mesh import (  # noqa: F401
    AbstractDevice,
    AbstractMesh,
    AxisType,
    ManualAxisType,
    Mesh,
    get_abstract_mesh,
    get_mesh,
    set_mesh,
    use_abstract_mesh,
)
from numbax._src.sharding.shardings import (  # noqa: F401
    NamedSharding,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    make_single_device_sharding,
)

__all__ = [
    "AbstractDevice", "AbstractMesh", "AxisType", "ManualAxisType", "Mesh", "NamedSharding",
    "PartitionSpec", "Sharding", "SingleDeviceSharding", "auto_axes", "explicit_axes",
    "get_abstract_mesh", "get_mesh", "make_single_device_sharding", "reshard", "set_mesh",
    "use_abstract_mesh",
]
