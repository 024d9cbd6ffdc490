"""Records jax.tree_util's printed forms into tree_jax_reference.json (run once, with jax).

    /work/jaxenv/bin/python tests/data/make_tree_reference.py

For each tree of tree_cases.EXPRESSIONS: the leaves, the treedef's repr, num_leaves/num_nodes,
its children, the key paths (repr and keystr, plain and simple) and tree.map's result; plus
single facts (key entry reprs, reduce_associative's grouping, broadcast, transpose).
"""
import json
import operator
import pathlib
import sys

import jax
from jax import tree, tree_util

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import tree_cases  # noqa: E402

OUT = pathlib.Path(__file__).with_name("tree_jax_reference.json")


def record() -> dict:
    ns = tree_cases.make_namespace(tree_util, tree)
    trees = {}
    for expr in tree_cases.EXPRESSIONS:
        t = eval(expr, ns)
        leaves, treedef = tree.flatten(t)
        paths = tree.leaves_with_path(t)
        trees[expr] = {
            "leaves": [repr(x) for x in leaves],
            "treedef": repr(treedef),
            "num_leaves": treedef.num_leaves,
            "num_nodes": treedef.num_nodes,
            "children": [repr(c) for c in tree_util.treedef_children(treedef)],
            "is_leaf": tree_util.treedef_is_leaf(treedef),
            "paths": [repr(p) for p, _ in paths],
            "keystr": [tree_util.keystr(p) for p, _ in paths],
            "keystr_simple": [tree_util.keystr(p, simple=True, separator="/") for p, _ in paths],
            "doubled_leaves": [repr(x) for x in tree.leaves(tree.map(lambda v: v * 2, t))],
        }
    k = tree_util
    facts = {
        "key_reprs": [repr(k.DictKey("a")), repr(k.SequenceKey(0)), repr(k.GetAttrKey("b")),
                      repr(k.FlattenedIndexKey(2))],
        "key_strs": [str(k.DictKey("a")), str(k.SequenceKey(0)), str(k.GetAttrKey("b")),
                     str(k.FlattenedIndexKey(2))],
        "reduce_assoc": repr(tree.reduce_associative(lambda a, b: (a, b), [1, (2, 3), [4, 5]])),
        "reduce_assoc_6": repr(tree.reduce_associative(lambda a, b: (a, b), list(range(6)))),
        "reduce_add": tree.reduce(operator.add, [1, (2, 3), [4, 5, 6]], 10),
        "broadcast": repr(tree.broadcast((1, [2], {"c": 3}),
                                         (0, [{"a": 0, "b": 0}], {"c": (0, 0)}))),
        "transpose": repr(tree.transpose(tree.structure([0, 0]), None, [(1, 2, 3), (4, 5, 6)])),
        "transpose_dict": repr(tree.transpose(tree.structure({"a": 0, "b": 0}),
                                              tree.structure([0, 0]),
                                              {"a": [1, 2], "b": [3, 4]})),
        "treedef_tuple": repr(tree_util.treedef_tuple([tree.structure([1]),
                                                       tree.structure({"a": 1})])),
        "compose": repr(tree.structure([1, (2, 3)]).compose(tree.structure((1, 2)))),
        "map_prefix": repr(tree.map(lambda x, y: [x] + y, [5, 6], [[7, 9], [1, 2]])),
        "all_leaves": [tree_util.all_leaves([1, 2, None]), tree_util.all_leaves([1, (2,)]),
                       tree_util.all_leaves([1, 2])],
    }
    return {"jax_version": jax.__version__, "trees": trees, "facts": facts}


if __name__ == "__main__":
    OUT.write_text(json.dumps(record(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")
