"""The module fixture of tests that run on numbax's virtual CPU devices (worker processes)."""
from __future__ import annotations

import contextlib

import pytest

import numbax
from numbax._src.config import config
from numbax._src.parallel import pool


def cpu_devices(n: int, eager: bool = False):
    """A module-scoped autouse fixture: `n` virtual CPU devices for the module's tests (with
    jit disabled when `eager`: eager workers, no Numba compiles), the worker pool stopped and
    the device count restored after."""
    @pytest.fixture(scope="module", autouse=True)
    def devices():
        previous = config.num_cpu_devices
        config.update("num_cpu_devices", n)
        with numbax.disable_jit() if eager else contextlib.nullcontext():
            yield
        pool.shutdown_pool()
        config.update("num_cpu_devices", previous)
    return devices
