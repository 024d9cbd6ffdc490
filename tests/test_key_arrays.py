"""Typed key arrays through numpy/lax structural functions (numbax/_src/lax/key_arrays.py).

Expected values come from the raw key data: each structural op must equal numpy's op applied to
each uint32 word of `random.key_data(keys)`, and JAX 0.10.2's recorded outputs where noted.
"""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax, random

# JAX 0.10.2: key_data(random.split(random.key(0), 4)) and of random.split(random.key(1), 4)
KEYS0 = np.array([[1797259609, 2579123966], [928981903, 3453687069],
                  [4146024105, 2718843009], [2467461003, 3840466878]], np.uint32)
KEYS1 = np.array([[507451445, 1853169794], [1948878966, 4237131848],
                  [2441914641, 3819641963], [3568232559, 2761185182]], np.uint32)
MASK = np.array([True, False, True, False])


def _keys() -> tuple:
    return random.split(random.key(0), 4), random.split(random.key(1), 4)


def _data(x) -> np.ndarray:
    assert x.dtype == random.key(0).dtype, f"expected a key array, got {x.dtype}"
    return np.asarray(random.key_data(x))


def _per_word(fn, *raws) -> np.ndarray:
    """numpy's fn on each uint32 word, joined on a trailing axis (the key data's layout)."""
    return np.stack([fn(*(r[..., i] for r in raws)) for i in range(2)], axis=-1)


def test_split_matches_jax_recorded_data():
    keys, other = _keys()
    np.testing.assert_array_equal(_data(keys), KEYS0)
    np.testing.assert_array_equal(_data(other), KEYS1)


