"""lax.all_to_all over several axis names: shard_map over both axes of a 2x2 mesh (in the
workers, one exchange; and run here, one exchange per name), nested vmaps, a vmap inside pmap,
its gradient, and its errors. Expected values come from a numpy loop (`_want`), which agrees
with JAX 0.10.2 (one of its results is kept below as literals): members are numbered
row-major over the names in the order given, the first name outermost."""
from functools import partial

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax.sharding import Mesh
from numbax.sharding import PartitionSpec as P
from tests.virtual_devices import cpu_devices

four_devices = cpu_devices(4, eager=True)

MESH_ORDER = [(a, b) for a in range(2) for b in range(2)]  # rank = 2 * i + j


def _position(names: tuple, device: tuple) -> int:
    """The device's index over `names`, row-major in the order given."""
    coord = dict(zip(("i", "j"), device))
    return 2 * coord[names[0]] + coord[names[1]]


def _want(blocks: list, names: tuple, split: int, concat: int, tiled: bool) -> list:
    """Each device's result: piece `me` of every sender's block, in sender order over the
    names, stacked (or concatenated, tiled) at concat."""
    senders = sorted(range(4), key=lambda r: _position(names, MESH_ORDER[r]))
    outs = []
    for r in range(4):
        me = _position(names, MESH_ORDER[r])
        pieces = [np.split(blocks[s], 4, axis=split)[me] for s in senders]
        if tiled:
            outs.append(np.concatenate(pieces, axis=concat))
        else:
            outs.append(np.stack([np.squeeze(p, split) for p in pieces], axis=concat))
    return outs


# (block shape, split_axis, concat_axis, tiled)
CASES = [
    ((4, 6), 0, 1, True),
    ((4, 6), 0, 1, False),
    ((2, 4, 3), 1, 2, False),
    ((2, 3, 8), -1, 0, True),
    ((4, 5), 0, 0, False),
    ((8, 2), 0, -1, True),
]


def _mesh() -> Mesh:
    return Mesh(np.array(numbax.devices()[:4]).reshape(2, 2), ("i", "j"))


def _body(names, split, concat, tiled):
    return lambda b: lax.all_to_all(b, names, split, concat, tiled=tiled)


@pytest.mark.parametrize("here", [False, True])
@pytest.mark.parametrize("names", [("i", "j"), ("j", "i")])
@pytest.mark.parametrize("shape, split, concat, tiled", CASES)
def test_shard_map_over_both_mesh_axes(shape, split, concat, tiled, names, here, monkeypatch):
    if here:  # a body the workers cannot take runs here, vmapped over the mesh axes
        from numbax._src.parallel import shard_map as sm
        monkeypatch.setattr(sm, "_program", lambda jaxpr, api: None)
    x = np.arange(4 * np.prod(shape), dtype=np.float64).reshape(4 * shape[0], *shape[1:])
    blocks = np.split(x, 4)
    f = numbax.shard_map(_body(names, split, concat, tiled), mesh=_mesh(),
                         in_specs=P(("i", "j")), out_specs=P(("i", "j")))
    want = np.concatenate(_want(blocks, names, split % len(shape), concat % len(shape), tiled))
    np.testing.assert_array_equal(np.asarray(f(x)), want)


# JAX 0.10.2: shard_map over the 2x2 mesh of all_to_all(b, ("j", "i"), 0, 1, tiled=True) on
# arange(96.).reshape(16, 6), split P(("i", "j")): row r of the result, by its first columns
JAX_J_MAJOR_ROWS = [[0.0, 48.0, 24.0, 72.0], [12.0, 60.0, 36.0, 84.0],
                    [6.0, 54.0, 30.0, 78.0], [18.0, 66.0, 42.0, 90.0]]


def test_names_out_of_mesh_order_number_the_members_as_jax_does():
    x = np.arange(96.0).reshape(16, 6)
    f = numbax.shard_map(_body(("j", "i"), 0, 1, True), mesh=_mesh(), in_specs=P(("i", "j")),
                         out_specs=P(("i", "j")))
    np.testing.assert_array_equal(np.asarray(f(x))[:, ::6], JAX_J_MAJOR_ROWS)


def test_compiled_body_in_the_workers():
    x = np.arange(96.0).reshape(16, 6)
    f = numbax.shard_map(lambda b: lax.all_to_all(b * 2.0, ("i", "j"), 0, 1, tiled=True) + 1,
                         mesh=_mesh(), in_specs=P(("i", "j")), out_specs=P(("i", "j")))
    with numbax.disable_jit(False):
        got = numbax.jit(f)(x)
    want = np.concatenate(_want(np.split(x * 2.0, 4), ("i", "j"), 0, 1, True)) + 1
    np.testing.assert_array_equal(np.asarray(got), want)


