"""The transforms users call (make_jaxpr, grad, vjp, jvp, vmap, ...): argument plumbing only."""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes, refs
from numbax._src import tree_util as tu
from numbax._src.api_checks import (  # noqa: F401  (pmap uses api._as_tuple)
    _argnums_tuple,
    _as_tuple,
    _check_argnums,
    _check_callable,
    _check_input_dtypes,
    _check_leaf,
    _check_output_dtype,
    _is_int,
)
from numbax._src.core import ShapedArray, get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError, UnhashableStaticArgumentError
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters import partial_eval as pe
from numbax._src.vjp_object import VJP
from numbax._src.vjp_object import _Spec as _VJPSpec

# ----------------------------------------------------------------------------- flattening


def flatten_fun(f: Callable, in_tree: tu.PyTreeDef) -> tuple[Callable, Callable[[], Any]]:
    """Wraps f (pytree in, pytree out) as a flat function; the output tree is read after a call."""
    store: dict[str, tu.PyTreeDef] = {}

    def flat_fun(*args_flat):
        args, kwargs = tu.tree_unflatten(in_tree, args_flat)
        out = f(*args, **kwargs)
        out_flat, store["tree"] = tu.tree_flatten(out)
        return out_flat

    return flat_fun, lambda: store["tree"]


def _split_static(fun_name: str, args: tuple, static_argnums: tuple[int, ...]):
    """Splits positional args into the dynamic ones and a hashable tuple of the static ones."""
    static = []
    for i in static_argnums:
        if not -len(args) <= i < len(args):
            raise NumbaxValueError(
                f"{fun_name}: static_argnums {static_argnums} refers to argument {i}, but the "
                f"function was called with {len(args)} positional arguments."
            )
        value = args[i]
        try:
            hash(value)
        except TypeError:
            raise UnhashableStaticArgumentError(
                f"{fun_name}: static argument {i} of type {type(value).__name__} is not "
                "hashable; static arguments must be hashable (use a tuple instead of a list, "
                "or pass arrays as non-static arguments)."
            ) from None
        static.append((i % len(args), value))
    static_pos = {i for i, _ in static}
    dynamic = tuple(a for i, a in enumerate(args) if i not in static_pos)
    return dynamic, tuple(static)


def _bind_static(f: Callable, static: tuple, n_args: int) -> Callable:
    def bound(*dynamic, **kwargs):
        it = iter(dynamic)
        statics = dict(static)
        args = [statics[i] if i in statics else next(it) for i in range(n_args)]
        return f(*args, **kwargs)

    return bound


def _abstractify(x: Any) -> ShapedArray:
    if isinstance(x, ShapeDtypeStruct):
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype), x.weak_type)
    return get_aval(x)


# ----------------------------------------------------------------------------- make_jaxpr


