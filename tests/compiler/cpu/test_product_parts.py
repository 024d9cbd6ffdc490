"""Parts of a product's C for threads (runtime/product_parts.py): the grids and the counter."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit, prange

from numbax._src.compiler.cpu.runtime import product_parts


@njit(parallel=True)
def _take_all(counter, hits, threads):
    for _ in prange(threads):
        p = product_parts.take(counter)
        while p < hits.shape[0]:
            hits[p] += 1
            p = product_parts.take(counter)


@pytest.mark.parametrize("parts,threads", [(1, 1), (7, 3), (1000, 2), (5000, 8)])
def test_take_hands_each_part_to_exactly_one_thread(parts, threads):
    counter, hits = np.zeros(1, np.int64), np.zeros(parts, np.int64)
    _take_all(counter, hits, threads)
    assert (hits == 1).all()
    assert counter[0] == parts + threads  # every thread's last take found none left


def test_take_refuses_a_counter_it_cannot_update_atomically():
    @njit
    def take_from(counter):
        return product_parts.take(counter)

    with pytest.raises(Exception, match="take"):
        take_from(np.zeros(1, np.float64))


def test_thread_grid_splits_squares_both_ways():
    # A 1000^2 float32 product on AVX-512: 84 row strips, 32 column strips.
    assert product_parts.thread_grid(84, 32, 16) == (4, 4)
    assert product_parts.thread_grid(171, 16, 16) == (16, 1)  # tall: rows only
    assert product_parts.thread_grid(2, 100, 8) == (1, 8)     # wide: columns only
    assert product_parts.thread_grid(3, 3, 16) == (3, 3)      # never more parts than strips
    assert product_parts.thread_grid(84, 32, 1) == (1, 1)
    for rows, cols, parts in [(84, 32, 16), (7, 300, 6), (50, 50, 13)]:
        r, q = product_parts.thread_grid(rows, cols, parts)
        assert r * q <= parts and r <= rows and q <= cols


@pytest.mark.parametrize("rows,cols", [(171, 16), (66, 16), (84, 32), (167, 63), (11, 16),
                                       (3, 500), (1, 1), (40, 2)])
@pytest.mark.parametrize("threads", [1, 2, 7, 16])
def test_grid_gives_a_few_parts_a_thread_of_several_strips(rows, cols, threads):
    r, q = product_parts.grid(rows, cols, threads)
    assert 1 <= r <= rows and 1 <= q <= cols
    if threads == 1:
        assert (r, q) == (1, 1)
        return
    parts = r * q
    assert parts <= max(product_parts.PARTS_PER_THREAD) * threads
    row_strips, column_strips = -(-rows // r), -(-cols // q)
    if parts > threads:  # more parts than threads only where each keeps its strips
        assert min(row_strips, column_strips) >= product_parts.MIN_PART_STRIPS
    else:
        assert (r, q) == product_parts.thread_grid(rows, cols, threads)


def test_grid_of_the_batch_2048_products_has_four_parts_a_thread():
    # x @ W1 of the batch-2048 MLP step on AVX-512: 171 row strips, 16 column strips.
    r, q = product_parts.grid(171, 16, 16)
    assert r * q == 64
