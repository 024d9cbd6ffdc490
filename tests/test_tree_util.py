"""Pytrees: flatten/unflatten round trips, registration, tree_map over several trees."""
import collections

import numpy as np
import pytest

import numbax
from numbax import tree_util as tu

Point = collections.namedtuple("Point", ["x", "y"])


@tu.register_pytree_node_class
class Box:
    def __init__(self, value, label):
        self.value, self.label = value, label

    def tree_flatten(self):
        return (self.value,), self.label

    @classmethod
    def tree_unflatten(cls, label, children):
        return cls(children[0], label)


TREES = [
    1.0,
    None,
    (),
    [1, 2, 3],
    (1, [2, (3, None)]),
    {"b": 1, "a": [2, 3]},
    Point(1, (2, 3)),
    collections.OrderedDict([("z", 1), ("a", 2)]),
    {"box": Box(np.ones(2), "lbl"), "p": Point(None, 4)},
]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_round_trip(tree):
    leaves, treedef = tu.tree_flatten(tree)
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert tu.tree_structure(rebuilt) == treedef
    assert all(a is b for a, b in zip(tu.tree_leaves(rebuilt), leaves))


def test_dict_leaves_in_sorted_key_order():
    assert tu.tree_leaves({"b": 1, "a": 2, "c": 3}) == [2, 1, 3]


def test_none_is_an_empty_subtree():
    assert tu.tree_leaves([None, 1, None]) == [1]


def test_tree_map_several_trees():
    a = {"x": [1, 2], "y": 3}
    b = {"x": [10, 20], "y": 30}
    assert tu.tree_map(lambda p, q: p + q, a, b) == {"x": [11, 22], "y": 33}


def test_tree_map_mismatch_names_structure():
    with pytest.raises(ValueError, match="structure"):
        tu.tree_map(lambda p, q: p, {"x": 1}, {"y": 1})


def test_is_leaf_and_all():
    tree = [(1, 2), (3, 4)]
    assert tu.tree_leaves(tree, is_leaf=lambda x: isinstance(x, tuple)) == [(1, 2), (3, 4)]
    assert tu.tree_all([True, (True, 1)]) and not tu.tree_all([True, 0])


def test_treedef_hashable_and_equal():
    _, d1 = tu.tree_flatten({"a": (1, 2)})
    _, d2 = tu.tree_flatten({"a": (5, 6)})
    _, d3 = tu.tree_flatten({"a": [5, 6]})
    assert d1 == d2 and hash(d1) == hash(d2) and d1 != d3


def test_unflatten_wrong_leaf_count():
    _, treedef = tu.tree_flatten((1, 2))
    with pytest.raises(ValueError, match="3 leaves"):
        tu.tree_unflatten(treedef, [1, 2, 3])


def test_register_twice_is_an_error():
    with pytest.raises(ValueError, match="already registered"):
        tu.register_pytree_node(Box, lambda b: ((), None), lambda a, c: None)


def test_tree_namespace_alias():
    assert numbax.tree.map(lambda v: v * 2, {"a": 1}) == {"a": 2}
    assert numbax.tree.leaves([1, [2]]) == [1, 2]


def test_tree_transpose():
    outer = tu.tree_structure([0, 0])
    inner = tu.tree_structure((0, 0))
    assert tu.tree_transpose(outer, inner, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])


def test_partial_is_a_pytree():
    p = tu.Partial(lambda a, b: a + b, np.float64(1.0))
    leaves, treedef = tu.tree_flatten(p)
    assert leaves == [1.0]
    assert tu.tree_unflatten(treedef, [5.0])(2.0) == 7.0