class ShapeDtypeStruct:
    """A shape and dtype standing for an array (for eval_shape and make_jaxpr)."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False) -> None:
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    @classmethod
    def like(cls, x: Any) -> ShapeDtypeStruct:
        """The shape, dtype and weak type of `x` (an array, scalar, tracer or any object
        with .shape and .dtype, such as another ShapeDtypeStruct).

        >>> ShapeDtypeStruct.like(np.zeros((2, 3), np.float32))
        ShapeDtypeStruct(shape=(2, 3), dtype=float32)
        """
        if core.is_array_like(x):
            aval = get_aval(x)
            return cls(aval.shape, aval.dtype, weak_type=aval.weak_type)
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            return cls(x.shape, x.dtype, weak_type=getattr(x, "weak_type", False))
        raise NumbaxTypeError(f"ShapeDtypeStruct.like: x is a {type(x).__name__}, expected an "
                              "array, a scalar or an object with .shape and .dtype.")

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""  # as JAX prints eval_shape(...)
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))


def trace_to_jaxpr(fun_name: str, f: Callable, args: tuple, kwargs: dict):
    """Traces f at the avals of (args, kwargs): (closed jaxpr, output tree)."""
    args_flat, in_tree = tu.tree_flatten((args, kwargs))
    for i, x in enumerate(args_flat):
        if not isinstance(x, ShapeDtypeStruct):
            _check_leaf(fun_name, x, f"argument leaf {i}")
    in_avals = [_abstractify(x) for x in args_flat]
    flat_fun, out_tree = flatten_fun(f, in_tree)
    jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, in_avals)
    return core.ClosedJaxpr(jaxpr, consts), out_tree()


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (),
               return_shape: bool = False) -> Callable[..., core.ClosedJaxpr]:
    """Returns a function that traces `fun` and gives its jaxpr.

    Args:
      fun: the function to trace.
      static_argnums: positions of arguments treated as Python constants.
      return_shape: also return the output ShapeDtypeStructs.

    >>> import numbax, numbax.numpy as jnp
    >>> print(numbax.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(1.0))
    { lambda ; a:f64[]. let b:f64[] = sin a; c:f64[] = mul b 2.0:f64[] in (c,) }
    """
    static_argnums = _as_tuple(static_argnums, "make_jaxpr", "static_argnums")
    _check_callable("make_jaxpr", fun)

    @functools.wraps(fun)
    def make(*args, **kwargs):
        dynamic, static = _split_static("make_jaxpr", args, static_argnums)
        f = _bind_static(fun, static, len(args))
        closed, out_tree = trace_to_jaxpr("make_jaxpr", f, dynamic, kwargs)
        if return_shape:
            shapes = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in closed.out_avals]
            return closed, tu.tree_unflatten(out_tree, shapes)
        return closed

    return make


def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """The output shapes and dtypes of fun(*args), as ShapeDtypeStructs, computing nothing."""
    closed, out_tree = trace_to_jaxpr("eval_shape", fun, args, kwargs)
    shapes = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in closed.out_avals]
    return tu.tree_unflatten(out_tree, shapes)


# ----------------------------------------------------------------------------- autodiff


def _wrap_outputs(xs: list) -> list:
    """Transform outputs as Arrays: a numpy array that comes out as it went in (an input or
    a closed-over array passed through) is copied, so later writes to it do not show."""
    from numbax._src.array import Array

    out = []
    for x in xs:
        if isinstance(x, np.ndarray):
            x = Array._from_numpy(pe.snapshot(x))
        elif isinstance(x, np.generic):
            x = Array._from_numpy(np.asarray(x))
        out.append(x)
    return out


def _instantiate(ts: list, avals: list) -> list:
    return [ad.zeros_like_aval(ad.tangent_aval(a)) if type(t) is ad.Zero else t
            for t, a in zip(ts, avals, strict=True)]


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> tuple[Any, ...]:
    """Forward mode: (fun(*primals), the directional derivative along tangents)."""
    _check_callable("jvp", fun)
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise NumbaxTypeError(
            "jvp: primals and tangents must be tuples or lists with one entry per argument, "
            f"got {type(primals).__name__} and {type(tangents).__name__}."
        )
    primals_flat, in_tree = tu.tree_flatten(tuple(primals))
    tangents_flat, tangent_tree = tu.tree_flatten(tuple(tangents))
    if in_tree != tangent_tree:
        raise NumbaxValueError(
            f"jvp: primal and tangent arguments must have the same tree structure; got "
            f"{in_tree} and {tangent_tree}."
        )
    for i, (p, t) in enumerate(zip(primals_flat, tangents_flat, strict=True)):
        _check_leaf("jvp", p, f"primal leaf {i}")
        pa, ta = get_aval(p), get_aval(t)
        # JAX's rule, except that a float tangent of another float precision is taken (numbax
        # defaults to 64 bits where JAX's jnp.ones gives float32 tangents)
        want = pa.dtype if dtypes.is_inexact(pa.dtype) else dtypes.float0
        if ta.dtype != want and not (dtypes.kind_of(pa.dtype) == dtypes.kind_of(ta.dtype) == "f"):
            raise NumbaxTypeError(
                f"jvp: tangent leaf {i} has dtype {dtypes.short_name(ta.dtype)}, expected "
                f"{dtypes.short_name(want)} (primal leaf {i} has dtype "
                f"{dtypes.short_name(pa.dtype)}; an int/bool primal takes a float0 tangent). "
                "Pass tangents of the primal's tangent dtype, as JAX requires.")
        if pa.shape != ta.shape:
            raise NumbaxValueError(
                f"jvp: primal leaf {i} has shape {pa.shape} but its tangent has shape "
                f"{ta.shape}; they must match."
            )
    store: dict[str, Any] = {}
    flat_fun = _flat_fun_with_aux("jvp", fun, in_tree, has_aux, store)
    tangents_in = [ad.Zero.from_primal_value(p) if not dtypes.is_inexact(get_aval(p).dtype)
                   else _as_dtype_of(t, p) for p, t in zip(primals_flat, tangents_flat,
                                                          strict=True)]
    primals_out, tangents_out = ad.jvp_flat(flat_fun, primals_flat, tangents_in)
    n = store["n_out"]
    primals_out, aux_flat = primals_out[:n], primals_out[n:]
    tangents_out = _instantiate(tangents_out[:n], [get_aval(p) for p in primals_out])
    tree = store["tree"]
    result = (tu.tree_unflatten(tree, _wrap_outputs(primals_out)),
              tu.tree_unflatten(tree, _wrap_outputs(tangents_out)))
    return (*result, _aux_result(store, aux_flat)) if has_aux else result


def _flat_fun_with_aux(api: str, fun: Callable, in_tree: tu.PyTreeDef, has_aux: bool,
                       store: dict) -> Callable:
    """fun as a flat function; with has_aux, aux leaves follow the outputs (so they leave the
    transform as primal values, never as escaped tracers)."""

    def flat_fun(*xs):
        out = fun(*tu.tree_unflatten(in_tree, xs))
        aux_flat: list = []
        if has_aux:
            out, aux = _split_aux(api, out)
            aux_flat, store["aux_tree"] = tu.tree_flatten(aux)
        out_flat, store["tree"] = tu.tree_flatten(out)
        store["n_out"] = len(out_flat)
        return [*out_flat, *aux_flat]

    return flat_fun


def _aux_result(store: dict, aux_flat: list) -> Any:
    return tu.tree_unflatten(store["aux_tree"], _wrap_outputs(aux_flat))


def _split_aux(api: str, out: Any) -> tuple[Any, Any]:
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise NumbaxTypeError(
            f"{api}: has_aux=True requires the function to return a pair (output, aux), got "
            f"{type(out).__name__}{' of length ' + str(len(out)) if isinstance(out, (tuple, list)) else ''}."  # noqa: E501
        )
    return out[0], out[1]


def linearize(fun: Callable, *primals: Any, has_aux: bool = False):
    """Returns (fun(*primals), f_jvp) where f_jvp evaluates the linearised function."""
    _check_callable("linearize", fun)
    primals_flat, in_tree = tu.tree_flatten(primals)
    store: dict[str, Any] = {}
    flat_fun = _flat_fun_with_aux("linearize", fun, in_tree, has_aux, store)
    primals_out, jaxpr, consts, differentiable = ad.linearize_flat(flat_fun, primals_flat)
    out_tree, n = store["tree"], store["n_out"]
    primals_out, aux_flat = primals_out[:n], primals_out[n:]

    def f_jvp(*tangents):
        tangents_flat, tree = tu.tree_flatten(tangents)
        if tree != in_tree:
            raise NumbaxValueError(f"linearize: tangents have structure {tree}, expected "
                                   f"{in_tree}.")
        diff_tangents = [t for t, d in zip(tangents_flat, differentiable, strict=True) if d]
        outs = core.eval_jaxpr(jaxpr, consts, *diff_tangents)[:n]
        return tu.tree_unflatten(out_tree, _wrap_outputs(outs))

    primal_out = tu.tree_unflatten(out_tree, _wrap_outputs(primals_out))
    if has_aux:
        return primal_out, f_jvp, _aux_result(store, aux_flat)
    return primal_out, f_jvp


def vjp(fun: Callable, *primals: Any, has_aux: bool = False):
    """Returns (fun(*primals), f_vjp) where f_vjp maps output cotangents to input ones."""
    _check_callable("vjp", fun)
    primals_flat, in_tree = tu.tree_flatten(primals)
    for i, p in enumerate(primals_flat):
        _check_leaf("vjp", p, f"primal leaf {i}")
    store: dict[str, Any] = {}
    flat_fun = _flat_fun_with_aux("vjp", fun, in_tree, has_aux, store)
    primals_out, f_vjp_flat = ad.vjp_flat(flat_fun, primals_flat)
    out_tree, n = store["tree"], store["n_out"]
    primals_out, aux_flat = primals_out[:n], primals_out[n:]
    ids = {id(x): i for i, x in enumerate(primals_flat)}  # residuals that are arguments
    res = f_vjp_flat.consts if isinstance(f_vjp_flat, ad.Pullback) else []
    f_vjp = VJP(f_vjp_flat, _VJPSpec(
        in_tree, out_tree, tuple(get_aval(x) for x in primals_flat),
        tuple(get_aval(x) for x in primals_out), tuple(get_aval(a) for a in aux_flat),
        tuple(ids.get(id(r)) for r in res)))
    primal_out = tu.tree_unflatten(out_tree, _wrap_outputs(primals_out))
    if has_aux:
        return primal_out, f_vjp, _aux_result(store, aux_flat)
    return primal_out, f_vjp


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """Returns a function computing (fun(*args), gradient of fun w.r.t. args[argnums])."""
    _check_callable("value_and_grad", fun)
    single = _is_int(argnums)
    argnums_t = _argnums_tuple("grad", argnums)

    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        nums = _check_argnums("grad", argnums_t, len(args))
        _check_input_dtypes("grad", args, nums, holomorphic, allow_int)

        def f_partial(*diff_args):
            full = list(args)
            for i, a in zip(nums, diff_args, strict=True):
                full[i] = a
            return fun(*full, **kwargs)

        diff_args = tuple(args[i] for i in nums)
        if has_aux:
            ans, f_vjp, aux = vjp(f_partial, *diff_args, has_aux=True)
        else:
            ans, f_vjp = vjp(f_partial, *diff_args)
        _check_scalar_output(ans, holomorphic)
        grads = f_vjp(_ones_like_output(ans))
        g = grads[0] if single else tuple(grads)
        return ((ans, aux), g) if has_aux else (ans, g)

    return value_and_grad_f


def _check_scalar_output(ans: Any, holomorphic: bool) -> None:
    leaves = tu.tree_leaves(ans)
    if len(leaves) != 1:
        raise NumbaxTypeError(
            f"grad requires a function returning one scalar, but it returned a pytree with "
            f"{len(leaves)} leaves. Use jacrev or vjp for non-scalar outputs."
        )
    aval = get_aval(leaves[0])
    if aval.shape != ():
        raise NumbaxTypeError(
            f"Gradient only defined for scalar-output functions. Output had shape: "
            f"{aval.shape}. Use jacrev or vjp for non-scalar outputs, or reduce the output "
            "(e.g. .sum())."
        )
    _check_output_dtype("grad", aval.dtype, holomorphic)


def _as_dtype_of(t: Any, p: Any) -> Any:
    """A float tangent cast to its float primal's dtype (the precisions jvp lets differ)."""
    from numbax._src.lax import convert

    dtype = get_aval(p).dtype
    return t if get_aval(t).dtype == dtype else convert.convert_element_type(t, dtype)


