"""Transforms built from jvp, vjp and vmap: jacfwd, jacrev (jacobian), hessian, and
linear_transpose. Argument plumbing only; the math is in interpreters/ad.py."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import tree_util as tu
from numbax._src.api import _wrap_outputs, jvp, vjp, vmap
from numbax._src.api_checks import (
    _argnums_tuple,
    _check_argnums,
    _check_callable,
    _check_input_dtypes,
    _check_output_dtype,
)
from numbax._src.core import ShapedArray, get_aval
from numbax._src.dtypes import float0, kind_of
from numbax._src.interpreters import ad
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import convert, shape_ops


def _basis(aval: ShapedArray) -> np.ndarray:
    """One-hot tangents for every element of one leaf: (size, *shape), in the leaf's dtype."""
    return np.eye(aval.size, dtype=aval.dtype).reshape((aval.size, *aval.shape))


def _like(block: Any, example: ShapedArray) -> Any:
    """A Jacobian block in `example`'s dtype and weak type, as JAX's (_possible_downcast):
    jacrev's blocks follow the input leaf, jacfwd's the output leaf, so the Jacobian of a
    weakly typed function stays weak and a real input's block drops an imaginary part."""
    if get_aval(block).dtype == float0 or example.dtype == float0:
        return block
    return convert.convert_element_type(block, example.dtype, example.weak_type)


def _partial(fun: Callable, args: tuple, nums: tuple[int, ...], kwargs: dict) -> Callable:
    def f_partial(*diff_args):
        full = list(args)
        for i, a in zip(nums, diff_args, strict=True):
            full[i] = a
        return fun(*full, **kwargs)

    return f_partial


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
    """Jacobian of `fun` by forward mode: one jvp per input element, batched with vmap.

    Args:
      fun: the function; its inputs at argnums must be real floats (complex with holomorphic).
      argnums: the positions of the arguments to differentiate.
      has_aux: fun returns (output, aux); aux is returned unchanged.
      holomorphic: fun is holomorphic: complex inputs and outputs.

    Returns:
      A function giving the Jacobian: output shape followed by input shape.
    """
    single = isinstance(argnums, (int, np.integer))
    argnums_t = _argnums_tuple("jacfwd", argnums)
    _check_callable("jacfwd", fun)

    def jacfun(*args, **kwargs):
        nums = _check_argnums("jacfwd", argnums_t, len(args))
        _check_input_dtypes("jacfwd", args, nums, holomorphic, allow_int=False, forward=True)
        dyn = tuple(args[i] for i in nums)
        dyn_flat, dyn_tree = tu.tree_flatten(dyn)
        avals = [get_aval(x) for x in dyn_flat]
        f_partial = _partial(fun, args, nums, kwargs)
        blocks, aux, out_tree, primal = [], None, None, {}
        for j, aval in enumerate(avals):
            def push(t_j, j=j):
                ts = [t_j if i == j else np.zeros(a.shape, a.dtype) for i, a in enumerate(avals)]
                out = jvp(f_partial, dyn, tu.tree_unflatten(dyn_tree, ts), has_aux=has_aux)
                primal["avals"] = [get_aval(y) for y in tu.tree_leaves(out[0])]
                if holomorphic:
                    for leaf in tu.tree_leaves(out[0]):
                        _check_output_dtype("jacfwd", get_aval(leaf).dtype, holomorphic)
                return (out[1], out[2]) if has_aux else out[1]

            pushed = vmap(push, out_axes=(-1, None) if has_aux else -1)(_basis(aval))
            if has_aux:
                pushed, aux = pushed
            leaves, out_tree = tu.tree_flatten(pushed)
            blocks.append([_like(shape_ops.reshape(y, (*get_aval(y).shape[:-1], *aval.shape)), o)
                           for y, o in zip(leaves, primal["avals"], strict=True)])
        outs = [tu.tree_unflatten(dyn_tree, [b[k] for b in blocks])
                for k in range(out_tree.num_leaves)]
        jac = tu.tree_unflatten(out_tree, [o[0] if single else o for o in outs])
        return (jac, aux) if has_aux else jac

    return jacfun


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """Jacobian of `fun` by reverse mode: one vjp per output element, batched with vmap.

    Args:
      fun: the function; its outputs must be real (complex with holomorphic).
      argnums: the positions of the arguments to differentiate.
      has_aux: fun returns (output, aux); aux is returned unchanged.
      holomorphic: fun is holomorphic: complex inputs and outputs.
      allow_int: allow integer inputs (their cotangents are float0 zeros).

    Returns:
      A function giving the Jacobian: output shape followed by input shape.
    """
    single = isinstance(argnums, (int, np.integer))
    argnums_t = _argnums_tuple("jacrev", argnums)
    _check_callable("jacrev", fun)

    def jacfun(*args, **kwargs):
        nums = _check_argnums("jacrev", argnums_t, len(args))
        _check_input_dtypes("jacrev", args, nums, holomorphic, allow_int)
        dyn = tuple(args[i] for i in nums)
        f_partial = _partial(fun, args, nums, kwargs)
        if has_aux:
            out, f_vjp, aux = vjp(f_partial, *dyn, has_aux=True)
        else:
            out, f_vjp = vjp(f_partial, *dyn)
        out_flat, out_tree = tu.tree_flatten(out)
        out_avals = [get_aval(x) for x in out_flat]
        for oa in out_avals:
            _check_output_dtype("jacrev", oa.dtype, holomorphic)
        jacs = []
        for k, oa in enumerate(out_avals):
            def pull(ct_k, k=k):
                cts = [ct_k if i == k else np.zeros(a.shape, a.dtype)
                       for i, a in enumerate(out_avals)]
                return f_vjp(tu.tree_unflatten(out_tree, cts))

            pulled = vmap(pull)(_basis(oa))
            pulled = tu.tree_map(
                lambda g, x, oa=oa: _like(shape_ops.reshape(g, (*oa.shape,
                                                                *get_aval(g).shape[1:])),
                                          get_aval(x)),
                pulled, dyn)
            jacs.append(pulled[0] if single else pulled)
        jac = tu.tree_unflatten(out_tree, jacs)
        return (jac, aux) if has_aux else jac

    return jacfun


