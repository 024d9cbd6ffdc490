"""Collectives of lax/parallel.py under vmap with axis names and under pmap (4 virtual CPU
devices): values against numpy reductions over the mapped axis."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import lax
from numbax._src.config import config
from numbax._src.parallel import pool

BOOLS = np.array([[True, False], [True, True], [False, False], [True, False]])


def test_psum_and_pmean_count_booleans_under_vmap():
    total = numbax.vmap(lambda b: lax.psum(b, "i"), axis_name="i")(BOOLS)
    assert total.dtype == np.int32
    np.testing.assert_array_equal(total, np.broadcast_to(BOOLS.sum(0), (4, 2)))
    mean = numbax.vmap(lambda b: lax.pmean(b, "i"), axis_name="i")(BOOLS)
    np.testing.assert_allclose(mean, np.broadcast_to(BOOLS.mean(0), (4, 2)))
    nested = numbax.vmap(numbax.vmap(lambda b: lax.psum(b, ("i", "j")), axis_name="j"),
                         axis_name="i")(BOOLS)
    np.testing.assert_array_equal(nested, np.full((4, 2), BOOLS.sum()))


@pytest.fixture(scope="module")
def four_devices():
    previous = config.num_cpu_devices
    config.update("num_cpu_devices", 4)
    with numbax.disable_jit():  # eager workers: no Numba compiles
        yield
    pool.shutdown_pool()
    config.update("num_cpu_devices", previous)


def test_psum_and_pmean_count_booleans_under_pmap(four_devices):
    mean = numbax.pmap(lambda b: lax.pmean(b, "i"), axis_name="i")(BOOLS)
    np.testing.assert_allclose(mean, np.broadcast_to([0.75, 0.25], (4, 2)))
    total = numbax.pmap(lambda b: lax.psum(b, "i"), axis_name="i")(BOOLS)
    np.testing.assert_array_equal(total, np.broadcast_to([3, 1], (4, 2)))


def test_unbound_axis_name_is_a_clear_error():
    with pytest.raises(NameError, match="unbound axis name"):
        lax.psum(np.ones(3), "nope")