def _ones_like_output(ans: Any) -> Any:
    """grad's seed cotangent: a one of the output's dtype and weak type (as JAX's, so the
    gradient of a weakly typed computation, grad(lambda x: x * 2.)(1.), stays weak)."""
    from numbax._src.array import Array

    aval = get_aval(tu.tree_leaves(ans)[0])
    ones = Array._from_numpy(np.ones((), aval.dtype), aval.weak_type)
    return tu.tree_unflatten(tu.tree_structure(ans), [ones])


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """The gradient of a scalar function w.r.t. args[argnums].

    >>> import numbax
    >>> float(numbax.grad(lambda x: x ** 3)(10.0))
    300.0
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        (value, g) = vg(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return grad_f


# ----------------------------------------------------------------------------- vmap


def _flatten_axes(api: str, what: str, treedef: tu.PyTreeDef, axes: Any,
                  value: Any = None) -> list:
    """Broadcasts an axis spec (a prefix tree of ints/None) to the leaves of `treedef` (the
    structure of `value`, which only improves the error message). Reads structures only: no
    user node is rebuilt with placeholders."""
    flat = tu.broadcast_prefix_leaves(axes, treedef, is_leaf=lambda x: x is None)
    if flat is None:
        axes_tree = tu.tree_structure(axes, is_leaf=lambda x: x is None)
        detail = ""
        try:
            if value is not None:
                tu.flatten_up_to(axes_tree, value, f"{api} {what}")
        except ValueError as err:
            detail = f" ({err})"
        raise NumbaxValueError(
            f"{api} {what} specification must be a tree prefix of the corresponding value, got "
            f"specification {axes} for value tree {treedef}.{detail}"
        ) from None
    for axis in flat:
        if axis is not None and not _is_int(axis) and not batching.is_vmappable_spec(axis):
            raise NumbaxTypeError(
                f"{api} {what} must be an int, None, or (nested) container with those types as "
                f"leaves, but got {axis!r}.")
    return flat


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Hashable = None,
         axis_size: int | None = None, spmd_axis_name: Any = None) -> Callable:
    """Vectorising map: fun mapped over the in_axes of its arguments.

    >>> import numbax, numbax.numpy as jnp
    >>> numbax.vmap(lambda x, y: jnp.dot(x, y))(jnp.ones((2, 3)), jnp.ones((2, 3))).tolist()
    [3.0, 3.0]
    """
    _check_callable("vmap", fun)
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)

    @functools.wraps(fun)
    def vmap_f(*args, **kwargs):
        if kwargs:
            raise NumbaxTypeError("vmap: keyword arguments are not supported; pass arrays "
                                  "positionally so in_axes can describe them.")
        args_flat, in_tree = tu.tree_flatten(args, is_leaf=batching.is_vmappable)
        axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise NumbaxValueError(
                f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                f"positional arguments passed to the function, but got len(in_axes)="
                f"{len(in_axes)}, len(args)={len(args)}"
            )
        in_dims = _flatten_axes("vmap", "in_axes", in_tree, axes, args)
        size = _mapped_size(args_flat, in_dims, axis_size, in_tree)
        in_dims = [_canonical_axis("vmap", d, x, i) for i, (x, d) in
                   enumerate(zip(args_flat, in_dims, strict=True))]
        store: dict[str, Any] = {}

        def flat_fun(*xs):
            store["out"] = fun(*tu.tree_unflatten(in_tree, xs))
            out_flat, store["tree"] = tu.tree_flatten(store["out"], is_leaf=batching.is_vmappable)
            # per-example avals (a vmappable's own handlers check its axes)
            store["avals"] = [None if batching.is_vmappable(x) else get_aval(x)
                              for x in out_flat]
            return out_flat

        def out_dims():
            dims = _flatten_axes("vmap", "out_axes", store["tree"], out_axes, store["out"])
            for d, aval in zip(dims, store["avals"], strict=True):
                if d is not None and aval is not None and not -aval.ndim - 1 <= d <= aval.ndim:
                    raise NumbaxValueError(
                        f"vmap out_axes: axis {d} is out of bounds for array of dimension "
                        f"{aval.ndim + 1} (an output of per-example shape {aval.shape} with its "
                        f"mapped axis). Pass -{aval.ndim + 1} <= out_axes <= {aval.ndim}.")
            return dims

        outs = batching.vmap_flat(flat_fun, batching.AxisData(size, axis_name), in_dims,
                                  out_dims, args_flat)
        return tu.tree_unflatten(store["tree"], _wrap_outputs(outs))

    return vmap_f


def _canonical_axis(api: str, d: int | None, x: Any, i: int) -> int | None:
    if d is None or batching.is_vmappable(x):  # a vmappable's handlers read its spec
        return d
    ndim = get_aval(x).ndim
    if not -ndim <= d < ndim:
        raise NumbaxValueError(
            f"{api} was requested to map its argument along axis {d}, which implies that its "
            f"rank should be at least {max(d + 1, -d)}, but is only {ndim} (its shape is "
            f"{get_aval(x).shape}) [argument leaf {i}]."
        )
    return d % ndim


def _leaf_shape(x: Any) -> tuple[int, ...]:
    return x.shape if isinstance(x, refs.Ref) else get_aval(x).shape


def _mapped_size(args_flat, in_dims, axis_size, in_tree) -> int:
    sizes = {}
    for i, (x, d) in enumerate(zip(args_flat, in_dims, strict=True)):
        if isinstance(x, refs.Ref) and d is not None:  # a mapped Ref sizes the axis too
            if -x.ndim <= d < x.ndim:  # else its vmap handler reports the axis
                sizes[i] = x.shape[d]
        elif d is not None and not batching.is_vmappable(x):  # sized by axis_size or others
            _check_leaf("vmap", x, f"argument leaf {i}")
            shape = get_aval(x).shape
            if not -len(shape) <= d < len(shape):
                _canonical_axis("vmap", d, x, i)
            sizes[i] = shape[d]
    if not sizes:
        if axis_size is None:
            raise NumbaxValueError(
                "vmap must have at least one non-None value in in_axes (or pass axis_size).")
        return int(axis_size)
    distinct = set(sizes.values())
    if len(distinct) > 1 or (axis_size is not None and axis_size not in distinct):
        lines = "\n".join(f"  argument leaf {i} has shape {_leaf_shape(args_flat[i])} and "
                          f"axis {in_dims[i]} to be mapped, of size {s}"
                          for i, s in sizes.items())
        raise NumbaxValueError(f"vmap got inconsistent sizes for array axes to be mapped:\n"
                               f"{lines}")
    return distinct.pop()


# ----------------------------------------------------------------------------- naming, eval


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    """Returns `fun` under a name for staged-out computations (profilers, HLO in JAX).

    Unlike JAX: numbax's jaxprs carry no name stack, so the name is recorded only as the
    wrapper's __name__; the function computes exactly what `fun` does under every transform.
    """
    _check_callable("named_call", fun)
    if name is not None and not isinstance(name, str):
        raise NumbaxTypeError(f"named_call: name has {name!r}, expected a string or None.")

    @functools.wraps(fun)
    def named(*args: Any, **kwargs: Any) -> Any:
        return fun(*args, **kwargs)

    if name is not None:
        named.__name__ = named.__qualname__ = name
    return named


@contextlib.contextmanager
def named_scope(name: str) -> Iterator[None]:
    """Context manager naming the operations staged inside it (for profilers in JAX).

    Unlike JAX: numbax's jaxprs carry no name stack, so this only validates `name`."""
    if not isinstance(name, str):
        raise NumbaxTypeError(f"named_scope: name has {name!r} of type {type(name).__name__}, "
                              "expected a string.")
    yield


def ensure_compile_time_eval() -> contextlib.AbstractContextManager:
    """Context manager under which operations on concrete values run eagerly even while
    tracing for jit, so their results are concrete (usable in Python control flow).

    >>> import numbax, numbax.numpy as jnp
    >>> @numbax.jit
    ... def f(x):
    ...     with numbax.ensure_compile_time_eval():
    ...         n = int(jnp.sum(jnp.arange(4)))  # concrete: 6
    ...     return x * n
    >>> float(f(1.0))
    6.0
    """
    return core.new_dynamic(None)
