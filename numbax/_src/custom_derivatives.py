"""User-defined derivatives (custom_jvp, custom_vjp) and stop_gradient: primitives that hold
the traced primal jaxpr plus the user's rule, so every transform sees one equation."""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from numbax._src import core, dtypes, remat_opt
from numbax._src import custom_call_paths as paths
from numbax._src import tree_util as tu
from numbax._src.core import ClosedJaxpr, Primitive, get_aval
from numbax._src.custom_vjp_outputs import flatten_bwd_output
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters import partial_eval as pe
from numbax._src.symbolic_zeros import CustomVJPPrimal, from_symbolic, to_symbolic

# ----------------------------------------------------------------------------- stop_gradient

stop_gradient_p = Primitive("stop_gradient")
core.abstract_eval_rules[stop_gradient_p] = lambda x: [x]
core.impl_rules[stop_gradient_p] = lambda x: [x]
ad.non_differentiable.add(stop_gradient_p)
batching.defvectorized(stop_gradient_p)


def stop_gradient(x: Any) -> Any:
    """The identity on values, with zero derivative; mapped over the leaves of a pytree.

    >>> import numbax
    >>> float(numbax.grad(lambda x: x * numbax.lax.stop_gradient(x))(3.0))
    3.0
    """

    def stop(leaf):
        if not dtypes.is_inexact(get_aval(leaf).dtype):
            from numbax._src.array import as_result  # an Array, as JAX returns

            return as_result(leaf)
        return stop_gradient_p.bind(leaf)

    return tu.tree_map(stop, x)


# ----------------------------------------------------------------------------- helpers


class _Rule:
    """A user rule as an equation param: hashed and compared by identity (never a cache key)."""

    __slots__ = ("fun", "name")

    def __init__(self, fun: Callable, name: str) -> None:
        self.fun = fun
        self.name = name

    def __call__(self, *args: Any) -> Any:
        return self.fun(*args)

    def __repr__(self) -> str:
        return self.name


def _trace_primal(fun: Callable, args_flat: Sequence[Any]) -> tuple[ClosedJaxpr, list, Any]:
    """Traces flat `fun` at the avals of args: (jaxpr taking consts then args, consts, out tree)."""
    store: dict[str, Any] = {}

    def flat(*xs):
        outs = fun(*xs)
        out_flat, store["tree"] = tu.tree_flatten(outs)
        return out_flat

    avals = [get_aval(x) for x in args_flat]
    jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat, avals)
    closed = ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), [])
    return closed, consts, store["tree"]


def _split_nondiff(api: str, args: tuple, nondiff_argnums: tuple[int, ...]):
    for i in nondiff_argnums:
        if not 0 <= i < len(args):
            raise NumbaxValueError(
                f"{api}: nondiff_argnums {nondiff_argnums} refers to argument {i}, but the "
                f"function was called with {len(args)} positional arguments."
            )
    static = tuple(args[i] for i in nondiff_argnums)
    dyn = tuple(a for i, a in enumerate(args) if i not in nondiff_argnums)
    return static, dyn


def _with_static(fun: Callable, static: tuple, nondiff_argnums: tuple[int, ...]) -> Callable:
    """fun taking all args, re-inserting the nondiff ones at their positions."""

    def bound(*dyn):
        it = iter(dyn)
        by_pos = dict(zip(nondiff_argnums, static, strict=True))
        n = len(dyn) + len(static)
        return fun(*[by_pos[i] if i in by_pos else next(it) for i in range(n)])

    return bound


def _check_args(api: str, args_flat: list) -> None:
    for i, x in enumerate(args_flat):
        if not core.is_array_like(x):
            raise NumbaxTypeError(
                f"{api}: argument leaf {i} is a {type(x).__name__}, which is not a valid array "
                "type. Pass arrays or Python scalars, or list the argument in nondiff_argnums."
            )


def _batch_all(axis_size: int, vals: Sequence[Any], dims: Sequence[int | None]) -> list:
    """Every value with its batch axis in front (unbatched ones broadcast)."""
    return [batching.bdim_at_front(x, d, axis_size) for x, d in zip(vals, dims, strict=True)]


