"""sparse.grad / sparse.value_and_grad: differentiation with respect to the stored values of
BCOO and BCSR arguments (their indices are held fixed), returning sparse gradients."""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any

from numbax._src import api
from numbax._src import tree_util as tu
from numbax._src.sparse.bcoo import BCOO
from numbax._src.sparse.bcsr import BCSR


def _is_sparse(x: Any) -> bool:
    return isinstance(x, (BCOO, BCSR))


def _with_data(like: Any, data: Any) -> Any:
    """`like` (a BCOO or BCSR) with its data replaced."""
    children, aux = like.tree_flatten()
    return type(like).tree_unflatten(aux, (data,) + tuple(children[1:]))


def _datas(tree: Any) -> Any:
    return tu.tree_map(lambda x: x.data if _is_sparse(x) else x, tree, is_leaf=_is_sparse)


def _rebuild(like: Any, values: Any) -> Any:
    """`values` (tree_map'd from `like` by _datas) with sparse leaves rebuilt around them."""
    leaves, tree = tu.tree_flatten(like, is_leaf=_is_sparse)
    vals = tree.flatten_up_to(values)
    out = [_with_data(x, v) if _is_sparse(x) else v for x, v in zip(leaves, vals)]
    return tu.tree_unflatten(tree, out)


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   **kwargs: Any) -> Callable:
    """jax.value_and_grad where sparse arguments are differentiated with respect to their
    data: the gradient of a BCOO (BCSR) argument is a BCOO (BCSR) with its indices."""
    int_arg = isinstance(argnums, int)
    nums = (operator.index(argnums),) if int_arg else tuple(map(operator.index, argnums))

    @functools.wraps(fun)
    def wrapped(*args: Any) -> Any:
        def on_data(*diff: Any) -> Any:
            full = list(args)
            for i, d in zip(nums, diff):
                full[i] = _rebuild(args[i], d)
            return fun(*full)

        diff_args = [_datas(args[i]) for i in nums]
        inner = api.value_and_grad(on_data, argnums=tuple(range(len(nums))), has_aux=has_aux,
                                   **kwargs)
        value, grads = inner(*diff_args)
        grads = tuple(_rebuild(args[i], g) for i, g in zip(nums, grads))
        return value, grads[0] if int_arg else grads

    return wrapped


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         **kwargs: Any) -> Callable:
    """jax.grad where sparse arguments are differentiated with respect to their data.

    >>> import numbax.numpy as jnp
    >>> from numbax._src.sparse.bcoo import bcoo_fromdense
    >>> m = bcoo_fromdense(jnp.array([[0., 2.], [3., 0.]]))
    >>> grad(lambda m: (m @ jnp.array([1., 4.])).sum())(m).data.tolist()
    [4.0, 1.0]
    """
    value_and_grad_f = value_and_grad(fun, argnums, has_aux=has_aux, **kwargs)

    @functools.wraps(fun)
    def wrapped(*args: Any) -> Any:
        (value, grads) = value_and_grad_f(*args)
        return (grads, value[1]) if has_aux else grads

    return wrapped
