"""Pytrees: printed forms and key paths against JAX's recorded output, registration, the
jax.tree namespace, error messages, and trees far deeper than Python's recursion limit."""
import collections
import dataclasses
import functools
import json
import operator
import pathlib
import sys

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import tree
from numbax import tree_util as tu

sys.path.insert(0, str(pathlib.Path(__file__).parent / "data"))
import tree_cases  # noqa: E402

REF = json.loads((pathlib.Path(__file__).parent / "data" / "tree_jax_reference.json").read_text())
NS = tree_cases.make_namespace(tu, tree)
Point = tree_cases.Point


@pytest.mark.parametrize("expr", tree_cases.EXPRESSIONS)
def test_matches_jax_recorded(expr):
    want = REF["trees"][expr]
    t = eval(expr, NS)
    leaves, treedef = tree.flatten(t)
    paths = tree.leaves_with_path(t)
    assert [repr(x) for x in leaves] == want["leaves"]
    assert repr(treedef) == want["treedef"]
    assert (treedef.num_leaves, treedef.num_nodes) == (want["num_leaves"], want["num_nodes"])
    assert [repr(c) for c in tu.treedef_children(treedef)] == want["children"]
    assert tu.treedef_is_leaf(treedef) == want["is_leaf"]
    assert [repr(p) for p, _ in paths] == want["paths"]
    assert [tu.keystr(p) for p, _ in paths] == want["keystr"]
    assert [tu.keystr(p, simple=True, separator="/") for p, _ in paths] == want["keystr_simple"]
    assert [x for _, x in paths] == leaves
    doubled = tree.map(lambda v: v * 2, t)
    assert [repr(x) for x in tree.leaves(doubled)] == want["doubled_leaves"]
    assert tree.structure(doubled) == treedef
    rebuilt = tree.unflatten(treedef, leaves)
    assert tree.structure(rebuilt) == treedef
    assert all(a is b for a, b in zip(tree.leaves(rebuilt), leaves, strict=True))


def test_facts_match_jax_recorded():
    want = REF["facts"]
    assert [repr(k) for k in (tu.DictKey("a"), tu.SequenceKey(0), tu.GetAttrKey("b"),
                              tu.FlattenedIndexKey(2))] == want["key_reprs"]
    assert [str(k) for k in (tu.DictKey("a"), tu.SequenceKey(0), tu.GetAttrKey("b"),
                             tu.FlattenedIndexKey(2))] == want["key_strs"]
    pair = lambda a, b: (a, b)  # noqa: E731
    assert repr(tree.reduce_associative(pair, [1, (2, 3), [4, 5]])) == want["reduce_assoc"]
    assert repr(tree.reduce_associative(pair, list(range(6)))) == want["reduce_assoc_6"]
    assert tree.reduce(operator.add, [1, (2, 3), [4, 5, 6]], 10) == want["reduce_add"]
    assert repr(tree.broadcast((1, [2], {"c": 3}),
                               (0, [{"a": 0, "b": 0}], {"c": (0, 0)}))) == want["broadcast"]
    assert repr(tree.transpose(tree.structure([0, 0]), None,
                               [(1, 2, 3), (4, 5, 6)])) == want["transpose"]
    assert repr(tree.transpose(tree.structure({"a": 0, "b": 0}), tree.structure([0, 0]),
                               {"a": [1, 2], "b": [3, 4]})) == want["transpose_dict"]
    assert repr(tu.treedef_tuple([tree.structure([1]), tree.structure({"a": 1})])) == \
        want["treedef_tuple"]
    assert repr(tree.structure([1, (2, 3)]).compose(tree.structure((1, 2)))) == want["compose"]
    assert repr(tree.map(lambda x, y: [x] + y, [5, 6], [[7, 9], [1, 2]])) == want["map_prefix"]
    assert [tu.all_leaves([1, 2, None]), tu.all_leaves([1, (2,)]),
            tu.all_leaves([1, 2])] == want["all_leaves"]


def test_key_entries_compare_hash_and_match():
    assert tu.DictKey("a") == tu.DictKey("a") and hash(tu.DictKey("a")) == hash(tu.DictKey("a"))
    assert tu.DictKey(0) != tu.SequenceKey(0) and tu.GetAttrKey("x") != tu.DictKey("x")
    match tu.SequenceKey(3):
        case tu.SequenceKey(idx=i):
            assert i == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        tu.DictKey("a").key = "b"


