"""CUDA launch geometry (Config, smaller under the simulator, where every simulated thread is a
Python thread) and the integer and stride helpers kernels are sized and laid out with."""
from __future__ import annotations

import numpy as np


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def prod(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def strides(shape) -> list[int]:
    """Element strides of a C-contiguous array of `shape`."""
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def group_strides(shape: tuple[int, ...], groups) -> tuple[int, ...] | None:
    """Per group of dimensions (in the order given), the element stride of its flattened
    index in a contiguous array of `shape`, or None where a group is not evenly strided."""
    st = strides(shape)
    out = []
    for g in groups:
        dims = [d for d in g if shape[d] != 1]
        for a, b in zip(dims, dims[1:]):
            if st[a] != st[b] * shape[b]:
                return None
        out.append(st[dims[-1]] if dims else 0)
    return tuple(out)


class Config:
    """Launch geometry; smaller under the simulator (each simulated thread is a Python thread)."""

    def __init__(self, sim: bool) -> None:
        self.threads = 32 if sim else 256
        self.unroll = 4
        self.max_blocks = 1 << 20
        self.red_blocks = 4 if sim else 1024
        # matmul tiles (TY, TX threads, TM x TN register block, BK-deep slices): the large
        # one (float32, when it fills mm_sms SMs) and the small one; split-K keeps at
        # least mm_split_k of the contraction per block (cuda_matmul.choose_tiles)
        self.mm_big = (2, 2, 2, 2, 4) if sim else (16, 16, 8, 8, 8)
        self.mm_small = (2, 2, 1, 2, 2) if sim else (16, 16, 4, 4, 8)
        self.mm_sms = 2 if sim else 132
        self.mm_split_k = 4 if sim else 256
        # row groups (_render_rows): threads per block when a warp or less runs each row, the
        # most threads of a block-per-row kernel, the most row elements a thread keeps in
        # registers across the passes; the simulator has no warp shuffles (shared-memory
        # exchanges stand in for them there)
        self.row_threads = 64 if sim else 256
        self.row_block_max = 64 if sim else 256  # 256: 26-33% faster than 1024 on an H100
        self.row_slots = 4 if sim else 16
        self.shuffle = not sim
        # other reductions (_render_general_reduce): with few outputs, the reduced range is
        # split so about this many threads run (each at least red_split_min elements), then
        # a second kernel combines the splits in order (a warp per output on a card)
        self.red_split_threads = 256 if sim else 1 << 17
        self.red_split_min = 4 if sim else 32

    def key(self) -> tuple:
        return (("target", "cuda"), ("threads", self.threads), ("unroll", self.unroll),
                ("red_blocks", self.red_blocks),
                ("rows", self.row_threads, self.row_block_max, self.row_slots, self.shuffle),
                ("matmul", self.mm_big, self.mm_small, self.mm_sms, self.mm_split_k),
                ("red_split", self.red_split_threads, self.red_split_min),
                ("f32_sum_acc", "float64"))

    def blocks(self, n: int) -> int:
        """Blocks of a grid-stride launch over n elements, one per `threads` of them."""
        return max(1, min(cdiv(n, self.threads), self.max_blocks))