def test_gradient_is_the_inverse_exchange():
    """all_to_all permutes elements: the gradient of sum(all_to_all(x) * c) puts each c
    where its element came from."""
    x = np.arange(96.0).reshape(16, 6)
    c = np.linspace(-1.0, 2.0, 96).reshape(4, 24)
    f = numbax.shard_map(_body(("j", "i"), 0, 1, True), mesh=_mesh(), in_specs=P(("i", "j")),
                         out_specs=P(("i", "j")))
    grad = numbax.grad(lambda v: jnp.sum(f(v) * c))(x)
    moved = np.concatenate(_want(np.split(x, 4), ("j", "i"), 0, 1, True))  # x's values
    want = np.empty_like(x)
    want.flat[moved.astype(int).ravel()] = c.ravel()
    np.testing.assert_array_equal(np.asarray(grad), want)


# ----------------------------------------------------------------------------- vmap, pmap


def _per_member(y: np.ndarray, names: tuple, split: int, concat: int, tiled: bool):
    """The expected result of nested maps over ("i", "j") of size 2 x 2 on y[i, j]."""
    blocks = [y[a, b] for a, b in MESH_ORDER]
    outs = _want(blocks, names, split, concat, tiled)
    return np.stack(outs).reshape(2, 2, *outs[0].shape)


@pytest.mark.parametrize("names, split, concat, tiled", [
    (("i", "j"), 0, 0, False), (("j", "i"), 0, 1, False), (("i", "j"), 1, 0, True),
    (("j", "i"), -1, 0, True)])
def test_nested_vmaps(names, split, concat, tiled):
    y = np.arange(2 * 2 * 4 * 8.0).reshape(2, 2, 4, 8)
    inner = numbax.vmap(_body(names, split, concat, tiled), axis_name="j")
    got = numbax.vmap(inner, axis_name="i")(y)
    np.testing.assert_array_equal(np.asarray(got), _per_member(y, names, split % 2,
                                                               concat % 2, tiled))


@pytest.mark.parametrize("names, tiled", [(("i", "j"), False), (("j", "i"), True)])
def test_vmap_inside_pmap(names, tiled):
    """One name is pmap's (the workers exchange), the other a vmap's inside it."""
    y = np.arange(2 * 2 * 4 * 3.0).reshape(2, 2, 4, 3)
    got = numbax.pmap(numbax.vmap(_body(names, 0, 1, tiled), axis_name="j"), axis_name="i")(y)
    np.testing.assert_array_equal(np.asarray(got), _per_member(y, names, 0, 1, tiled))


# JAX 0.10.2: pmap(vmap(lambda b: all_to_all(b, ("i", "j"), 0, 0), axis_name="j"),
# axis_name="i") of arange(48.).reshape(2, 2, 4, 3): [i, j, :, 0]
JAX_PMAP_VMAP = [[[0.0, 12.0, 24.0, 36.0], [3.0, 15.0, 27.0, 39.0]],
                 [[6.0, 18.0, 30.0, 42.0], [9.0, 21.0, 33.0, 45.0]]]


def test_vmap_inside_pmap_matches_jax():
    y = np.arange(48.0).reshape(2, 2, 4, 3)
    got = numbax.pmap(numbax.vmap(_body(("i", "j"), 0, 0, False), axis_name="j"),
                      axis_name="i")(y)
    np.testing.assert_array_equal(np.asarray(got)[..., 0], JAX_PMAP_VMAP)


# ----------------------------------------------------------------------------- errors


def test_split_axis_must_match_the_combined_size():
    f = partial(numbax.shard_map, mesh=_mesh(), in_specs=P(("i", "j")),
                out_specs=P(("i", "j")))
    with pytest.raises(ValueError, match=r"mapped axis \('i', 'j'\) to divide"):
        f(_body(("i", "j"), 0, 1, True))(np.ones((8, 3)))
    with pytest.raises(ValueError, match=r"mapped axis \('i', 'j'\) to equal"):
        f(_body(("i", "j"), 1, 0, False))(np.ones((8, 2)))


def test_no_names_is_an_error():
    with pytest.raises(ValueError, match=r"axis_name is \(\), expected an axis name"):
        numbax.vmap(lambda b: lax.all_to_all(b, (), 0, 0), axis_name="i")(np.ones((2, 2)))