def test_keystr_rejects_non_tuple():
    with pytest.raises(TypeError, match="keystr: keys is a list"):
        tu.keystr([tu.DictKey("a")])


def test_dict_leaves_sorted_ordered_dict_in_insertion_order():
    assert tree.leaves({"b": 1, "a": 2, "c": 3}) == [2, 1, 3]
    assert tree.leaves(collections.OrderedDict([("b", 1), ("a", 2)])) == [1, 2]
    # As JAX: keys that do not compare with each other are a ValueError.
    with pytest.raises(ValueError, match="Comparator raised exception"):
        tree.leaves({1: "int", "s": "str"})


def test_dict_structure_ignores_insertion_order_ordered_dict_does_not():
    assert tree.structure({"a": 1, "b": 2}) == tree.structure({"b": 1, "a": 2})
    od = collections.OrderedDict
    assert tree.structure(od(a=1, b=2)) != tree.structure(od(b=1, a=2))
    assert tree.structure(Point(1, 2)) != tree.structure((1, 2))


def test_node_data_and_flatten_one_level():
    assert tree.structure([1, 2]).node_data() == (list, None)
    assert tree.structure({"b": 1, "a": 2}).node_data() == (dict, ["a", "b"])
    assert tree.structure(Point(1, 2)).node_data() == (Point, None)
    assert tree.structure(1).node_data() is None
    children, aux = tu.flatten_one_level({"a": [1, 2], "b": {"c": 3}})
    assert list(children) == [[1, 2], {"c": 3}] and aux == ("a", "b")
    pairs, _ = tu.flatten_one_level_with_keys({"a": 1})
    assert list(pairs) == [(tu.DictKey("a"), 1)]
    with pytest.raises(ValueError, match="can't tree-flatten type"):
        tu.flatten_one_level(1)
    with pytest.raises(ValueError, match="can't tree-flatten type"):
        tu.flatten_one_level_with_keys(np.ones(2))


def test_is_tree_node():
    assert tu.is_tree_node(list) and tu.is_tree_node(Point) and tu.is_tree_node(NS["Box"])
    assert tu.is_tree_node(type(None)) and tu.is_tree_node(NS["DC"])
    assert not tu.is_tree_node(int) and not tu.is_tree_node(np.ndarray)
    with pytest.raises(TypeError, match="expected a type"):
        tu.is_tree_node([1])


def test_default_registry_is_the_registry_in_use():
    reg = tu.default_registry
    assert reg.is_node(dict) and not reg.is_node(float)
    leaves, treedef = reg.flatten({"a": (1, 2)})
    assert leaves == [1, 2] and treedef == tree.structure({"a": (0, 0)})
    pairs, _ = reg.flatten_with_path([5])
    assert pairs == [((tu.SequenceKey(0),), 5)]


def test_register_twice_and_bad_arguments():
    with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
        tu.register_pytree_node(NS["Box"], lambda b: ((), None), lambda a, c: None)
    with pytest.raises(TypeError, match="nodetype is a str"):
        tu.register_pytree_node("Box", lambda b: ((), None), lambda a, c: None)

    class Fresh:
        pass

    with pytest.raises(TypeError, match="flatten_func is a int"):
        tu.register_pytree_node(Fresh, 3, lambda a, c: None)
    with pytest.raises(TypeError, match="expected a class"):
        tu.register_static(3)


def test_register_pytree_with_keys_and_flatten_func():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    tu.register_pytree_with_keys(
        Pair, lambda p: (((tu.GetAttrKey("a"), p.a), (tu.GetAttrKey("b"), p.b)), "aux"),
        lambda aux, xs: Pair(*xs))
    pairs = tree.leaves_with_path({"p": Pair(1, [2])})
    assert [tu.keystr(p) for p, _ in pairs] == ["['p'].a", "['p'].b[0]"]
    assert repr(tree.structure(Pair(1, 2))) == "PyTreeDef(CustomNode(Pair[aux], [*, *]))"
    rebuilt = tree.map(lambda x: x + 1, Pair(1, 2))
    assert (rebuilt.a, rebuilt.b) == (2, 3)


