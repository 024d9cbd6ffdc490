"""A custom_vjp bwd rule's output checked against the primal's argument structure and
flattened into cotangents (None and SymbolicZero leaves become zeros, dtypes follow the
primals), with JAX's error messages."""
from __future__ import annotations

from typing import Any

from numbax._src import dtypes
from numbax._src import tree_util as tu
from numbax._src.core import get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad
from numbax._src.symbolic_zeros import SymbolicZero


def flatten_bwd_output(name: str, cts_in: Any, in_tree: tu.PyTreeDef,
                        in_avals: list) -> list:
    """Checks a bwd output against the args tuple; None leaves mean zero cotangents."""
    expected = tu.tree_unflatten(in_tree, ["*"] * in_tree.num_leaves)
    if not isinstance(cts_in, tuple):
        raise NumbaxTypeError(
            f"Custom VJP bwd rule for function {name} must produce a tuple with one entry per "
            f"primal argument (the same container (pytree) structure as the args tuple of the "
            f"primal function), expected {_pp_tree(expected)}, got {type(cts_in).__name__}.")
    try:
        flat = tu.flatten_up_to(in_tree, cts_in, "bwd output")
    except (ValueError, TypeError):
        got = tu.tree_map(lambda _: "*", cts_in, is_leaf=lambda x: x is None)
        raise NumbaxTypeError(
            f"custom_vjp bwd rule for function {name} must produce an output with the same "
            f"container (pytree) structure as the args tuple of the primal function, and in "
            f"particular must produce a tuple of length equal to the number of arguments to "
            f"the primal function, expected {_pp_tree(expected)}, got {_pp_tree(got)}."
        ) from None
    out = []
    for i, (ct, aval) in enumerate(zip(flat, in_avals, strict=True)):
        t_aval = ad.tangent_aval(aval)
        if ct is None or type(ct) is SymbolicZero:
            out.append(ad.Zero(t_aval))
            continue
        if get_aval(ct).shape != aval.shape:
            raise NumbaxValueError(
                f"Custom VJP bwd rule for function {name}: cotangent leaf {i} has shape "
                f"{get_aval(ct).shape}, expected the primal input's shape {aval.shape}.")
        if t_aval.dtype == dtypes.float0:
            out.append(ad.Zero(t_aval))
        elif get_aval(ct).dtype != aval.dtype:
            from numbax._src.lax import elementwise

            out.append(elementwise.convert_element_type(ct, aval.dtype))
        else:
            out.append(ct)
    return out


def _pp_tree(tree: Any) -> str:
    if isinstance(tree, tuple):
        inner = ", ".join(_pp_tree(t) for t in tree)
        return f"({inner},)" if len(tree) == 1 else f"({inner})"
    if isinstance(tree, list):
        return "[" + ", ".join(_pp_tree(t) for t in tree) + "]"
    if isinstance(tree, dict):
        return "{" + ", ".join(f"{k!r}: {_pp_tree(v)}" for k, v in tree.items()) + "}"
    return str(tree) if tree == "*" else type(tree).__name__

