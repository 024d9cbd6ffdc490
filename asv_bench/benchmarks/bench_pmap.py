"""pmap scaling: the same elementwise + row-reduction work split over 1, 2 and 4 virtual CPU
devices (worker processes), against numbax.jit of the whole array in this process.

The devices come from NUMBAX_NUM_CPU_DEVICES; it is set to 4 before numbax is imported when
this module is the first to import numbax, and `setup` raises numbax.config.num_cpu_devices to 4
otherwise (and restores it in `teardown`)."""
import os
import sys

if "numbax" not in sys.modules:  # asv's benchmark process: give numbax 4 devices from the start
    os.environ.setdefault("NUMBAX_NUM_CPU_DEVICES", "4")

import numpy as np  # noqa: E402

from .common import DTYPES, ready, sizes  # noqa: E402

DEVICES = [1, 2, 4]


def work(m):
    return lambda v: m.sum(m.tanh(v) * m.exp(-v * v) + m.sqrt(m.abs(v)), axis=-1)


def _setup_devices(obj):
    import numbax

    obj._saved = numbax.config.num_cpu_devices
    if obj._saved < max(DEVICES):
        numbax.config.update("num_cpu_devices", max(DEVICES))


def _restore_devices(obj):
    import numbax

    saved = getattr(obj, "_saved", None)
    if saved is not None and saved != numbax.config.num_cpu_devices:
        from numbax._src.parallel import pool

        numbax.config.update("num_cpu_devices", saved)
        pool.shutdown_pool()  # the 4 workers started for this benchmark


class PmapScaling:
    params = (DEVICES, DTYPES, sizes([2**18], [2**23]))
    param_names = ["devices", "dtype", "n"]
    timeout = 300

    def setup(self, devices, dtype, n):
        import numbax
        import numbax.numpy as jnp

        _setup_devices(self)
        x = np.random.default_rng(0).normal(size=n).astype(dtype)
        self.args = (x.reshape(devices, n // devices),)
        self.fn = numbax.pmap(work(jnp))
        ready(self.fn(*self.args))  # starts the workers and compiles

    def teardown(self, devices, dtype, n):
        _restore_devices(self)

    def time_pmap(self, devices, dtype, n):
        ready(self.fn(*self.args))


class PmapJitBaseline:
    """The same work as one numbax.jit call on the whole (1, n) array in this process."""

    params = (DTYPES, sizes([2**18], [2**23]))
    param_names = ["dtype", "n"]

    def setup(self, dtype, n):
        import numbax
        import numbax.numpy as jnp

        self.args = (np.random.default_rng(0).normal(size=(1, n)).astype(dtype),)
        self.fn = numbax.jit(work(jnp))
        ready(self.fn(*self.args))

    def time_jit(self, dtype, n):
        ready(self.fn(*self.args))
