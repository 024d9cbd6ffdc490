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


def test_reductions_take_a_list_of_axis_names_as_jax_does():
    x = np.arange(8.0).reshape(2, 4)
    inner = lambda f: numbax.vmap(numbax.vmap(f, axis_name="j"), axis_name="i")  # noqa: E731
    np.testing.assert_array_equal(inner(lambda v: lax.psum(v, ["i", "j"]))(x),
                                  np.full((2, 4), x.sum()))
    np.testing.assert_allclose(inner(lambda v: lax.pmean(v, ["j"]))(x),
                               np.broadcast_to(x.mean(1, keepdims=True), (2, 4)))
    np.testing.assert_array_equal(inner(lambda v: lax.pmax(v, ["i"]))(x),
                                  np.broadcast_to(x.max(0), (2, 4)))
    np.testing.assert_array_equal(inner(lambda v: lax.pmin(v, ["i", "j"]))(x),
                                  np.full((2, 4), x.min()))


def test_unbound_axis_name_is_a_clear_error():
    with pytest.raises(NameError, match="unbound axis name"):
        lax.psum(np.ones(3), "nope")


def test_redistributing_collectives_beyond_jax_s_reach():
    """Cases JAX 0.10.2 itself fails on: a negative concat_axis and pbroadcast's gradient."""
    y = np.arange(48.0).reshape(4, 4, 3)
    last = numbax.vmap(lambda v: lax.all_to_all(v, "i", 0, -1), axis_name="i")(y)
    np.testing.assert_array_equal(
        last, numbax.vmap(lambda v: lax.all_to_all(v, "i", 0, 1), axis_name="i")(y))
    x = np.arange(24.0).reshape(4, 3, 2)
    g = numbax.grad(lambda w: (numbax.vmap(lambda v: lax.pbroadcast(v, "i", 1),
                                           axis_name="i")(w) ** 2).sum())(x)
    want = np.zeros_like(x)
    want[1] = 2 * 4 * x[1]  # all four members hold x[1]
    np.testing.assert_allclose(g, want)
    assert numbax.vmap(lambda v: lax.pcast(v, "i", to="varying"), axis_name="i")(x).shape == (
        4, 3, 2)
    with pytest.raises(ValueError, match="Allowed `to` values"):
        numbax.vmap(lambda v: lax.pcast(v, "i", to="sideways"), axis_name="i")(x)
    with pytest.raises(NameError, match="unbound axis name"):
        lax.all_to_all(x, "j", 0, 0)
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        numbax.vmap(lambda v: lax.pswapaxes(v, "i", 0, axis_index_groups=[[0, 1], [2, 3]]),
                    axis_name="i")(y)


GROUPS = [[0, 2], [1, 3]]
X = np.arange(8.0).reshape(4, 2)


def _group_reduce(x, groups, reduce):
    out = np.empty_like(x)
    for g in groups:
        out[g] = reduce(x[g], axis=0)
    return out


def test_axis_index_groups_under_vmap():
    """JAX 0.10.2 refuses axis_index_groups under vmap; numbax reduces within each group."""
    f = lambda op: numbax.vmap(lambda v: op(v, "i", axis_index_groups=GROUPS),  # noqa: E731
                               axis_name="i")(X)
    np.testing.assert_allclose(f(lax.psum), _group_reduce(X, GROUPS, np.sum))
    np.testing.assert_allclose(f(lax.pmax), _group_reduce(X, GROUPS, np.max))
    np.testing.assert_allclose(f(lax.pmin), _group_reduce(X, GROUPS, np.min))
    uneven = [[0], [1, 2, 3]]
    got = numbax.vmap(lambda v: lax.pmean(v, "i", axis_index_groups=uneven), axis_name="i")(X)
    np.testing.assert_allclose(got, _group_reduce(X, uneven, np.mean))
    with pytest.raises(ValueError, match="exactly once"):
        numbax.vmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1]]), axis_name="i")(X)


def test_axis_index_groups_under_pmap(four_devices):
    got = numbax.pmap(lambda v: lax.psum(v, "i", axis_index_groups=GROUPS), axis_name="i")(X)
    np.testing.assert_allclose(got, _group_reduce(X, GROUPS, np.sum))
