"""numbax.tree_util: pytree utilities (also available as numbax.tree)."""
from numbax._src.tree_util import (  # noqa: F401
    Partial,
    PyTreeDef,
    all_leaves,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys_class,
    tree_all,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_reduce,
    tree_structure,
    tree_transpose,
    tree_unflatten,
    treedef_is_leaf,
)

flatten = tree_flatten
unflatten = tree_unflatten
leaves = tree_leaves
structure = tree_structure
map = tree_map  # noqa: A001
all = tree_all  # noqa: A001
reduce = tree_reduce
transpose = tree_transpose