jacobian = jacrev


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
    """The Hessian of a scalar function: jacfwd of jacrev.

    >>> import numbax
    >>> float(numbax.hessian(lambda x: x ** 3)(2.0))
    12.0
    """
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)


def linear_transpose(fun: Callable, *primals: Any, reduce_axes: Sequence = ()) -> Callable:
    """The transpose of a linear function: a function from output cotangents to the tuple of
    input cotangents.

    Args:
      fun: a function linear in all of its arguments.
      *primals: example arguments (only their shapes and dtypes are used).
      reduce_axes: must be empty (JAX removed the feature).

    Returns:
      f_transpose(out_cotangent) -> tuple of input cotangents, one per primal.

    >>> import numbax, numbax.numpy as jnp
    >>> f_t = numbax.linear_transpose(lambda x: 2.0 * x[::-1], jnp.ones(3))
    >>> f_t(jnp.array([1.0, 2.0, 3.0]))[0].tolist()
    [6.0, 4.0, 2.0]
    """
    _check_callable("linear_transpose", fun)
    if reduce_axes:
        raise NotImplementedError("linear_transpose: reduce_axes is not supported (JAX removed "
                                  "it); pass reduce_axes=().")
    primals_flat, in_tree = tu.tree_flatten(primals)
    in_avals = [get_aval(x) for x in primals_flat]
    for i, a in enumerate(in_avals):
        if kind_of(a.dtype) not in "fc":
            raise TypeError(f"linear_transpose: primal leaf {i} has dtype {a.dtype}, expected a "
                            "float or complex dtype (only linear functions of inexact inputs "
                            "can be transposed).")
    store: dict[str, Any] = {}

    def flat_fun(*xs):
        out_flat, store["tree"] = tu.tree_flatten(fun(*tu.tree_unflatten(in_tree, xs)))
        return out_flat

    jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, in_avals)
    out_tree = store["tree"]
    out_avals = [v.aval for v in jaxpr.outvars]

    def transposed(out_cotangent: Any) -> tuple:
        cts_flat, ct_tree = tu.tree_flatten(out_cotangent)
        if ct_tree != out_tree:
            raise TypeError(f"linear_transpose: out_cotangent has structure {ct_tree}, expected "
                            f"the output structure {out_tree}.")
        for i, (c, a) in enumerate(zip(cts_flat, out_avals, strict=True)):
            ca = get_aval(c)
            if (ca.shape, ca.dtype) != (a.shape, a.dtype):
                raise TypeError(f"linear_transpose: cotangent leaf {i} has {ca.str_short()}, "
                                f"expected the output's {a.str_short()}.")
        undefined = [ad.UndefinedPrimal(a) for a in in_avals]
        try:
            cts_in = ad.backward_pass(jaxpr, consts, undefined, cts_flat)
        except (NotImplementedError, KeyError, TypeError, AttributeError) as err:
            raise TypeError(f"linear_transpose: fun is not linear in its inputs ({err}). "
                            "Transpose only linear functions (use vjp otherwise).") from None
        cts_in = [ad.zeros_like_aval(a) if type(c) is ad.Zero else c
                  for c, a in zip(cts_in, in_avals, strict=True)]
        return tuple(tu.tree_unflatten(in_tree, _wrap_outputs(cts_in)))

    return transposed


__all__ = ["hessian", "jacfwd", "jacobian", "jacrev", "linear_transpose"]
