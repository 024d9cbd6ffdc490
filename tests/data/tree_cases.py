"""Pytrees shared by make_tree_reference.py (run with jax) and tests/test_tree_util.py (numbax):
the same classes, registered with whichever tree_util module is passed in, and the same trees."""
import collections
import dataclasses

Point = collections.namedtuple("Point", ["x", "y"])

EXPRESSIONS = [
    "1.0",
    "None",
    "()",
    "[]",
    "{}",
    "(1,)",
    "[1, 2, 3]",
    "(1, [2, (3, None)])",
    "{'b': 1, 'a': [2, 3]}",
    "Point(1, (2, 3))",
    "collections.OrderedDict([('z', 1), ('a', 2)])",
    "collections.defaultdict(list, {'q': 7, 'c': [8]})",
    "{'box': Box(1.5, 'lbl'), 'p': Point(None, 4)}",
    "Keyed(1, [2, 3])",
    "DC(x=1, y=(2, 3), op='add')",
    "[Tag('hi'), 5]",
    "{'a': {'b': {'c': [1, {'d': 2}]}}}",
    "[None, (None,), {'k': None}]",
]


def make_namespace(tree_util, tree) -> dict:
    """Defines and registers the custom node classes with the given tree_util/tree modules."""

    class Box:
        def __init__(self, value, label):
            self.value, self.label = value, label

        def tree_flatten(self):
            return (self.value,), self.label

        @classmethod
        def tree_unflatten(cls, label, children):
            return cls(children[0], label)

    tree_util.register_pytree_node_class(Box)

    class Keyed:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten_with_keys(self):
            return ((tree_util.GetAttrKey("a"), self.a), (tree_util.GetAttrKey("b"), self.b)), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    tree_util.register_pytree_with_keys_class(Keyed)

    @dataclasses.dataclass
    class DC:
        x: object
        y: object
        op: str = tree.static(default="add")

    tree_util.register_dataclass(DC)

    class Tag(str):
        pass

    tree_util.register_static(Tag)
    return {"Box": Box, "Keyed": Keyed, "DC": DC, "Tag": Tag, "Point": Point,
            "collections": collections}