# (name, numbax op on key arrays (k, o), numpy op on one uint32 word per operand (k, o))
STRUCTURAL = [
    ("reshape", lambda k, o: jnp.reshape(k, (2, 2)), lambda k, o: k.reshape(2, 2)),
    ("ravel", lambda k, o: jnp.ravel(jnp.reshape(k, (2, 2)).T),
     lambda k, o: k.reshape(2, 2).T.ravel()),
    ("stack", lambda k, o: jnp.stack([k, o]), lambda k, o: np.stack([k, o])),
    ("stack_axis_last", lambda k, o: jnp.stack([k, o], axis=-1), lambda k, o: np.stack([k, o], -1)),
    ("concatenate", lambda k, o: jnp.concatenate([k, o]), lambda k, o: np.concatenate([k, o])),
    ("hstack", lambda k, o: jnp.hstack([k, o]), lambda k, o: np.hstack([k, o])),
    ("vstack", lambda k, o: jnp.vstack([k, o]), lambda k, o: np.vstack([k, o])),
    ("column_stack", lambda k, o: jnp.column_stack([k, o]), lambda k, o: np.column_stack([k, o])),
    ("where", lambda k, o: jnp.where(MASK, k, o), lambda k, o: np.where(MASK, k, o)),
    ("where_broadcast", lambda k, o: jnp.where(MASK, k, o[0]),
     lambda k, o: np.where(MASK, k, o[0])),
    ("select_n", lambda k, o: lax.select_n(MASK, k, o), lambda k, o: np.where(MASK, o, k)),
    ("lax_select", lambda k, o: lax.select(MASK, k, o), lambda k, o: np.where(MASK, k, o)),
    ("take", lambda k, o: jnp.take(k, np.array([3, 0, 0])), lambda k, o: k[[3, 0, 0]]),
    ("take_along_axis",
     lambda k, o: jnp.take_along_axis(jnp.reshape(k, (2, 2)), np.array([[1, 0], [0, 0]]), 1),
     lambda k, o: np.take_along_axis(k.reshape(2, 2), np.array([[1, 0], [0, 0]]), 1)),
    ("expand_dims", lambda k, o: jnp.expand_dims(k, 0), lambda k, o: k[None]),
    ("squeeze", lambda k, o: jnp.squeeze(k[None, :, None]), lambda k, o: k),
    ("broadcast_to", lambda k, o: jnp.broadcast_to(k, (3, 4)),
     lambda k, o: np.broadcast_to(k, (3, 4))),
    ("transpose", lambda k, o: jnp.transpose(jnp.reshape(k, (2, 2))),
     lambda k, o: k.reshape(2, 2).T),
    ("swapaxes", lambda k, o: jnp.swapaxes(jnp.reshape(k, (1, 4)), 0, 1),
     lambda k, o: k.reshape(4, 1)),
    ("moveaxis", lambda k, o: jnp.moveaxis(jnp.reshape(k, (2, 2, 1)), 0, -1),
     lambda k, o: np.moveaxis(k.reshape(2, 2, 1), 0, -1)),
    ("flip", lambda k, o: jnp.flip(k), lambda k, o: k[::-1]),
    ("flip_last_axis", lambda k, o: jnp.flip(jnp.reshape(k, (2, 2)), -1),
     lambda k, o: k.reshape(2, 2)[:, ::-1]),
    ("roll", lambda k, o: jnp.roll(k, 1), lambda k, o: np.roll(k, 1)),
    ("roll_2d", lambda k, o: jnp.roll(jnp.reshape(k, (2, 2)), 1),
     lambda k, o: np.roll(k.reshape(2, 2), 1)),
    ("rot90", lambda k, o: jnp.rot90(jnp.reshape(k, (2, 2))),
     lambda k, o: np.rot90(k.reshape(2, 2))),
    ("tile", lambda k, o: jnp.tile(k, 2), lambda k, o: np.tile(k, 2)),
    ("repeat", lambda k, o: jnp.repeat(k, 2), lambda k, o: np.repeat(k, 2)),
    ("repeat_counts", lambda k, o: jnp.repeat(k, np.array([1, 2, 0, 1])),
     lambda k, o: np.repeat(k, [1, 2, 0, 1])),
    ("copy", lambda k, o: jnp.copy(k), lambda k, o: k),
    ("asarray", lambda k, o: jnp.asarray(k), lambda k, o: k),
    ("array_of_list", lambda k, o: jnp.array([k[0], o[1]]), lambda k, o: np.array([k[0], o[1]])),
    ("zeros_like", lambda k, o: jnp.zeros_like(k), lambda k, o: np.zeros_like(k)),
    ("ones_like", lambda k, o: jnp.ones_like(k), lambda k, o: np.ones_like(k)),
    ("full_like_key", lambda k, o: jnp.full_like(k, o[2]), lambda k, o: np.full_like(k, o[2])),
    ("append", lambda k, o: jnp.append(k, o), lambda k, o: np.append(k, o)),
    ("insert", lambda k, o: jnp.insert(k, 1, o[0]), lambda k, o: np.insert(k, 1, o[0])),
    ("delete", lambda k, o: jnp.delete(k, 1), lambda k, o: np.delete(k, 1)),
    ("triu", lambda k, o: jnp.triu(jnp.reshape(k, (2, 2))), lambda k, o: np.triu(k.reshape(2, 2))),
    ("compress", lambda k, o: jnp.compress(MASK, k), lambda k, o: k[MASK]),
    ("choose", lambda k, o: jnp.choose(np.array([0, 1, 0, 1]), [k, o]),
     lambda k, o: np.choose([0, 1, 0, 1], [k, o])),
    ("index_ellipsis", lambda k, o: jnp.reshape(k, (2, 2))[..., 0],
     lambda k, o: k.reshape(2, 2)[..., 0]),
    ("index_array", lambda k, o: k[np.array([2, 0])], lambda k, o: k[[2, 0]]),
    ("index_mask", lambda k, o: k[MASK], lambda k, o: k[MASK]),
    ("at_set", lambda k, o: k.at[1].set(o[0]), lambda k, o: np.where(np.arange(4) == 1, o[0], k)),
    ("at_set_slice", lambda k, o: k.at[1:3].set(o[:2]),
     lambda k, o: np.concatenate([k[:1], o[:2], k[3:]])),
    ("at_get", lambda k, o: k.at[2].get(), lambda k, o: k[2]),
    ("lax_reshape", lambda k, o: lax.reshape(k, (2, 2)), lambda k, o: k.reshape(2, 2)),
    ("lax_concatenate", lambda k, o: lax.concatenate([k, o], 0),
     lambda k, o: np.concatenate([k, o])),
    ("lax_broadcast_in_dim", lambda k, o: lax.broadcast_in_dim(k, (3, 4), (1,)),
     lambda k, o: np.broadcast_to(k, (3, 4))),
    ("lax_rev", lambda k, o: lax.rev(k, (0,)), lambda k, o: k[::-1]),
    ("lax_slice", lambda k, o: lax.slice(k, (1,), (3,)), lambda k, o: k[1:3]),
    ("lax_dynamic_slice", lambda k, o: lax.dynamic_slice(k, (np.int32(1),), (2,)),
     lambda k, o: k[1:3]),
    ("lax_dynamic_update_slice", lambda k, o: lax.dynamic_update_slice(k, o[:2], (np.int32(1),)),
     lambda k, o: np.concatenate([k[:1], o[:2], k[3:]])),
]