def test_register_dataclass_explicit_fields_and_errors():
    @dataclasses.dataclass
    class Params:
        w: object
        b: object
        name: str

    tu.register_dataclass(Params, data_fields=["w", "b"], meta_fields=["name"])
    p = Params(np.ones(2), 3.0, "layer")
    leaves, treedef = tree.flatten(p)
    assert leaves[1] == 3.0 and repr(treedef) == "PyTreeDef(CustomNode(Params[('layer',)], [*, *]))"
    q = tree.unflatten(treedef, [1, 2])
    assert (q.w, q.b, q.name) == (1, 2, "layer")

    @dataclasses.dataclass
    class Bad:
        x: object
        y: object

    with pytest.raises(TypeError, match="must both be specified"):
        tu.register_dataclass(Bad, data_fields=["x"])
    with pytest.raises(ValueError, match="Missing fields"):
        tu.register_dataclass(Bad, data_fields=["x"], meta_fields=[])
    with pytest.raises(ValueError, match="must not overlap"):
        tu.register_dataclass(type("Plain", (), {}), data_fields=["x"], meta_fields=["x"])
    with pytest.raises(TypeError, match="not a dataclass"):
        tu.register_dataclass(type("Plain2", (), {}))


def test_register_dataclass_drop_fields():
    @dataclasses.dataclass
    class WithCache:
        x: object
        cache: object = None

    tu.register_dataclass(WithCache, drop_fields=["cache"])
    out = tree.map(lambda v: v * 10, WithCache(2, cache="c"))
    assert out.x == 20 and out.cache is None


def test_dataclass_and_static_through_jit():
    DC, Tag = NS["DC"], NS["Tag"]

    @numbax.jit
    def f(m, tag):
        return m.x + m.y[0] if tag == "add" else m.x - m.y[0]

    out = f(DC(x=jnp.ones(2), y=(jnp.arange(2.0), None), op="mul"), Tag("add"))
    np.testing.assert_allclose(np.asarray(out), [1.0, 2.0])


def test_unhashable_aux_data():
    class Meta:
        def __init__(self, x, meta):
            self.x, self.meta = x, meta

    tu.register_pytree_node(Meta, lambda m: ((m.x,), m.meta), lambda meta, xs: Meta(xs[0], meta))
    t1, t2 = tree.structure(Meta(1, [1, 2])), tree.structure(Meta(5, [1, 2]))
    t3 = tree.structure(Meta(1, [1, 3]))
    assert t1 == t2 and hash(t1) == hash(t2) and t1 != t3
    assert len({t1, t2, t3}) == 2
    f = numbax.jit(lambda m: m.x * len(m.meta))
    assert float(f(Meta(2.0, [1, 2]))) == 4.0
    assert float(f(Meta(2.0, [1, 2, 3]))) == 6.0
    arr = tree.structure(Meta(1, np.arange(3)))  # == gives an array: compared safely
    assert arr == arr and arr != tree.structure(Meta(1, np.arange(4)))


def test_partial_is_a_functools_partial_pytree():
    p = tu.Partial(lambda a, b: a + b, np.float64(1.0))
    assert isinstance(p, functools.partial)
    leaves, treedef = tree.flatten(p)
    assert leaves == [1.0]
    assert tree.unflatten(treedef, [5.0])(2.0) == 7.0
    inner = functools.partial(lambda a, b, c: a * b + c, 2)
    q = tu.Partial(inner, 3)
    assert tree.leaves(q) == [3] and q(4) == 10
    assert q.func.func is inner.func and q.func.args == (2,)
    out = numbax.jit(lambda f, x: f(x))(tu.Partial(jnp.add, 1.0), 2.0)
    assert float(out) == 3.0
    with pytest.raises(TypeError, match="Partial: func is a int"):
        tu.Partial(3)


def test_is_leaf_and_all_and_reduce():
    t = [(1, 2), (3, 4)]
    assert tree.leaves(t, is_leaf=lambda x: isinstance(x, tuple)) == [(1, 2), (3, 4)]
    assert tree.all([True, (True, 1)]) and not tree.all([True, 0])
    assert tree.all([1, None, 0], is_leaf=lambda x: x is None) is False
    assert tree.reduce(operator.add, [1, [2, None]], is_leaf=lambda x: x is None and False) == 3
    with pytest.raises(TypeError, match="pass identity"):
        tree.reduce_associative(operator.add, [None])
    assert tree.reduce_associative(operator.add, [], identity=0) == 0


