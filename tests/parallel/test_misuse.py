"""Inputs a careless user gives pmap and shard_map: axes out of range (errors, as JAX raises,
instead of wrapping around) and collectives over several mesh axes named in another order than
the mesh's, in the workers and in a body run in this process (numbers against numpy)."""
from functools import partial

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax.sharding import Mesh
from numbax.sharding import PartitionSpec as P
from tests.virtual_devices import cpu_devices

N = 4
four_devices = cpu_devices(N, eager=True)


# ----------------------------------------------------------------------------- axes in range


@pytest.mark.parametrize("body, match", [
    (lambda v: lax.all_gather(v, "i", axis=3), "all_gather: axis is 3"),
    (lambda v: lax.all_gather(v, "i", axis=-3), "all_gather: axis is -3"),
    (lambda v: lax.all_gather(v, "i", axis=1, tiled=True), "all_gather: axis is 1"),
    (lambda v: lax.all_gather(v[0], "i", tiled=True), "all_gather: axis is 0"),
    (lambda v: lax.psum_scatter(v, "i", scatter_dimension=5), "scatter_dimension is 5"),
    (lambda v: lax.all_to_all(v, "i", 5, 0), "split_axis is 5"),
    (lambda v: lax.all_to_all(v, "i", 0, 5), "concat_axis is 5"),
])
def test_collective_axes_out_of_range_raise_instead_of_wrapping(body, match):
    """Each used to wrap modulo the rank (axis=3 of a vector gathered at its end, a
    scatter_dimension of 5 scattered dimension 0); JAX raises ValueError."""
    with pytest.raises(ValueError, match=match):
        numbax.pmap(body, axis_name="i")(np.ones((N, N)))


def test_pmap_out_axes_out_of_range_raise_and_negative_ones_count_from_the_end():
    x = np.arange(N * 3.0).reshape(N, 3)
    with pytest.raises(ValueError, match=r"out_axes has 3 for output leaf 0, which has rank 2"):
        numbax.pmap(lambda v: v, out_axes=3)(x)
    with pytest.raises(ValueError, match=r"out_axes has -3"):
        numbax.pmap(lambda v: v, out_axes=-3)(x)
    np.testing.assert_array_equal(numbax.pmap(lambda v: v, out_axes=-1)(x), x.T)


def test_a_pmap_nested_in_a_pmap_is_refused_at_trace_time():
    """The inner pmap ran inside device 0's worker and failed there naming a device the
    worker lacks; JAX refuses nested pmaps with a ValueError."""
    inner = numbax.pmap(lambda w: lax.psum(w, "j"), axis_name="j")
    with pytest.raises(ValueError, match=r"pmap: called inside the body of a pmap or "
                                         r"shard_map over the axes \['i'\]"):
        numbax.pmap(lambda v: inner(v), axis_name="i")(np.ones((2, 2)))


# ----------------------------------------------------------------------------- several axes


def _blocks(x):
    """Device (a, b)'s block of x split P("a", "b") over the 2x2 mesh."""
    return {(a, b): x[2 * a:2 * a + 2, 2 * b:2 * b + 2] for a in range(2) for b in range(2)}


def _assemble(per_device):
    """The global result of out_specs P("a", "b") from each device's block."""
    return np.block([[per_device[0, 0], per_device[0, 1]], [per_device[1, 0], per_device[1, 1]]])


RING = [(0, 1), (1, 2), (2, 3), (3, 0)]


def _want(name, x):
    """numpy's values. Over ("b", "a"), all_gather and psum_scatter number the devices
    row-major over the names as given (b major); ppermute numbers them in the mesh's order
    (a major), whatever order the names come in (JAX's numbering)."""
    blocks = _blocks(x)
    given = [(a, b) for b in range(2) for a in range(2)]  # row-major over ("b", "a")
    if name == "all_gather":
        gathered = np.concatenate([blocks[d] for d in given])
        return _assemble({d: gathered for d in blocks})
    if name == "psum_scatter":
        total = np.concatenate([sum(blocks.values())] * 2)
        return _assemble({d: total[given.index(d)][None] for d in blocks})
    mesh_order = sorted(blocks)
    source = {dst: src for src, dst in RING}
    return _assemble({d: blocks[mesh_order[source[mesh_order.index(d)]]] for d in blocks})


BODIES = {
    "all_gather": lambda v: lax.all_gather(v, ("b", "a"), tiled=True),
    "psum_scatter": lambda v: lax.psum_scatter(jnp.concatenate([v, v]), ("b", "a"),
                                               tiled=True),
    "ppermute": lambda v: lax.ppermute(v, ("b", "a"), RING),
}


@pytest.mark.parametrize("here", [False, True])
@pytest.mark.parametrize("name", list(BODIES))
def test_collectives_over_two_axes_named_out_of_mesh_order(name, here, monkeypatch):
    """Run here (a body the workers cannot take), vmap's one-axis rules took a collective
    over ("b", "a") for one over a single axis: all_gather and ppermute raised IndexError,
    psum_scatter summed over one axis only. In the workers ppermute numbered the devices b
    major where JAX numbers them in mesh order."""
    if here:
        from numbax._src.parallel import shard_map as sm
        monkeypatch.setattr(sm, "_program", lambda jaxpr, api: None)
    mesh = Mesh(np.array(numbax.devices()[:N]).reshape(2, 2), ("a", "b"))
    x = np.arange(16.0).reshape(4, 4) ** 1.5
    f = partial(numbax.shard_map, mesh=mesh, in_specs=P("a", "b"), out_specs=P("a", "b"),
                check_vma=False)(BODIES[name])
    np.testing.assert_allclose(np.asarray(f(x)), _want(name, x), rtol=1e-12)


# ----------------------------------------------------------------------------- constants


def test_psum_of_a_constant_in_a_compiled_program_is_the_axis_size_times_it():
    """psum(1, "i") (JAX's idiom for the axis size) in a program compiled in the workers:
    constant folding ran the collective's impl at compile time, outside any call, and the
    worker raised NameError."""
    x = np.arange(N, dtype=np.float32)
    with numbax.disable_jit(False):
        got = numbax.pmap(lambda v: lax.psum(2.5, "i") + lax.pmax(v, "i"), axis_name="i")(x)
    np.testing.assert_array_equal(np.asarray(got), np.full(N, N * 2.5 + x.max()))


# ----------------------------------------------------------------------------- groups


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.bool_, np.float32])
@pytest.mark.parametrize("op", ["pmax", "pmin"])
def test_grouped_pmax_pmin_at_the_ends_of_every_dtype(op, dtype):
    """axis_index_groups: the members outside a group were masked with -max (int8: -127, so
    a group of -128s gave -127; uint8 and bool raised) instead of the dtype's lowest value."""
    if dtype is np.bool_:
        x = np.array([False, False, True, False]) if op == "pmax" else \
            np.array([True, True, False, True])
    else:
        info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else np.finfo(dtype)
        end = info.min if op == "pmax" else info.max
        x = np.array([end, end, 5, 3], dtype)
    groups = [[0, 1], [2, 3]]
    got = numbax.pmap(lambda v: getattr(lax, op)(v, "i", axis_index_groups=groups),
                      axis_name="i")(x)
    reduce = np.max if op == "pmax" else np.min
    want = np.array([reduce(x[g]) for g in groups for _ in g], dtype)
    assert np.asarray(got).dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)
