"""Test-only support for running numbax's CUDA kernels under Numba's CUDA simulator."""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from types import ModuleType

import numpy as np

from numbax._src.compiler.cuda.runtime import memory as cuda_runtime


def lock_simulated_shared_arrays() -> None:
    """Numba's simulator creates a block's shared array on the first thread's call with an
    unlocked check-then-insert, so two threads can each get their own array (a rare flaky
    wrong result in any shared-memory kernel). Test-only: serialise that insert."""
    import sys
    import threading
    import traceback

    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    shared = kernelapi.FakeCUDAShared
    if getattr(shared, "_numbax_locked", False):
        return
    lock, array = threading.Lock(), shared.array

    def locked(self, shape, dtype):
        if shape == 0:  # dynamic shared memory: one buffer made up front
            return array(self, shape, dtype)
        if not isinstance(dtype, np.dtype | type):
            dtype = numpy_support.as_dtype(dtype)
        caller = traceback.extract_stack(sys._getframe())[-2][0:2]  # the kernel's line
        with lock:
            res = self._allocations.get(caller)
            if res is None:
                res = self._allocations[caller] = np.empty(shape, dtype)
        return res

    shared.array, shared._numbax_locked = locked, True


def prepare() -> None:
    """Applied by every simulator entry point (sim_checks.py, sim_matrix.py) before any kernel
    runs; nothing on a real GPU."""
    if cuda_runtime.simulator_enabled():
        lock_simulated_shared_arrays()


def full_precision_products() -> None:
    """For the check and matrix processes only (never on import: pytest imports the check
    modules): products at full float32 precision. On a card cuBLAS's default for float32 is
    TF32, as JAX's; only sim_checks_cublas checks that path, with its own tolerance."""
    import numbax

    numbax.config.update("jax_default_matmul_precision", "highest")


@contextlib.contextmanager
def library_model(binding: ModuleType, model: Callable) -> Iterator[None]:
    """A vendor library binding (cuda/runtime/cublas.py, cufft.py) 'available', its one
    library call (`_call`) answered by `model` — under the simulator only: on a card the
    library itself runs."""
    if not cuda_runtime.simulator_enabled():
        yield
        return
    import numbax

    saved = binding.available, binding._call
    # Programs compiled under the model call the library; compiled before or after, they do
    # not: a later check of the same program in this process must compile it again.
    numbax.clear_caches()
    binding.available, binding._call = (lambda: True), model
    try:
        yield
    finally:
        binding.available, binding._call = saved
        numbax.clear_caches()
