"""numbax: JAX's programming model (jit, grad, vmap, pmap) with Numba in the place of XLA."""
# First: Numba's CPU target is chosen before numbax decorates any @njit function.
from numbax._src.compiler import host_isa as _host_isa  # noqa: F401

# isort: split
from numbax import errors, lax, numpy, tree_util  # noqa: E402  (public submodules)
from numbax import tree_util as tree  # noqa: E402
from numbax._src import array_methods as _array_methods  # noqa: F401  (installs operators)
from numbax._src.api import (
    ShapeDtypeStruct,
    eval_shape,
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    make_jaxpr,
    value_and_grad,
    vjp,
    vmap,
)
from numbax._src.array import Array
from numbax._src.config import config, disable_jit
from numbax._src.devices import (
    default_backend,
    device_count,
    devices,
    local_device_count,
    local_devices,
    process_count,
    process_index,
)
from numbax._src.transfer import block_until_ready, device_get, device_put

__version__ = "0.1.0"

__all__ = [
    "Array", "ShapeDtypeStruct", "block_until_ready", "config", "default_backend",
    "device_count", "device_get", "device_put", "devices", "local_device_count",
    "local_devices", "process_count", "process_index",
    "disable_jit", "errors", "eval_shape", "grad", "hessian", "jacfwd", "jacrev", "jvp", "lax",
    "linearize", "make_jaxpr", "numpy", "tree", "tree_util", "value_and_grad", "vjp", "vmap",
]
from numbax._src.checkpoint import checkpoint, checkpoint_policies, remat  # noqa: E402, F401
from numbax._src.custom_derivatives import custom_jvp, custom_vjp  # noqa: E402, F401
from numbax._src.jit import jit  # noqa: E402

__all__ += ["jit"]
from numbax import random  # noqa: E402, F401  (public submodule)

__all__ += ["example_libraries", "nn", "scipy"]
from numbax import example_libraries, nn, scipy  # noqa: E402, F401
from numbax._src.parallel.pmap import pmap  # noqa: E402

__all__ += ["pmap"]

# --- compat-lax: the extension API's namespaces (jax.core and jax.interpreters are
# attributes of the jax module; jax.extend is imported explicitly, as in JAX)
from numbax import core, interpreters  # noqa: E402, F401
