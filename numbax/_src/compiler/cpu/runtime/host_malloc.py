"""glibc's malloc, told to keep freed memory for the next call rather than hand it back.

A compiled program allocates its intermediates and results with np.empty on every call and
frees them when the call ends. glibc serves blocks from 128 KiB up with a fresh mmap unless
its threshold has risen (it rises to the size of a freed mmapped block), and gives the top of
its heap back to the OS once more than twice that threshold is free there. Which of the two
happens depends on the order of earlier allocations, so the same jitted step either reused
warm pages or faulted in every page of every intermediate: the batch-2048 MLP step after a
batch-128 one took 24.4 ms with 5,355 page faults a step, 16.9 ms with none when it ran
first (2-core VM, 2026-11-28); batch 512 after 256 and 384, 7.4 against 4.7 ms. With the
thresholds fixed (blocks under MMAP_THRESHOLD from the heap, up to TRIM_THRESHOLD of free
heap kept) every order runs without faults.

`apply` runs at numbax's import, on Linux with glibc, unless NUMBAX_KEEP_FREED_MEMORY=0 or
the user has set malloc's own variables (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, or
glibc.malloc tunables in GLIBC_TUNABLES), whose choice stands. The cost: up to
TRIM_THRESHOLD of freed memory stays in the process (its resident size does not drop after a
large computation until the memory is reused); blocks of MMAP_THRESHOLD and more are still
mapped and unmapped per call, as before.
"""
from __future__ import annotations

import ctypes
import os
import platform

MMAP_THRESHOLD = 32 << 20  # glibc's largest dynamic threshold on 64-bit hosts
TRIM_THRESHOLD = 128 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (malloc.h)

# (mmap threshold, trim threshold) once set; None while glibc's defaults stand.
APPLIED: tuple[int, int] | None = None


def users_choice() -> bool:
    """Whether the environment already tunes glibc's malloc."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    return bool(os.environ.get("MALLOC_MMAP_THRESHOLD_") or os.environ.get(
        "MALLOC_TRIM_THRESHOLD_") or "glibc.malloc." in tunables)


def apply() -> None:
    global APPLIED
    if os.environ.get("NUMBAX_KEEP_FREED_MEMORY", "1").strip().lower() in ("0", "false", "no"):
        return
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc" or users_choice():
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    if mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD,
                                                             TRIM_THRESHOLD):
        APPLIED = (MMAP_THRESHOLD, TRIM_THRESHOLD)


apply()
