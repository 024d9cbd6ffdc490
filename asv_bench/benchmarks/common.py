"""Shared setup for the asv suite: sizes, inputs, and the JAX peer when it is installed.

Every benchmark takes an `impl` parameter ("numbax", "numpy", "jax") so that `setup` builds
only the implementation being timed; "jax" is left out of the parameters when JAX is not
installed (`impls`), and implementations that do not apply raise NotImplementedError in
`setup`, which asv reports as skipped (n/a).

Sizes: the default parameters are small so that `asv run --python=same --quick` runs the whole
suite in CI in a few minutes; NUMBAX_ASV_FULL=1 adds the large sizes (1e7 elements, 2000x2000
matmul, ...) for real measurements.
"""
import os

import numpy as np

try:  # JAX is a benchmark peer only, never a dependency
    import jax
    import jax.numpy as jjnp

    jax.config.update("jax_enable_x64", True)
except ImportError:  # pragma: no cover - depends on the machine
    jax = None
    jjnp = None

FULL = os.environ.get("NUMBAX_ASV_FULL", "").strip().lower() in ("1", "true", "yes", "on")


def impls(*names):
    """The implementations a benchmark compares, without "jax" when JAX is not installed: no
    jax parameter then exists, so asv prints no skipped-benchmark notice per parameter."""
    return [n for n in names if n != "jax" or jax is not None]


IMPLS = impls("numbax", "numpy", "jax")
DTYPES = ["float32", "float64"]


def sizes(small, full=()):
    """`small` always, plus `full` when NUMBAX_ASV_FULL=1."""
    return list(small) + (list(full) if FULL else [])


def require(impl, available=("numbax", "numpy", "jax")):
    """NotImplementedError (asv: skipped) when `impl` does not apply or is not installed."""
    if impl not in available:
        raise NotImplementedError(f"no {impl} variant of this benchmark")
    if impl == "jax" and jax is None:
        raise NotImplementedError("jax is not installed")


def modules(impl):
    """(numpy-like module, jit, grad, vmap) of a traced implementation."""
    if impl == "numbax":
        import numbax
        import numbax.numpy as jnp

        return jnp, numbax.jit, numbax.grad, numbax.vmap
    return jjnp, jax.jit, jax.grad, jax.vmap


def inputs(n, dtype, seed=0):
    return np.random.default_rng(seed).normal(size=n).astype(dtype)


def put(impl, x):
    """`x` where `impl` wants its inputs (a JAX device array for jax, numpy otherwise)."""
    if impl == "jax":
        return jax.tree_util.tree_map(jax.device_put, x)
    return x


STEADY_S = 0.3  # seconds of calls before numbax's steady state is checked (`steady`)


def steady(impl, call):
    """`call()` once (the compile), and for numbax on until its steady state: a kernel's
    threaded variant is compiled once its serial work passes a tier, in a helper process while
    the one-thread form runs, so a benchmark timed right after the first call measures that
    window (numbax's compile_ahead.settle waits it out, as benchmarks/settle.py does)."""
    call()
    if impl == "numbax":
        from numbax._src.compiler.cpu.runtime import compile_ahead

        compile_ahead.settle(call, STEADY_S)


def ready(x):
    """Wait for every leaf of `x` (JAX dispatches asynchronously); returns `x`."""
    if isinstance(x, (tuple, list)):
        for leaf in x:
            ready(leaf)
    elif isinstance(x, dict):
        for leaf in x.values():
            ready(leaf)
    elif hasattr(x, "block_until_ready"):
        x.block_until_ready()
    return x