def _vmap_all(fun: Callable, axis_size: int) -> Callable:
    """fun on flat lists, vmapped with every input and output batched along axis 0."""

    def batched(*xs):
        store: dict[str, int] = {}

        def flat(*ys):
            outs = fun(*ys)
            store["n"] = len(outs)
            return outs

        return batching.vmap_flat(flat, batching.AxisData(axis_size, None), [0] * len(xs),
                                  lambda: [0] * store["n"], xs)

    return batched


def _batch_jaxpr(closed: ClosedJaxpr, axis_size: int) -> ClosedJaxpr:
    avals = [a.update(shape=(axis_size, *a.shape)) for a in closed.in_avals]
    fun = _vmap_all(lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs), axis_size)
    jaxpr, consts = pe.trace_to_jaxpr_dynamic(fun, avals)
    return ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), consts


def _forward_attr(self: Any, name: str) -> Any:
    """An attribute the custom-derivative object lacks, from the function it wraps (as JAX's
    do: `f.def_vmap` where custom_vjp wraps a custom_vmap function)."""
    wrapped = self.__dict__.get("__wrapped__")
    if wrapped is None or name.startswith("__"):
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
    return getattr(wrapped, name)


# ----------------------------------------------------------------------------- custom_jvp

custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)


def _custom_jvp_call_abstract_eval(*avals, call_jaxpr, jvp, num_consts, symbolic_zeros):
    return list(call_jaxpr.out_avals)


def _custom_jvp_call_impl(*args, call_jaxpr, jvp, num_consts, symbolic_zeros):
    outs = core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)
    return [core.to_numpy(x) for x in outs]  # re-wrapped with the abstract eval's weak types


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts, symbolic_zeros):
    const_tangents = tangents[:num_consts]
    if any(type(t) is not ad.Zero for t in const_tangents):
        # A closed-over value is being differentiated: the user rule cannot see it, so
        # differentiate the primal itself (correct derivatives, the custom rule unused).
        return ad.jvp_flat(
            lambda *xs: core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *xs),
            primals, tangents)
    consts, args = primals[:num_consts], primals[num_consts:]
    arg_tangents = tangents[num_consts:]  # ad.Zero kept: the rule sees SymbolicZero if asked
    if not symbolic_zeros:
        arg_tangents = [ad.instantiate_zeros(t) for t in arg_tangents]
    primals_out, tangents_out = jvp(consts, args, arg_tangents)
    return primals_out, tangents_out


def _custom_jvp_call_batch(axis_size, vals, dims, *, call_jaxpr, jvp, num_consts,
                           symbolic_zeros):
    vals = _batch_all(axis_size, vals, dims)
    batched_jaxpr, extra = _batch_jaxpr(call_jaxpr, axis_size)
    n_extra = len(extra)

    def batched_jvp(consts, args, tangents):
        old_consts = consts[n_extra:]
        n_c, n_args = len(old_consts), len(args)
        nonzero = [type(t) is not ad.Zero for t in tangents]

        def one(*xs):  # per example: zero tangents stay symbolic, with the example's aval
            it = iter(xs[n_c + n_args:])
            ts = [next(it) if nz else ad.Zero(t.aval.update(shape=t.aval.shape[1:]))
                  for t, nz in zip(tangents, nonzero, strict=True)]
            return _flat_pair(jvp(xs[:n_c], xs[n_c:n_c + n_args], ts))

        outs = _vmap_all(one, axis_size)(*old_consts, *args,
                                         *[t for t in tangents if type(t) is not ad.Zero])
        half = len(outs) // 2
        return outs[:half], outs[half:]

    outs = custom_jvp_call_p.bind(
        *extra, *vals, call_jaxpr=batched_jaxpr, jvp=_Rule(batched_jvp, "batched_jvp"),
        num_consts=num_consts + n_extra, symbolic_zeros=symbolic_zeros)
    return outs, [0] * len(outs)


def _flat_pair(pair) -> list:
    primals_out, tangents_out = pair
    return [*primals_out, *[ad.instantiate_zeros(t) for t in tangents_out]]


core.abstract_eval_rules[custom_jvp_call_p] = _custom_jvp_call_abstract_eval
core.impl_rules[custom_jvp_call_p] = _custom_jvp_call_impl
ad.jvp_rules[custom_jvp_call_p] = _custom_jvp_call_jvp
batching.batch_rules[custom_jvp_call_p] = _custom_jvp_call_batch