@pytest.mark.parametrize("op,want", [(c[1], c[2]) for c in STRUCTURAL],
                         ids=[c[0] for c in STRUCTURAL])
def test_structural_op_moves_key_data(op, want):
    keys, other = _keys()
    expected = _per_word(want, KEYS0, KEYS1)
    got = op(keys, other)
    np.testing.assert_array_equal(_data(got), expected)
    np.testing.assert_array_equal(_data(numbax.jit(op)(keys, other)), expected)


def test_split_functions_return_key_arrays():
    keys, _ = _keys()
    parts = jnp.split(keys, 2)
    assert len(parts) == 2
    np.testing.assert_array_equal(_data(parts[1]), KEYS0[2:])
    a, b = jnp.broadcast_arrays(keys, jnp.reshape(keys, (4, 1)))
    assert a.shape == b.shape == (4, 4)
    np.testing.assert_array_equal(_data(b)[:, 1], KEYS0)
    xs, ys = jnp.meshgrid(keys[:2], keys[2:])
    np.testing.assert_array_equal(_data(xs), _per_word(lambda w: np.meshgrid(w[:2], w[2:])[0],
                                                       KEYS0))
    assert [k.shape for k in jnp.atleast_2d(keys[0], keys)] == [(1, 1), (1, 4)]


def test_key_methods():
    keys, other = _keys()
    k2 = keys.reshape(2, 2)
    np.testing.assert_array_equal(_data(k2.T), KEYS0.reshape(2, 2, 2).transpose(1, 0, 2))
    np.testing.assert_array_equal(_data(k2.ravel()), KEYS0)
    np.testing.assert_array_equal(_data(k2.swapaxes(0, 1).flatten()), KEYS0[[0, 2, 1, 3]])
    np.testing.assert_array_equal(_data(keys.take(np.array([1]))), KEYS0[[1]])
    np.testing.assert_array_equal(_data(keys[None].squeeze(0)), KEYS0)


def test_equality_compares_whole_keys():
    keys, other = _keys()
    mixed = jnp.where(MASK, keys, other)
    np.testing.assert_array_equal(np.asarray(keys == mixed), MASK)
    np.testing.assert_array_equal(np.asarray(keys != mixed), ~MASK)
    np.testing.assert_array_equal(np.asarray(jnp.equal(keys, keys[1])), [False, True, False, False])
    np.testing.assert_array_equal(np.asarray(lax.eq(keys, other)), [False] * 4)
    np.testing.assert_array_equal(np.asarray(lax.ne(keys, other)), [True] * 4)
    assert bool(jnp.array_equal(keys, keys))
    # a key differing in one word only is a different key
    half = random.wrap_key_data(np.array([KEYS0[0, 0], 0], np.uint32))
    assert not bool(half == keys[0])
    np.testing.assert_array_equal(np.asarray(numbax.jit(lambda a, b: a == b)(keys, mixed)), MASK)


def test_like_functions_and_result_type():
    keys, _ = _keys()
    zero_key = jnp.zeros_like(keys)[0]  # JAX: zeros_like of keys is keys with zero data
    np.testing.assert_array_equal(_data(zero_key), [0, 0])
    z = jnp.zeros_like(keys, dtype=np.float32)  # an explicit dtype gives numbers, as in JAX
    assert z.dtype == np.float32 and z.shape == (4,)
    assert jnp.result_type(keys) == keys.dtype
    assert jnp.result_type(keys, keys[0]) == keys.dtype
    with pytest.raises(ValueError, match="result_type: arguments mix dtype key"):
        jnp.result_type(keys, np.float32)


