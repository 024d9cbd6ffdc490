"""docs/pytrees.md and docs/custom_pytrees.md: leaves and tree_map, an MLP trained through
pytree parameters, key paths, None leaves, transposes, custom nodes (register_pytree_node,
register_pytree_node_class, NamedTuple, register_dataclass)."""
from tests.compat.programs import builtin_error, program


@program("docs/pytrees.md")
def pytree_leaves_and_map():
    import collections

    import jax
    import jax.numpy as jnp

    example_trees = [
        [1, 'a', 2.5],
        (1, (2, 3), ()),
        [1, {'k1': 2, 'k2': (3, 4)}, 5],
        {'a': 2, 'b': (2, 3)},
        jnp.array([1, 2, 3]),
    ]
    leaves = [jax.tree.leaves(pytree) for pytree in example_trees]
    list_of_lists = [[1, 2, 3], [1, 2], [1, 2, 3, 4]]
    doubled = jax.tree.map(lambda x: x*2, list_of_lists)
    summed = jax.tree.map(lambda x, y: x+y, list_of_lists, list_of_lists)

    ATuple = collections.namedtuple("ATuple", ('name'))
    tree = [1, {'k1': 2, 'k2': (3, 4)}, ATuple('foo')]
    flattened, _ = jax.tree_util.tree_flatten_with_path(tree)
    paths = [f'Value of tree{jax.tree_util.keystr(key_path)}: {value}'
             for key_path, value in flattened]
    key_reprs = [repr(key_path) for key_path, _ in flattened]

    a_tree = [jnp.zeros((2, 3)), jnp.zeros((3, 4))]
    shapes = jax.tree.map(lambda x: x.shape, a_tree)
    ones = jax.tree.map(jnp.ones, shapes)
    # Left out: jax.tree.map(lambda x: x + 1, {1: 7, "y": 42}) raises ValueError in JAX (keys
    # that do not sort); numbax deliberately accepts it (docs/sharp_bits.md, Pytrees).

    def tree_transpose(list_of_trees):
        return jax.tree.map(lambda *xs: list(xs), *list_of_trees)

    episode_steps = [dict(t=1, obs=3), dict(t=2, obs=4)]
    transposed = jax.tree.transpose(
        outer_treedef=jax.tree.structure([0 for e in episode_steps]),
        inner_treedef=jax.tree.structure(episode_steps[0]),
        pytree_to_transpose=episode_steps)
    return {"leaves": leaves, "doubled": doubled, "summed": summed, "paths": paths,
            "key_reprs": key_reprs, "ones": [ones, [str(s) for s in shapes]],
            "none_leaves": [len(jax.tree.leaves([None, None, None])),
                            len(jax.tree.leaves([None, None, None],
                                                is_leaf=lambda x: x is None))],
            "tree_transpose": tree_transpose(episode_steps),
            "transpose": transposed,
            "structure": str(jax.tree_util.tree_structure([1, {'a': 2, 'b': (3, None)}]))}


@program("docs/pytrees.md", rtol=1e-5, atol=1e-6)
def pytree_mlp_training():
    import jax
    import jax.numpy as jnp
    import numpy as np

    np.random.seed(0)

    def init_mlp_params(layer_widths):
        params = []
        for n_in, n_out in zip(layer_widths[:-1], layer_widths[1:]):
            params.append(
                dict(weights=np.random.normal(size=(n_in, n_out)) * np.sqrt(2/n_in),
                     biases=np.ones(shape=(n_out,))))
        return params

    params = init_mlp_params([1, 32, 32, 1])
    shapes = jax.tree.map(lambda x: x.shape, params)

    def forward(params, x):
        *hidden, last = params
        for layer in hidden:
            x = jax.nn.relu(x @ layer['weights'] + layer['biases'])
        return x @ last['weights'] + last['biases']

    def loss_fn(params, x, y):
        return jnp.mean((forward(params, x) - y) ** 2)

    LEARNING_RATE = 0.0001

    @jax.jit
    def update(params, x, y):
        grads = jax.grad(loss_fn)(params, x, y)
        return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)

    xs = np.random.normal(size=(128, 1))
    ys = xs ** 2
    losses = []
    for _ in range(50):
        params = update(params, xs, ys)
        losses.append(loss_fn(params, xs, ys))
    return {"shapes": [{k: list(v) for k, v in layer.items()} for layer in shapes],
            "losses": jnp.stack(losses), "last_bias": params[-1]["biases"]}


