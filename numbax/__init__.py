"""numbax: JAX's programming model (jit, grad, vmap, pmap) with Numba in the place of XLA."""
# First, before anything imports Numba: its error messages unhighlighted. With colorama installed,
# Numba's highlighting sets colorama up for every message it formats (thousands in some compiles,
# most never shown): 32 index-heavy kernels compiled in 13.5 s instead of 14.8
# (docs/performance.md). A user's own setting stands.
import os as _os

_os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")

# isort: split
# Numba's CPU target is chosen before numbax decorates any @njit function.
from numbax._src.compiler.cpu.runtime import host_isa as _host_isa  # noqa: F401

# glibc keeps freed memory for the next call (a program's intermediates fault no pages).
from numbax._src.compiler.cpu.runtime import host_malloc as _host_malloc  # noqa: F401

# Numba's and OpenBLAS's idle workers spin briefly, not for milliseconds: neither pool's call
# shares the cores with the other's spinners (runtime/pool_spin.py).
from numbax._src.compiler.cpu.runtime import pool_spin as _pool_spin  # noqa: F401

# Numba's OpenMP layer before TBB (the thread runtime's rules are measured on it).
from numbax._src.compiler.cpu.runtime import threads as _threads  # noqa: F401

# isort: split
from numbax import errors, lax, numpy, tree, tree_util  # noqa: E402  (public submodules)
from numbax._src import array_methods as _array_methods  # noqa: F401  (installs operators)
from numbax._src import dispatch as _dispatch  # noqa: F401  (installs eager execution)
from numbax._src.api import (
    ShapeDtypeStruct,
    eval_shape,
    grad,
    jvp,
    linearize,
    make_jaxpr,
    value_and_grad,
    vjp,
    vmap,
)
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
from numbax._src.version import __version__  # noqa: E402, F401

__all__ = [
    "Array", "ShapeDtypeStruct", "block_until_ready", "config", "default_backend",
    "device_count", "device_get", "device_put", "devices", "local_device_count",
    "local_devices", "process_count", "process_index",
    "disable_jit", "errors", "eval_shape", "grad", "hessian", "jacfwd", "jacrev", "jvp", "lax",
    "linearize", "make_jaxpr", "numpy", "tree", "tree_util", "value_and_grad", "vjp", "vmap",
]
from numbax._src.checkpoint import checkpoint, checkpoint_policies, remat  # noqa: E402, F401
from numbax._src.custom_derivatives import custom_jvp, custom_vjp  # noqa: E402, F401
from numbax._src.jit import clear_caches, jit  # noqa: E402

__all__ += ["clear_caches", "jit"]
from numbax import random  # noqa: E402, F401  (public submodule)

__all__ += ["example_libraries", "nn", "scipy"]
from numbax import example_libraries, nn, scipy  # noqa: E402, F401
from numbax._src.parallel.pmap import pmap  # noqa: E402

__all__ += ["pmap"]

from numbax import image, ops  # noqa: E402, F401  (public submodules: jax.image, jax.ops)

__all__ += ["image", "ops"]

# compat-tree: jax.Array/Device/typeof, jax.dtypes, jax.typing, config context managers
from numbax import dtypes, flatten_util, typing  # noqa: E402, F401  (public submodules)
from numbax._src.api import ensure_compile_time_eval, named_call, named_scope  # noqa: E402
from numbax._src.api_derived import (  # noqa: E402
    hessian,
    jacfwd,
    jacobian,
    jacrev,
    linear_transpose,
)
from numbax._src.basearray import Array, typeof  # noqa: E402
from numbax._src.config import (  # noqa: E402
    allow_f16_reductions,
    array_garbage_collection_guard,
    auto_pcast,
    check_tracer_leaks,
    checking_leaks,
    debug_infs,
    debug_key_reuse,
    debug_nans,
    default_device,
    default_matmul_precision,
    default_prng_impl,
    enable_checks,
    enable_custom_prng,
    enable_x64,
    explain_cache_misses,
    jax2tf_associative_scan_reductions,
    legacy_prng_key,
    log_compiles,
    no_execution,
    no_tracing,
    numpy_dtype_promotion,
    numpy_rank_promotion,
    remove_size_one_mesh_axis_from_type,
    softmax_custom_jvp,
    thread_guard,
    threefry_partitionable,
    transfer_guard,
    transfer_guard_device_to_device,
    transfer_guard_device_to_host,
    transfer_guard_host_to_device,
)
from numbax._src.devices import (  # noqa: E402
    Device,
    host_count,
    host_id,
    host_ids,
    print_environment_info,
    process_indices,
)
from numbax._src.dtypes import float0  # noqa: E402