class custom_jvp:  # noqa: N801  (JAX's name)
    """A function with a user-defined forward-mode derivative (reverse mode by transposition).

    >>> import numbax, numbax.numpy as jnp
    >>> @numbax.custom_jvp
    ... def f(x):
    ...     return jnp.sin(x)
    >>> @f.defjvp
    ... def f_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return f(x), 2.0 * t
    >>> float(numbax.grad(f)(0.5))
    2.0
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (),
                 symbolic_zeros: bool = False) -> None:
        functools.update_wrapper(self, fun)
        # Underscored state behind read-only properties: functools.wraps copies an instance's
        # __dict__ into wrappers (grad, jit), where plain names like `fun` would clash.
        self._cjvp_fun = fun
        self._cjvp_nondiff = tuple(int(i) for i in nondiff_argnums)
        self._cjvp_symbolic_zeros = bool(symbolic_zeros)
        self._cjvp_rule: Callable | None = None

    __getattr__ = _forward_attr

    fun = property(lambda self: self._cjvp_fun)
    jvp = property(lambda self: self._cjvp_rule)
    nondiff_argnums = property(lambda self: self._cjvp_nondiff)
    symbolic_zeros = property(lambda self: self._cjvp_symbolic_zeros)

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Sets the rule `jvp(primals, tangents) -> (primal_out, tangent_out)`. With
        `symbolic_zeros`, the tangents of inputs not being differentiated arrive as
        SymbolicZero, and the rule may return SymbolicZero for a zero output tangent."""
        self._cjvp_rule = jvp
        self._cjvp_symbolic_zeros = bool(symbolic_zeros)
        return jvp

    def defjvps(self, *tangent_fns: Callable | None) -> None:
        """One rule per argument, `fn(t, primal_out, *primals)`; None = no contribution."""
        if self.nondiff_argnums:
            raise NumbaxTypeError("custom_jvp.defjvps: can't use with nondiff_argnums; "
                                  "use defjvp instead.")

        def jvp(primals, tangents):
            primal_out = self(*primals)
            zeros = tu.tree_map(_zeros_like, primal_out)
            total = zeros
            for fn, t in zip(tangent_fns, tangents, strict=True):
                if fn is not None:
                    total = tu.tree_map(_add, total, fn(t, primal_out, *primals))
            return primal_out, total

        self.defjvp(jvp)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = getattr(self.fun, "__name__", "fun")
        if self.jvp is None:
            raise AttributeError(
                f"No JVP defined for custom_jvp function {name} using defjvp.")
        if kwargs:
            raise NumbaxTypeError(f"custom_jvp function {name}: keyword arguments are not "
                                  "supported; pass arguments positionally.")
        static, dyn = _split_nondiff("custom_jvp", args, self.nondiff_argnums)
        dyn_flat, in_tree = tu.tree_flatten(dyn)
        _check_args(f"custom_jvp function {name}", dyn_flat)
        dyn_flat = paths.lower_known(dyn_flat)
        fun = _with_static(self.fun, static, self.nondiff_argnums)
        if paths.is_eager(dyn_flat):
            return fun(*tu.tree_unflatten(in_tree, dyn_flat))
        user_jvp = self.jvp
        nondiff = self.nondiff_argnums
        store: dict[str, Any] = {}

        def flat_jvp(consts_in, xs, ts):
            primals = tu.tree_unflatten(in_tree, xs)
            tangents = tu.tree_unflatten(in_tree, [to_symbolic(t) for t in ts])
            out = user_jvp(*static, primals, tangents) if nondiff else user_jvp(primals,
                                                                                 tangents)
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise NumbaxTypeError(
                    f"custom_jvp rule of {name} must return a pair (primal_out, tangent_out), "
                    f"got {type(out).__name__}.")
            p_flat, p_tree = tu.tree_flatten(out[0])
            t_flat, t_tree = tu.tree_flatten(out[1])
            t_flat = [from_symbolic(t) for t in t_flat]
            out_tree = store.setdefault("out_tree", p_tree)
            if p_tree != out_tree or t_tree != out_tree:
                raise NumbaxTypeError(
                    f"custom_jvp rule of {name} must produce primal and tangent outputs with "
                    f"the same container (pytree) structure as the primal function, expected "
                    f"{out_tree}, got {p_tree} and {t_tree}.")
            for i, (p, t) in enumerate(zip(p_flat, t_flat, strict=True)):
                if get_aval(p).shape != get_aval(t).shape:
                    raise NumbaxTypeError(
                        f"custom_jvp rule of {name}: tangent output leaf {i} has shape "
                        f"{get_aval(t).shape}, expected the primal output's shape "
                        f"{get_aval(p).shape}.")
            return p_flat, t_flat

        trace = paths.jvp_trace(dyn_flat)
        if trace is not None:
            outs = paths.run_on_primals(
                trace, dyn_flat,
                lambda xs, ts: flat_jvp((), xs, ts if self.symbolic_zeros
                                        else [ad.instantiate_zeros(t) for t in ts]))
            if outs is not None:
                return tu.tree_unflatten(store["out_tree"], outs)
        closed, consts, out_tree = _trace_primal(
            lambda *xs: fun(*tu.tree_unflatten(in_tree, xs)), dyn_flat)
        store["out_tree"] = out_tree
        outs = custom_jvp_call_p.bind(
            *consts, *dyn_flat, call_jaxpr=closed, jvp=_Rule(flat_jvp, f"jvp({name})"),
            num_consts=len(consts), symbolic_zeros=self.symbolic_zeros)
        return tu.tree_unflatten(out_tree, outs)