def test_with_path_is_leaf_takes_path():
    pairs, treedef = tree.flatten_with_path({"a": [1, 2], "b": 3},
                                            is_leaf=lambda p, x: len(p) == 1,
                                            is_leaf_takes_path=True)
    assert [(tu.keystr(p), x) for p, x in pairs] == [("['a']", [1, 2]), ("['b']", 3)]
    assert treedef == tree.structure({"a": 0, "b": 0})
    out = tree.map_with_path(lambda p, x, y: (tu.keystr(p), x + y),
                             {"a": [1, 2], "b": 3}, {"a": [10, 20], "b": 30})
    assert out == {"a": [("['a'][0]", 11), ("['a'][1]", 22)], "b": ("['b']", 33)}


def test_tree_map_mismatch_names_the_key_path():
    with pytest.raises(ValueError,
                       match=r"rest\[0\] has a tuple with 2 children at \['a'\]\[1\], .* has 3"):
        tree.map(lambda p, q: p, {"a": [1, (2, 3, 4)]}, {"a": [1, (2, 3)]})
    with pytest.raises(ValueError, match="has a tuple at the root, where"):
        tree.map(lambda p, q: p, [1, 2], (1, 2))
    with pytest.raises(ValueError, match=r"node data \('y',\)"):
        tree.map(lambda p, q: p, {"x": 1}, {"y": 1})


def test_transpose_errors_and_unflatten_counts():
    outer, inner = tree.structure([0, 0]), tree.structure((0, 0, 0))
    with pytest.raises(TypeError, match="pytree_to_transpose has structure"):
        tree.transpose(outer, inner, [(1, 2), (3, 4)])
    _, treedef = tree.flatten((1, 2))
    with pytest.raises(ValueError, match="too many leaves .* expected 2, got 3"):
        tree.unflatten(treedef, [1, 2, 3])
    with pytest.raises(ValueError, match="too few leaves"):
        tree.unflatten(treedef, iter([1]))
    with pytest.raises(TypeError, match="treedef is a list"):
        tree.unflatten([1], [1])


def test_static_field_marks_metadata():
    f = tree.static(default=3)
    assert f.metadata["static"] is True and f.default == 3
    g = tree.static(default=1, metadata={"doc": "x"})
    assert g.metadata == {"static": True, "doc": "x"}


def test_treedef_pickles():
    import pickle

    t = tree.structure({"a": (1, [2]), "p": Point(None, 3)})
    back = pickle.loads(pickle.dumps(t))
    assert back == t and hash(back) == hash(t) and back.unflatten([1, 2, 3])["p"].y == 3


def test_walk_and_from_node_data():
    td = tree.structure((1, [2, {"a": 3}]))
    out = td.walk(lambda kids, aux: ("N", kids, aux), lambda leaf: leaf * 10, [1, 2, 3])
    assert out == ("N", (10, ("N", (20, ("N", (30,), ["a"])), None)), None)
    made = td.from_node_data_and_children(tu.default_registry, (list, None),
                                          [tree.structure(1), tree.structure(2)])
    assert made == tree.structure([0, 0])
    assert td.flatten_up_to((5, [6, {"a": [7]}])) == [5, 6, [7]]
    with pytest.raises(ValueError, match="has a list at"):
        td.flatten_up_to((5, [6, [7]]))


def _nest(depth):
    t = 0.0
    for i in range(depth):
        t = [t, i] if i % 3 else {"k": (t,)}
    return t


def test_very_deep_trees():
    depth = 5_000  # JAX's C++ flattening stops near 1,000 levels; numbax never recurses
    t = _nest(depth)
    leaves, treedef = tree.flatten(t)
    assert len(leaves) == 1 + sum(1 for i in range(depth) if i % 3)
    rebuilt = tree.unflatten(treedef, leaves)
    assert tree.structure(rebuilt) == treedef and hash(tree.structure(rebuilt)) == hash(treedef)
    doubled = tree.map(lambda x, y: x + y, t, rebuilt)
    assert tree.leaves(doubled)[0] == 0.0 and tree.leaves(doubled)[-1] == 2 * leaves[-1]
    pairs = tree.leaves_with_path(t)
    assert len(pairs[0][0]) == depth + sum(1 for i in range(depth) if i % 3 == 0)
    assert repr(treedef).startswith("PyTreeDef([{'k': ([")
    assert len(treedef.children()) == 2


