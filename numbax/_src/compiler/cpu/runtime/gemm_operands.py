"""The operands and scratch of gemm.py's products: flat views of matrices in the layouts the
register tile reads (C-contiguous or the transpose of one), read-only so Numba compiles one
copy of each kernel, and per-thread workspaces reused across calls."""
from __future__ import annotations

import threading

import numpy as np

_workspaces = threading.local()


def workspace(dtype, rows: int, size: int) -> np.ndarray:
    """A C-contiguous (rows, size) scratch array of `dtype`, kept per Python thread and
    reused: allocating and first-touching ~0.5 MB a thread on every call cost more than a
    small product takes."""
    cache = _workspaces.__dict__.setdefault("by_dtype", {})  # (this thread's)
    flat = cache.get(dtype)
    if flat is None or flat.size < rows * size:
        flat = cache[dtype] = np.empty(rows * size, dtype)
    return flat[:rows * size].reshape(rows, size)


def flat_operand(x: np.ndarray):
    """(read-only flat view, row stride, column stride) in elements of a 2D array that is
    C-contiguous or the transpose of a C-contiguous array; None for any other layout."""
    if x.flags.c_contiguous:
        return read_only(x.reshape(-1)), x.shape[1], 1
    if x.flags.f_contiguous:
        return read_only(x.T.reshape(-1)), 1, x.shape[0]
    return None


def read_only(x: np.ndarray) -> np.ndarray:
    """x, or a read-only view of it. Numba types read-only and writeable arrays apart, and
    numbax's own arrays are read-only while intermediate results are not: without this every
    dtype of a kernel compiled for each mix (the GEMM: four times, 6 s each on the 2-core VM)."""
    if x.flags.writeable:
        x = x.view()
        x.flags.writeable = False
    return x


def flat3(x: np.ndarray):
    """(read-only (batch, rows * columns) view, row stride, column stride) of a 3D array whose
    matrices are all C-contiguous, or all transposes of C-contiguous ones, in one block; None
    for any other layout."""
    matrix = x.shape[1] * x.shape[2]  # (not -1: numpy cannot infer it for a batch of 0)
    if x.flags.c_contiguous:
        return read_only(x.reshape(x.shape[0], matrix)), x.shape[2], 1
    transposed = np.transpose(x, (0, 2, 1))
    if transposed.flags.c_contiguous:
        return read_only(transposed.reshape(x.shape[0], matrix)), 1, x.shape[1]
    return None