def _zeros_like(x: Any) -> Any:
    return ad.zeros_like_aval(get_aval(x).update(weak_type=False))


def _add(x: Any, y: Any) -> Any:
    return ad.add_tangents(x, y) if get_aval(x).shape == get_aval(y).shape else x + y


# ----------------------------------------------------------------------------- custom_vjp

custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_lin_p = Primitive("custom_lin", multiple_results=True)


def _custom_vjp_call_abstract_eval(*avals, call_jaxpr, fwd, bwd, num_consts, out_avals_ct):
    return list(call_jaxpr.out_avals)


def _custom_vjp_call_impl(*args, call_jaxpr, fwd, bwd, num_consts, out_avals_ct):
    outs = core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)
    return [core.to_numpy(x) for x in outs]  # re-wrapped with the abstract eval's weak types


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts,
                         out_avals_ct):
    if any(type(t) is not ad.Zero for t in tangents[:num_consts]):
        raise NumbaxTypeError(
            "custom_vjp: the function closes over a value that is being differentiated; "
            "pass it as an explicit argument instead so the bwd rule can give its cotangent.")
    args = primals[num_consts:]
    perturbed = tuple(type(t) is not ad.Zero for t in tangents[num_consts:])
    outs, res = fwd(primals[:num_consts], args, perturbed)
    arg_tangents = [ad.instantiate_zeros(t) for t in tangents[num_consts:]]
    tangents_out = custom_lin_p.bind(*res, *arg_tangents, num_res=len(res), bwd=bwd,
                                     out_avals=tuple(out_avals_ct))
    return outs, tangents_out


def _custom_lin_abstract_eval(*avals, num_res, bwd, out_avals):
    return list(out_avals)


def _custom_lin_impl(*args, num_res, bwd, out_avals):
    raise NumbaxTypeError(
        "can't apply forward-mode autodiff (jvp) to a custom_vjp function. Use grad/vjp/"
        "jacrev, or define the derivative with custom_jvp instead.")


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals):
    res = args[:num_res]
    # zero cotangents stay ad.Zero: bwd turns them into SymbolicZero or arrays of zeros
    cts = [ad.Zero(a) if type(ct) is ad.Zero else ct for ct, a in zip(cts, out_avals,
                                                                        strict=True)]
    cts_in = bwd(res, cts)
    return [None] * num_res + list(cts_in)


