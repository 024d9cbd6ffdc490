"""Lowerings by lax family: importing this package fills the registry (compiler/registry.py).
One module per family, each registering its primitives by object, as JAX's lowering rules sit
beside their primitives and PyTensor's Numba dispatch has one module per op family."""
from numbax._src.compiler.lowerings import (  # noqa: F401  isort: skip
    autodiff,
    callbacks,
    calls,
    control_flow,
    convolution,
    dot,
    elementwise,
    flow_arrays,
    indexing,
    linalg,
    ordering,
    parallel,
    random,
    reductions,
    shape_ops,
    special,
)