__all__ += [
    "Device", "allow_f16_reductions", "array_garbage_collection_guard", "auto_pcast",
    "check_tracer_leaks", "checking_leaks", "debug_infs", "debug_key_reuse", "debug_nans",
    "default_device", "default_matmul_precision", "default_prng_impl", "dtypes",
    "enable_checks", "enable_custom_prng", "enable_x64", "ensure_compile_time_eval",
    "explain_cache_misses", "flatten_util", "float0", "host_count", "host_id", "host_ids",
    "jacobian", "jax2tf_associative_scan_reductions", "legacy_prng_key", "linear_transpose",
    "log_compiles", "named_call", "named_scope", "no_execution", "no_tracing",
    "numpy_dtype_promotion", "numpy_rank_promotion", "print_environment_info", "process_indices",
    "remove_size_one_mesh_axis_from_type",
    "softmax_custom_jvp", "thread_guard", "threefry_partitionable", "transfer_guard",
    "transfer_guard_device_to_device", "transfer_guard_device_to_host",
    "transfer_guard_host_to_device", "typeof", "typing",
]

# --- compat-lax: the extension API's namespaces (jax.core and jax.interpreters are
# attributes of the jax module; jax.extend is imported explicitly, as in JAX)
from numbax import core, interpreters  # noqa: E402, F401

# run code that does `import jax` on numbax (python -m numbax.as_jax script.py)
from numbax._src.jax_alias import install_as_jax  # noqa: E402

__all__ += ["install_as_jax"]

# --- compat-api: jax.debug, callbacks, jax.experimental
# isort: split
from numbax import (  # noqa: E402, F401  (public submodules)
    ad_checkpoint,
    custom_batching,
    custom_derivatives,
    debug,
    dlpack,
    experimental,
    export,
    memory,
    profiler,
    ref,
    stages,
)
from numbax._src import vjp_object as _vjp_object  # noqa: E402
from numbax._src.callback_api import effects_barrier, pure_callback  # noqa: E402
from numbax._src.closure_convert import closure_convert, custom_gradient  # noqa: E402
from numbax._src.dslice import ds  # noqa: E402
from numbax._src.fwd_and_bwd import fwd_and_bwd, live_arrays  # noqa: E402
from numbax._src.refs import Ref, empty_ref, free_ref, freeze, new_ref  # noqa: E402

# jax.ad: the markers and results of VJP.with_refs (a SimpleNamespace in JAX too)
ad = __import__("types").SimpleNamespace(
    DontWant=_vjp_object.DontWant, DidntWant=_vjp_object.DidntWant,
    GradRef=_vjp_object.GradRef, GradValue=_vjp_object.GradValue)

__all__ += ["Ref", "ad", "ad_checkpoint", "closure_convert", "custom_batching",
            "custom_derivatives", "custom_gradient",
            "debug", "ds", "effects_barrier", "empty_ref", "experimental", "export", "free_ref",
            "freeze", "fwd_and_bwd", "live_arrays", "memory", "new_ref", "profiler",
            "pure_callback", "ref", "stages"]

# isort: split
# --- sharding: jax.sharding, meshes and sharded arrays on the virtual CPU devices
from numbax import distributed, sharding  # noqa: E402, F401  (public submodules)
from numbax._src.parallel.shard_map import shard_map  # noqa: E402
from numbax._src.parallel.smap import smap  # noqa: E402
from numbax._src.sharding.api import reshard  # noqa: E402
from numbax._src.sharding.mesh import make_mesh, set_mesh  # noqa: E402
from numbax._src.sharding.sharded_array import (  # noqa: E402
    make_array_from_callback,
    make_array_from_process_local_data,
    make_array_from_single_device_arrays,
)
from numbax._src.sharding.shardings import NamedSharding, P, Shard  # noqa: E402

__all__ += [
    "NamedSharding", "P", "Shard", "shard_map", "smap", "make_array_from_callback",
    "make_array_from_process_local_data", "make_array_from_single_device_arrays", "make_mesh",
    "reshard", "set_mesh", "sharding", "distributed",
]