def _custom_vjp_call_batch(axis_size, vals, dims, *, call_jaxpr, fwd, bwd, num_consts,
                           out_avals_ct):
    vals = _batch_all(axis_size, vals, dims)
    batched_jaxpr, extra = _batch_jaxpr(call_jaxpr, axis_size)
    n_extra = len(extra)
    store: dict[str, int] = {}

    def batched_fwd(consts, args, perturbed):
        old_consts = consts[n_extra:]
        n_c = len(old_consts)

        def flat(*xs):
            outs, res = fwd(xs[:n_c], xs[n_c:], perturbed)
            store["n_out"] = len(outs)
            return [*outs, *res]

        outs = _vmap_all(flat, axis_size)(*old_consts, *args)
        return outs[:store["n_out"]], outs[store["n_out"]:]

    def batched_bwd(res, cts):
        n_res = len(res)
        nonzero = [type(ct) is not ad.Zero for ct in cts]

        def one(*xs):  # per example: zero cotangents stay symbolic, with the example's aval
            it = iter(xs[n_res:])
            cts_1 = [next(it) if nz else ad.Zero(ct.aval.update(shape=ct.aval.shape[1:]))
                     for ct, nz in zip(cts, nonzero, strict=True)]
            return [ad.instantiate_zeros(c) for c in bwd(xs[:n_res], cts_1)]

        return _vmap_all(one, axis_size)(*res, *[ct for ct in cts if type(ct) is not ad.Zero])

    outs = custom_vjp_call_p.bind(
        *extra, *vals, call_jaxpr=batched_jaxpr, fwd=_Rule(batched_fwd, "batched_fwd"),
        bwd=_Rule(batched_bwd, "batched_bwd"), num_consts=num_consts + n_extra,
        out_avals_ct=tuple(a.update(shape=(axis_size, *a.shape)) for a in out_avals_ct))
    return outs, [0] * len(outs)


core.abstract_eval_rules[custom_vjp_call_p] = _custom_vjp_call_abstract_eval
core.impl_rules[custom_vjp_call_p] = _custom_vjp_call_impl
ad.jvp_rules[custom_vjp_call_p] = _custom_vjp_call_jvp
batching.batch_rules[custom_vjp_call_p] = _custom_vjp_call_batch
core.abstract_eval_rules[custom_lin_p] = _custom_lin_abstract_eval
core.impl_rules[custom_lin_p] = _custom_lin_impl
ad.transpose_rules[custom_lin_p] = _custom_lin_transpose
# custom_lin only lives inside linear jaxprs, which are transposed, never evaluated forward:
# its jvp and batch rules raise the same forward-mode error as its impl.
ad.jvp_rules[custom_lin_p] = lambda primals, tangents, **params: _custom_lin_impl(
    *primals, **params)
batching.batch_rules[custom_lin_p] = lambda size, vals, dims, **params: _custom_lin_impl(
    *vals, **params)


