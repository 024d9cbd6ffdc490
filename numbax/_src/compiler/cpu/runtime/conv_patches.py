"""The patch form of CPU convolutions (conv.py's fourth): few output positions, each a long
window, over few batch rows — a kernel gradient whose batch is the forward's input channels
(a CNN's first layer: one channel, 9 outputs, a 28 x 28 window over 64 images).

The register tile runs such a convolution one tap segment at a time into a tile of 12 rows of
which one or two are used, and the window lines (conv_kernels.lines_run) need 12 batch rows.
Here each output position's window is copied out of the padded input (the patches: N x Q x
C x K elements, small because Q is), and one batched matrix product per batch row multiplies
each input channel's kernel rows (O x K) by its patches (K x Q); the channels' partial
products are summed. 64 x 1 x 28 x 28 against a 64 x 16 x 28 x 28 cotangent (7.2M
multiply-adds): 2.96 ms in tiles on the 2-core VM, 0.32 so.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from numbax._src.lax.conv_numpy import dilate_and_pad

Shape = Any  # conv.Shape (conv.py imports this module)

# output positions (batch rows x window positions) up to which the form applies: each is a
# window-sized copy and a column of the products
POSITIONS_MAX = 64
# the batched small products' multiply-adds (OpenBLAS through np.matmul, 16 x 784 x 9 blocks
# on the VM), and the Python-level cost of each position's copy and each batch row's product
MACS_PER_NS = 36.0
POSITION_NS = 2000.0
ROW_NS = 20000.0


@dataclass
class PatchPlan:
    cost: float


def patch_cost(cv: Shape, copy_bytes_per_ns: float) -> float | None:
    """The form's estimated cost (ns), or None where it does not apply: groups, or more output
    positions than POSITIONS_MAX."""
    positions = cv.lhs(0) * math.prod(cv.out_spatial)
    if cv.groups_f != 1 or cv.groups_b != 1 or positions > POSITIONS_MAX:
        return None
    patches = positions * cv.lhs(1) * math.prod(cv.window)
    return (cv.macs / MACS_PER_NS + 2 * patches * cv.dtype.itemsize / copy_bytes_per_ns
            + math.prod(cv.out_spatial) * POSITION_NS + cv.lhs(0) * ROW_NS)


def patch_plan(cv: Shape, copy_bytes_per_ns: float) -> PatchPlan:
    return PatchPlan(patch_cost(cv, copy_bytes_per_ns))


def run_patches(cv: Shape, plan: PatchPlan, lhs: np.ndarray, rhs: np.ndarray,
                threads: int) -> tuple[np.ndarray, int]:
    """The convolution's channels-last result (N, Out..., O), and the one thread it ran on
    (BLAS's own threads take the products, which are small)."""
    x = dilate_and_pad(np.transpose(lhs, cv.specs[0]), cv.lhs_dilation, cv.padding)
    n, c, o = cv.lhs(0), cv.lhs(1), cv.rhs(0)
    taps = math.prod(cv.window)
    kernel = np.transpose(rhs, (cv.specs[1][1], cv.specs[1][0], *cv.specs[1][2:]))
    kernel = kernel.reshape(c, o, taps)  # (C, O, K): each channel's kernel rows
    starts = list(itertools.product(*(range(q) for q in cv.out_spatial)))
    patches = np.empty((n, len(starts), c, *cv.window), x.dtype)
    for at, q in enumerate(starts):
        window = tuple(slice(i * s, i * s + (k - 1) * r + 1, r) for i, s, k, r in zip(
            q, cv.strides, cv.window, cv.rhs_dilation))
        patches[:, at] = x[(slice(None), slice(None), *window)]
    patches = patches.reshape(n, len(starts), c, taps)
    out = np.empty((n, len(starts), o), x.dtype)
    for b in range(n):  # (C, O, K) @ (C, K, Q): a transposed view BLAS reads in place
        out[b] = np.matmul(kernel, patches[b].transpose(1, 2, 0)).sum(0).T
    return out.reshape(n, *cv.out_spatial, o), 1