def test_fifty_thousand_levels():
    t = _nest(50_000)
    leaves, treedef = tree.flatten(t)
    rebuilt = tree.map(lambda x: x + 1, t)
    assert tree.structure(rebuilt) == treedef
    assert tree.leaves(rebuilt)[-1] == leaves[-1] + 1


def test_deep_tree_through_grad():
    t = _nest(3000)
    g = numbax.grad(lambda tr: sum(jnp.sum(x) for x in tree.leaves(tr)))(
        tree.map(lambda x: jnp.asarray(float(x)), t))
    assert all(float(x) == 1.0 for x in tree.leaves(g))


# ----------------------------------------------------------------------------- ravel_pytree


def test_ravel_pytree_round_trip_and_order():
    from numbax.flatten_util import ravel_pytree

    t = {"w": np.arange(6.0).reshape(2, 3), "b": (np.float64(7.0), None), "a": [np.ones(2)]}
    flat, unravel = ravel_pytree(t)
    want = np.concatenate([np.ravel(x) for x in tree.leaves(t)])
    np.testing.assert_array_equal(np.asarray(flat), want)
    back = unravel(flat)
    assert tree.structure(back) == tree.structure(t)
    for x, y in zip(tree.leaves(back), tree.leaves(t), strict=True):
        assert np.shape(x) == np.shape(y)
        np.testing.assert_array_equal(np.asarray(x), y)
    assert unravel == ravel_pytree(t)[1] and hash(unravel) == hash(ravel_pytree(t)[1])


def test_ravel_pytree_promotes_and_casts_back():
    from numbax.flatten_util import ravel_pytree

    t = [np.ones(2, np.float32), np.int8(3), np.array([1 + 2j], np.complex64)]
    flat, unravel = ravel_pytree(t)
    assert flat.dtype == np.result_type(np.float32, np.int8, np.complex64)
    back = unravel(flat)
    assert [x.dtype for x in back] == [np.float32, np.int8, np.complex64]
    assert int(back[1]) == 3
    weak, _ = ravel_pytree([np.ones(2, np.float32), 2.0])  # a Python scalar is weak
    assert weak.dtype == np.float32
    with pytest.raises(TypeError, match="flat has dtype float32, expected complex64"):
        unravel(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match=r"flat has shape \(3,\), expected \(4,\)"):
        unravel(np.zeros(3, np.complex64))
    with pytest.raises(TypeError, match="leaf 1 is a str"):
        ravel_pytree([1.0, "x"])


def test_ravel_pytree_empty_and_transforms():
    from numbax.flatten_util import ravel_pytree

    flat, unravel = ravel_pytree({"a": None})
    assert flat.shape == (0,) and flat.dtype == np.float32 and unravel(flat) == {"a": None}
    params = {"w": np.array([[1.0, 2.0], [3.0, 4.0]]), "b": np.array([0.5, -1.0])}
    flat, unravel = ravel_pytree(params)

    def loss(v):
        p = unravel(v)
        return jnp.sum(jnp.sin(p["w"]) @ p["b"])

    g = numbax.grad(loss)(flat)
    gw = np.cos(params["w"]) * params["b"][None, :]
    gb = np.sin(params["w"]).sum(axis=0)
    np.testing.assert_allclose(np.asarray(g), np.concatenate([gb, gw.ravel()]), rtol=1e-12)
    batch = np.stack([np.asarray(flat), 2 * np.asarray(flat)])
    out = numbax.vmap(lambda v: unravel(v)["w"].sum())(batch)
    np.testing.assert_allclose(np.asarray(out), [10.0, 20.0])
    jitted = numbax.jit(lambda p: ravel_pytree(p)[0])(params)
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(flat))


@pytest.mark.parametrize("module", ["tree_util", "tree_registration", "flatten_util",
                                    "basearray", "api_derived", "api"])
def test_doctests(module):
    import doctest
    import importlib

    mod = importlib.import_module(f"numbax._src.{module}")
    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
