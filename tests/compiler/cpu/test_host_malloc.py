"""host_malloc: with numbax imported, a repeated pattern of large temporaries (a jitted step's
intermediates) reuses warm memory instead of faulting in fresh pages every call; the user's
opt-out and glibc's own variables leave malloc as it was."""
from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only")

# Steps of six 1 MiB temporaries, then steps of six 3 MiB ones (a batch-128 step, then a
# batch-2048 one): page faults per later step, after two steps to warm up.
PATTERN = """
import resource, numpy as np
import numbax
from numbax._src.compiler.cpu.runtime import host_malloc
def step(n):
    arrays = [np.empty(n, np.uint8) for _ in range(6)]
    for a in arrays:
        a.fill(1)
for _ in range(5):
    step(1 << 20)
for _ in range(2):
    step(3 << 20)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    step(3 << 20)
print(host_malloc.APPLIED is not None,
      (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20)
"""


def _run(**env):
    full = {k: v for k, v in os.environ.items()
            if not k.startswith("MALLOC_") and k != "NUMBAX_KEEP_FREED_MEMORY"}
    full.update(env)
    out = subprocess.run([sys.executable, "-c", PATTERN], env=full, capture_output=True,
                         text=True, check=True).stdout.split()
    return out[0] == "True", float(out[1])


def test_repeated_temporaries_fault_no_pages():
    applied, faults = _run()
    assert applied
    # 18 MiB of temporaries a step would be ~4,600 faults of 4 KiB pages each time.
    assert faults < 50, faults


def test_opt_out_and_the_users_own_malloc_settings_stand():
    assert _run(NUMBAX_KEEP_FREED_MEMORY="0")[0] is False
    assert _run(MALLOC_TRIM_THRESHOLD_="1000000")[0] is False
    assert _run(GLIBC_TUNABLES="glibc.malloc.mmap_threshold=65536")[0] is False