def test_keys_through_transforms():
    keys, other = _keys()
    # vmap: split inside, where inside, identity out
    out = numbax.vmap(lambda k: random.split(k, 3))(keys)
    assert out.shape == (4, 3)
    np.testing.assert_array_equal(_data(out[2]), _data(random.split(keys[2], 3)))
    sel = numbax.vmap(lambda c, a, b: jnp.where(c, a, b))(MASK, keys, other)
    np.testing.assert_array_equal(_data(sel), np.where(MASK[:, None], KEYS0, KEYS1))
    # tree_map keeps keys keys
    mapped = numbax.tree_util.tree_map(lambda d: d, keys)
    np.testing.assert_array_equal(_data(mapped), KEYS0)

    # scan and fori_loop carries; scan outputs of keys
    def body(k, _):
        k, sub = random.split(k)
        return k, sub

    last, subs = lax.scan(body, random.key(0), None, length=3)
    k = random.key(0)
    for i in range(3):
        k, sub = random.split(k)
        np.testing.assert_array_equal(_data(subs[i]), _data(sub))
    np.testing.assert_array_equal(_data(last), _data(k))
    looped = lax.fori_loop(0, 3, lambda i, k: random.split(k)[0], random.key(0))
    np.testing.assert_array_equal(_data(looped), _data(last))
    # jit with key arguments and key outputs
    jitted = numbax.jit(lambda k: (jnp.reshape(k, (2, 2)), random.split(k[0], 2)))(keys)
    np.testing.assert_array_equal(_data(jitted[0]), KEYS0.reshape(2, 2, 2))
    np.testing.assert_array_equal(_data(jitted[1]), _data(random.split(keys[0], 2)))


def test_uniform_of_moved_keys_matches_original_keys():
    keys, _ = _keys()
    moved = jnp.flip(jnp.flip(jnp.reshape(keys, (2, 2)), 0), 0).ravel()
    for i in range(4):
        assert float(random.uniform(moved[i])) == float(random.uniform(keys[i]))


REFUSED = [
    ("add", lambda k: jnp.add(k, k), "numbax.numpy.add"),
    ("plus_operator", lambda k: k + 1, "numbax.numpy.add"),
    ("neg_operator", lambda k: -k, "numbax.numpy.negative"),
    ("less_operator", lambda k: k < k, "numbax.numpy.less"),
    ("sum", lambda k: jnp.sum(k), "numbax.numpy.sum"),
    ("mean", lambda k: jnp.mean(k), "numbax.numpy.mean"),
    ("max", lambda k: jnp.max(k), "numbax.numpy.max"),
    ("cumsum", lambda k: jnp.cumsum(k), "numbax.numpy.cumsum"),
    ("at_add", lambda k: k.at[0].add(k[1]), "at: op is 'add'"),
    ("astype", lambda k: jnp.astype(k, np.uint32), "asarray: dtype is"),
]


@pytest.mark.parametrize("op,api", [(c[1], c[2]) for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_refused_ops_name_the_function(op, api):
    keys, _ = _keys()
    with pytest.raises(TypeError, match=api) as info:
        op(keys)
    assert "key" in str(info.value)
    with pytest.raises(TypeError, match=api):
        numbax.jit(op)(keys)


@pytest.mark.parametrize("op", [
    lambda k: jnp.where(MASK, k, 0),
    lambda k: jnp.concatenate([k, np.zeros(4, np.uint32)]),
    lambda k: k == 0,
    lambda k: k.at[1].set(np.uint32(3)),
])
def test_mixing_keys_and_numbers_is_refused(op):
    keys, _ = _keys()
    with pytest.raises(TypeError, match="another operand is a key array") as info:
        op(keys)
    assert isinstance(info.value, ValueError)  # JAX raises ValueError for where/concatenate


def test_numpy_conversion_is_refused():
    keys, _ = _keys()
    with pytest.raises(TypeError, match="key_data"):
        np.asarray(keys)


def test_a_process_that_never_made_a_key_skips_the_scan_and_an_unpickled_key_counts():
    """The wrappers scan their arguments for key arrays only once one exists (keys_made): in a
    fresh process, not after numeric calls, yes once a key is made, and a key unpickled in a
    process that never made one still counts (it is refused where JAX refuses it)."""
    import pickle
    import subprocess
    import sys

    blob = pickle.dumps(random.split(random.key(0), 2))
    code = (
        "import pickle, sys\n"
        "import numbax.numpy as jnp\n"
        "from numbax._src.lax import key_arrays\n"
        "jnp.stack([jnp.ones(2), jnp.zeros(2)])\n"
        "assert not key_arrays.keys_made\n"
        "keys = pickle.loads(sys.stdin.buffer.read())\n"
        "assert key_arrays.keys_made\n"
        "try:\n"
        "    jnp.sum(keys)\n"
        "except TypeError as e:\n"
        "    print('refused:', e)\n"
        "print(jnp.stack([keys, keys]).shape)\n")
    out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    text = out.stdout.decode()
    assert "refused: numbax.numpy.sum: a has dtype key<fry>" in text and "(2, 2)" in text