@program("docs/custom_pytrees.md")
def pytree_custom_nodes():
    import functools
    from dataclasses import dataclass
    from typing import Any, NamedTuple

    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.tree_util import register_pytree_node, register_pytree_node_class

    class Special(object):
        def __init__(self, x, y):
            self.x = x
            self.y = y

    opaque = len(jax.tree.leaves([Special(0, 1), Special(2, 4)]))
    try:
        jax.tree.map(lambda x: x + 1, [Special(0, 1), Special(2, 4)])
        opaque_map = "no error"
    except TypeError as err:
        opaque_map = builtin_error(err)

    class RegisteredSpecial(Special):
        def __repr__(self):
            return "RegisteredSpecial(x={}, y={})".format(self.x, self.y)

    def special_flatten(v):
        children = (v.x, v.y)
        aux_data = None
        return (children, aux_data)

    def special_unflatten(aux_data, children):
        return RegisteredSpecial(*children)

    register_pytree_node(RegisteredSpecial, special_flatten, special_unflatten)
    mapped = jax.tree.map(lambda x: x + 1, [RegisteredSpecial(0, 1), RegisteredSpecial(2, 4)])

    @register_pytree_node_class
    class RegisteredSpecial2(Special):
        def __repr__(self):
            return "RegisteredSpecial2(x={}, y={})".format(self.x, self.y)

        def tree_flatten(self):
            children = (self.x, self.y)
            aux_data = None
            return (children, aux_data)

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            return cls(*children)

    structured = RegisteredSpecial2(1., 2.)
    flat, tree = structured.tree_flatten()
    unflattened = RegisteredSpecial2.tree_unflatten(tree, flat)

    class MyOtherContainer(NamedTuple):
        name: str
        a: Any
        b: Any
        c: Any

    named = jax.tree.leaves([MyOtherContainer('Alice', 1, 2, 3),
                             MyOtherContainer('Bob', 4, 5, 6)])

    @functools.partial(jax.tree_util.register_dataclass,
                       data_fields=['a', 'b', 'c'], meta_fields=['name'])
    @dataclass
    class MyDataclassContainer(object):
        name: str
        a: Any
        b: Any
        c: Any

    dc_leaves = jax.tree.leaves([
        MyDataclassContainer('apple', 5.3, 1.2, jnp.zeros([4])),
        MyDataclassContainer('banana', np.array([3, 4]), -1., 0.)])

    @jax.jit
    def f(x):
        return x.a + x.b

    y = f(MyDataclassContainer('mdc', 1, 2, 3))
    try:
        f(MyOtherContainer('moc', 1, 2, 3))
        named_str_leaf = "no error"
    except TypeError as err:
        named_str_leaf = builtin_error(err)
    return {"opaque": opaque, "opaque_map": opaque_map, "mapped": [repr(m) for m in mapped],
            "class_flat": [flat, repr(unflattened)], "named": named, "dc_leaves": dc_leaves,
            "dataclass_jit": y, "named_str_leaf": named_str_leaf}


@program("docs/custom_pytrees.md")
def pytree_unflatten_with_objects():
    import jax
    import jax.numpy as jnp
    from jax.tree_util import register_pytree_node

    class MyTree:
        def __init__(self, a):
            self.a = jnp.asarray(a)

    def tree_unflatten(aux_data, children):
        del aux_data  # Unused in this class.
        obj = object.__new__(MyTree)
        obj.a = children[0]
        return obj

    register_pytree_node(MyTree, lambda tree: ((tree.a,), None), tree_unflatten)
    tree = MyTree(jnp.arange(5.0))
    vmapped = jax.vmap(lambda x: x)(tree)
    jac = jax.jacobian(lambda x: x)(tree)
    return {"vmap": vmapped.a, "jacobian": jac.a.a}


@program("docs/custom_pytrees.md")
def pytree_flatten_examples():
    from collections import namedtuple

    import jax.numpy as jnp
    from jax.tree_util import tree_flatten, tree_unflatten

    value_structured = [1., (2., 3.)]
    value_flat, value_tree = tree_flatten(value_structured)
    transformed_flat = list(map(lambda v: v * 2., value_flat))
    transformed_structured = tree_unflatten(value_tree, transformed_flat)

    Point = namedtuple('Point', ['x', 'y'])
    example_containers = [
        (1., [2., 3.]),
        (1., {'b': 2., 'a': 3.}),
        1.,
        None,
        jnp.zeros(2),
        Point(1., 2.)
    ]
    shown = []
    for structured in example_containers:
        flat, tree = tree_flatten(structured)
        unflattened = tree_unflatten(tree, flat)
        shown.append([flat, str(tree), repr(unflattened) if not hasattr(unflattened, "shape")
                      else unflattened])
    return {"value_tree": str(value_tree), "transformed": transformed_structured,
            "shown": shown}