class custom_vjp:  # noqa: N801  (JAX's name)
    """A function with a user-defined reverse-mode derivative: `defvjp(fwd, bwd)`.

    >>> import numbax, numbax.numpy as jnp
    >>> @numbax.custom_vjp
    ... def f(x):
    ...     return jnp.sin(x)
    >>> f.defvjp(lambda x: (f(x), x), lambda x, g: (3.0 * g,))
    >>> float(numbax.grad(f)(0.5))
    3.0
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self._cvjp_fun = fun  # underscored: see custom_jvp.__init__
        self._cvjp_nondiff = tuple(int(i) for i in nondiff_argnums)
        self._cvjp_fwd: Callable | None = None
        self._cvjp_bwd: Callable | None = None
        self._cvjp_symbolic_zeros = False
        self._cvjp_optimize_remat = False

    __getattr__ = _forward_attr

    fun = property(lambda self: self._cvjp_fun)
    fwd = property(lambda self: self._cvjp_fwd)
    bwd = property(lambda self: self._cvjp_bwd)
    nondiff_argnums = property(lambda self: self._cvjp_nondiff)
    symbolic_zeros = property(lambda self: self._cvjp_symbolic_zeros)
    optimize_remat = property(lambda self: self._cvjp_optimize_remat)

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
               optimize_remat: bool = False) -> None:
        """fwd(*args) -> (out, residuals); bwd(residuals, out_cotangent) -> args' cotangents.

        With `symbolic_zeros`, fwd gets each argument leaf as CustomVJPPrimal(value,
        perturbed) and bwd gets SymbolicZero for the cotangents of unused outputs (and may
        return SymbolicZero or None for zero cotangents). With `optimize_remat`, under
        checkpoint the forward pass runs the primal function instead of fwd when the
        residuals are not kept, and fwd runs in the backward pass."""
        if symbolic_zeros and optimize_remat:
            raise NotImplementedError(
                "remat optimization for custom_vjp does not support symbolic zeros")
        self._cvjp_fwd = fwd
        self._cvjp_bwd = bwd
        self._cvjp_symbolic_zeros = bool(symbolic_zeros)
        self._cvjp_optimize_remat = bool(optimize_remat)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = getattr(self.fun, "__name__", "fun")
        if self.fwd is None or self.bwd is None:
            raise AttributeError(
                f"No VJP defined for custom_vjp function {name} using defvjp.")
        if kwargs:
            raise NumbaxTypeError(f"custom_vjp function {name}: keyword arguments are not "
                                  "supported; pass arguments positionally.")
        static, dyn = _split_nondiff("custom_vjp", args, self.nondiff_argnums)
        dyn_flat, in_tree = tu.tree_flatten(dyn)
        _check_args(f"custom_vjp function {name}", dyn_flat)
        dyn_flat = paths.lower_known(dyn_flat)
        fun = _with_static(self.fun, static, self.nondiff_argnums)
        if paths.is_eager(dyn_flat):
            return fun(*tu.tree_unflatten(in_tree, dyn_flat))
        user_fwd = _with_static(self.fwd, static, self.nondiff_argnums)
        user_bwd, nondiff = self.bwd, self.nondiff_argnums
        in_avals = [get_aval(x) for x in dyn_flat]
        store: dict[str, Any] = {}

        symbolic = self.symbolic_zeros

        def flat_fwd(consts_in, xs, perturbed):
            if symbolic:
                xs = [CustomVJPPrimal(x, p) for x, p in zip(xs, perturbed, strict=True)]
            out = user_fwd(*tu.tree_unflatten(in_tree, xs))
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise NumbaxTypeError(
                    f"Custom VJP fwd rule {getattr(self.fwd, '__name__', 'fwd')} for function "
                    f"{name} must produce a pair (list or tuple of length two) where the first "
                    "element represents the primal output (equal to the output of the "
                    f"custom_vjp-decorated function {name}) and the second element represents "
                    f"residuals (i.e. values stored from the forward pass for use on the "
                    f"backward pass), but instead the fwd rule output was {type(out).__name__}.")
            outs_flat, tree = tu.tree_flatten(out[0])
            out_tree = store.setdefault("out_tree", tree)
            if tree != out_tree:
                raise NumbaxTypeError(
                    f"Custom VJP fwd rule for function {name} must produce a primal output "
                    f"with the same container (pytree) structure as the primal function, "
                    f"expected {out_tree}, got {tree}.")
            res_flat, store["res_tree"] = tu.tree_flatten(out[1])
            return outs_flat, res_flat

        def flat_bwd(res_flat, cts_flat):
            cts_flat = [to_symbolic(c) if symbolic else ad.instantiate_zeros(c)
                        for c in cts_flat]
            res = tu.tree_unflatten(store["res_tree"], res_flat)
            ct = tu.tree_unflatten(store["out_tree"], cts_flat)
            cts_in = user_bwd(*static, res, ct) if nondiff else user_bwd(res, ct)
            return flatten_bwd_output(name, cts_in, in_tree, in_avals)

        trace = paths.jvp_trace(dyn_flat)
        if trace is not None:
            def fwd_and_lin(xs, ts):  # what custom_vjp_call's jvp rule does, untraced primal
                outs, res = flat_fwd((), xs, tuple(type(t) is not ad.Zero for t in ts))
                avals = tuple(ad.tangent_aval(get_aval(o)) for o in outs)
                ts = [ad.instantiate_zeros(t) for t in ts]
                return outs, custom_lin_p.bind(*res, *ts, num_res=len(res), bwd=bwd_rule,
                                               out_avals=avals)

            bwd_rule = _Rule(flat_bwd, f"bwd({name})")
            outs = paths.run_on_primals(trace, dyn_flat, fwd_and_lin)
            if outs is not None:
                return tu.tree_unflatten(store["out_tree"], outs)
            store.pop("out_tree", None)
        closed, consts, out_tree = _trace_primal(
            lambda *xs: fun(*tu.tree_unflatten(in_tree, xs)), dyn_flat)
        store["out_tree"] = out_tree
        out_avals_ct = tuple(ad.tangent_aval(a) for a in closed.out_avals)
        if self.optimize_remat:
            flat_fwd = remat_opt.optimizable_fwd(flat_fwd, closed)
        outs = custom_vjp_call_p.bind(
            *consts, *dyn_flat, call_jaxpr=closed, fwd=_Rule(flat_fwd, f"fwd({name})"),
            bwd=_Rule(flat_bwd, f"bwd({name})"), num_consts=len(consts),
            out_avals_ct=out_avals_ct)
        return tu.tree_unflatten(out_tree, outs)
