"""Argument checks shared by the transforms: callables, array leaves, argnums, and the dtypes
grad, jacrev, jacfwd and holomorphic differentiation accept."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src import tree_util as tu
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError


def _check_leaf(fun_name: str, x: Any, where: str) -> None:
    if not core.is_array_like(x):
        raise NumbaxTypeError(
            f"{fun_name}: {where} is a {type(x).__name__}, which is not a valid array type. "
            "Pass arrays, Python scalars, or pytrees (tuples, lists, dicts) of them; mark "
            "other arguments static."
        )


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _as_tuple(x: int | Sequence[int], api: str = "numbax",
              what: str = "argnums") -> tuple[int, ...]:
    """An int or a sequence of ints as a tuple; TypeError naming `what` otherwise."""
    if _is_int(x):
        return (int(x),)
    if isinstance(x, (tuple, list)) and all(_is_int(i) for i in x):
        return tuple(int(i) for i in x)
    raise NumbaxTypeError(f"{api}: {what} has {x!r} of type {type(x).__name__}, expected an "
                          "int or a sequence of ints (argument positions).")


def _argnums_tuple(api: str, argnums: Any) -> tuple[int, ...]:
    nums = _as_tuple(argnums, api, "argnums")
    if not nums:
        raise NumbaxValueError(f"{api}: argnums is empty, expected at least one argument "
                               "position to differentiate.")
    return nums


def _check_callable(api: str, fun: Any) -> None:
    if not callable(fun):
        raise NumbaxTypeError(f"{api}: expected a callable as the first argument, "
                              f"got {type(fun).__name__}.")


def _check_argnums(api: str, argnums: tuple[int, ...], n_args: int) -> tuple[int, ...]:
    for a in argnums:
        if not -n_args <= a < n_args:
            raise NumbaxTypeError(
                f"{api}: argnums {argnums} refers to argument {a}, but the function was called "
                f"with {n_args} positional arguments. Pass the argument positionally or fix "
                "argnums."
            )
    nums = tuple(a % n_args for a in argnums)
    if len(set(nums)) != len(nums):
        raise NumbaxValueError(f"{api}: argnums {argnums} names an argument twice; list each "
                               "position once.")
    return nums


def _check_input_dtypes(api: str, args: tuple, argnums: tuple[int, ...], holomorphic: bool,
                        allow_int: bool, forward: bool = False) -> None:
    """JAX's input rules: holomorphic needs complex inputs; jacfwd needs real floats; grad and
    jacrev need floats or complex numbers (integers with allow_int)."""
    for a in argnums:
        for leaf in tu.tree_leaves(args[a]):
            dt = get_aval(leaf).dtype
            if holomorphic:
                if kind_of(dt) != "c":
                    raise NumbaxTypeError(f"{api} with holomorphic=True requires inputs with "
                                          f"complex dtype, but got {dt.name}.")
            elif forward and kind_of(dt) != "f":
                raise NumbaxTypeError(
                    f"{api} requires real-valued inputs (input dtype that is a sub-dtype of "
                    f"np.floating), but got {dt.name}. For holomorphic differentiation, pass "
                    "holomorphic=True. For differentiation of non-holomorphic functions "
                    "involving complex inputs or integer inputs, use numbax.jvp directly.")
            elif not allow_int and not dtypes.is_inexact(dt):
                raise NumbaxTypeError(
                    f"{api} requires real- or complex-valued inputs (input dtype that is a "
                    f"sub-dtype of np.inexact), but got {dt.name} for argument {a}. If you "
                    "want to use integer-valued inputs, use vjp or set allow_int to True."
                )


def _check_output_dtype(api: str, dt: np.dtype, holomorphic: bool) -> None:
    if holomorphic and kind_of(dt) != "c":
        raise NumbaxTypeError(f"{api} with holomorphic=True requires outputs with complex "
                              f"dtype, but got {dt.name}.")
    if not holomorphic and kind_of(dt) != "f":
        raise NumbaxTypeError(
            f"{api} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {dt.name}. For holomorphic differentiation, pass "
            "holomorphic=True. For differentiation of non-holomorphic functions involving "
            "complex outputs, use numbax.vjp directly.")
