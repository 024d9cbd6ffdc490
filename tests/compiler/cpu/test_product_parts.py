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


def test_compiled_loops_choose_the_grid_thread_grid_chooses():
    # grid_in_loop is the same search compiled, for loop bodies whose thread count is known
    # only when they run: every grid the driver's products would get, a loop's products get
    for rows in (1, 2, 3, 7, 16, 84, 171):
        for cols in (1, 2, 5, 32, 63):
            for parts in (1, 2, 3, 8, 16, 64):
                assert tuple(product_parts.grid_in_loop(rows, cols, parts)) == \
                    product_parts.thread_grid(rows, cols, parts), (rows, cols, parts)


@pytest.mark.parametrize("rows,cols", [(171, 16), (66, 16), (84, 32), (167, 63), (11, 16),
                                       (3, 500), (1, 1), (40, 2)])
@pytest.mark.parametrize("threads", [1, 2, 7, 16])
@pytest.mark.parametrize("in_place_below,a_transposed", [(4, False), (0, False), (4, True)])
def test_candidates_are_the_cheapest_grid_of_each_kind(rows, cols, threads, in_place_below,
                                                       a_transposed):
    grids = product_parts.model_grids(rows, cols, threads, in_place_below, a_transposed)
    timed = product_parts.candidates(rows, cols, threads, in_place_below, a_transposed)
    # what the trial times: the model's grids, then those of the column split (one part a
    # thread) and thread_grid's that they lack, each once
    extras = [] if threads == 1 else [(1, min(threads, cols)),
                                      product_parts.thread_grid(rows, cols, threads)]
    added = [g for i, g in enumerate(extras) if g not in grids and g not in extras[:i]]
    assert timed == (*grids, *added)
    if threads == 1:
        assert grids == ((1, 1),)
        return
    assert 1 <= len(grids) <= product_parts.CANDIDATES and len(set(grids)) == len(grids)

    def cost(g):
        return product_parts.estimate(rows, cols, *g, threads, in_place_below, a_transposed)

    def kind(g):
        per = next(i for i, p in enumerate((1, 2, 4, product_parts.MAX_PARTS_PER_THREAD))
                   if g[0] * g[1] <= p * threads)
        return per, -(-rows // g[0]) < in_place_below

    assert [cost(g) for g in grids] == sorted(cost(g) for g in grids)
    assert len({kind(g) for g in grids}) == len(grids)
    def fewest(parts, strips):  # no fewer parts give parts of this many strips
        return parts == 1 or -(-strips // (parts - 1)) != -(-strips // parts)

    # every grid whose parts differ from a grid's of fewer parts (more parts of the same
    # size only add rounds)
    every = [(r, q) for r in range(1, rows + 1) for q in range(1, cols + 1)
             if r * q <= product_parts.MAX_PARTS_PER_THREAD * threads
             and fewest(r, rows) and fewest(q, cols)]
    kinds = {kind(g) for g in every}
    # each kind's cheapest grid is there, unless CANDIDATES cheaper kinds filled the list
    for k in kinds:
        cheapest = min(cost(g) for g in every if kind(g) == k)
        assert any(kind(g) == k and cost(g) == cheapest for g in grids) or \
            (len(grids) == product_parts.CANDIDATES and cheapest >= cost(grids[-1]))


def test_estimate_charges_strips_parts_and_the_last_round():
    # 4 x 2 parts of 171 x 16 strips on 16 threads: parts of 43 x 8 strips, B packed.
    part = 43 * 8 + 43 * product_parts.A_STRIP + 8 * product_parts.B_PACKED_STRIP \
        + product_parts.PART
    assert product_parts.estimate(171, 16, 4, 2, 16, 4, False) == pytest.approx(
        part * (product_parts.ROUND_SHARE + (1 - product_parts.ROUND_SHARE) * 8 / 16))
    # 86 x 1 parts of 2 x 16 strips: B read in place, 6 rounds of parts (5.375 on average)
    part = 2 * 16 * product_parts.B_IN_PLACE_TILE + 2 * product_parts.A_STRIP \
        + 16 * product_parts.B_IN_PLACE_STRIP + product_parts.PART
    assert product_parts.estimate(171, 16, 86, 1, 16, 4, False) == pytest.approx(
        part * (product_parts.ROUND_SHARE * 6 + (1 - product_parts.ROUND_SHARE) * 86 / 16))


def test_tuned_grid_times_each_candidate_then_keeps_the_fastest(monkeypatch):
    monkeypatch.setattr(product_parts, "_trials", {})
    grids = ((8, 2), (4, 4), (16, 1))
    pad = [5.0] * (product_parts.SAMPLES - 2)
    seconds = {(8, 2): [3.0, 2.0, *pad], (4, 4): [1.5, 9.0, *pad], (16, 1): [2.5, 1.8, *pad]}
    order = []
    for _ in range(product_parts.SAMPLES * len(grids)):
        grid, trial = product_parts.tuned_grid("shape", grids)
        order.append(grid)
        product_parts.record(trial, grid, seconds[grid].pop(0))
    assert order == list(grids) * product_parts.SAMPLES  # in turns: slow minutes hit all
    for _ in range(3):
        grid, trial = product_parts.tuned_grid("shape", grids)
        assert grid == (4, 4)  # its fastest call (1.5) was the fastest
    # another shape starts its own trial; a single grid needs none
    assert product_parts.tuned_grid("other", grids)[0] == (8, 2)
    assert product_parts.tuned_grid("one", ((1, 1),)) == ((1, 1), None)


def test_the_kept_grid_is_the_fastest_so_far_while_the_others_are_tried_now_and_then(
        monkeypatch):
    """After the trial, one call in EXPLORE_EVERY runs the least-tried candidate until each has
    had EXPLORE_SAMPLES calls; the kept grid is always the one with the fastest call so far,
    so a grid whose trial calls were all disturbed is kept once it runs undisturbed."""
    monkeypatch.setattr(product_parts, "_trials", {})
    grids = ((8, 2), (4, 4), (16, 1))

    def run(seconds_of):
        grid, trial = product_parts.tuned_grid("shape", grids)
        product_parts.record(trial, grid, seconds_of[grid])
        return grid

    disturbed = {(8, 2): 2.0, (4, 4): 1.0, (16, 1): 1.5}  # (8, 2)'s trial calls ran slow
    for _ in range(product_parts.SAMPLES * len(grids)):
        run(disturbed)
    undisturbed = {(8, 2): 0.5, (4, 4): 1.0, (16, 1): 1.5}
    # (4, 4) kept until the next EXPLORE_EVERY-th call tries the least-tried grid, (8, 2)
    trial = product_parts._trials["shape"]
    assert trial.kept == (4, 4)
    every, done = product_parts.EXPLORE_EVERY, trial.turn
    seen = [run(undisturbed) for _ in range(-(-done // every) * every - done + 2)]
    assert seen == [(4, 4)] * (len(seen) - 2) + [(8, 2), (8, 2)]
    assert trial.kept == (8, 2) and trial.best == [0.5, 1.0, 1.5]
    # each other grid is tried up to EXPLORE_SAMPLES times, one call in EXPLORE_EVERY
    calls = len(grids) * product_parts.EXPLORE_SAMPLES * product_parts.EXPLORE_EVERY
    seen = [run(undisturbed) for _ in range(calls)]
    assert trial.calls[1] == trial.calls[2] == product_parts.EXPLORE_SAMPLES
    assert seen[-product_parts.EXPLORE_EVERY:] == [(8, 2)] * product_parts.EXPLORE_EVERY
    assert len(seen) - seen.count((8, 2)) <= calls // product_parts.EXPLORE_EVERY


def test_tuned_grid_forgets_every_shape_past_its_bound(monkeypatch):
    monkeypatch.setattr(product_parts, "_trials", {})
    monkeypatch.setattr(product_parts, "TRIALS_MAX", 3)
    for key in range(3):
        product_parts.tuned_grid(key, ((1, 2), (2, 1)))
    assert len(product_parts._trials) == 3
    product_parts.tuned_grid("new", ((1, 2), (2, 1)))
    assert list(product_parts._trials) == ["new"]
