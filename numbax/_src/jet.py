"""jax.experimental.jet: Taylor-mode differentiation as one trace (JetTrace) pushing truncated
Taylor series through every primitive; the rules for each primitive are in jet_rules.py.

Inside, a series is the Taylor coefficients x(t) = x0 + x1 t + x2 t**2 + ..., the form in
which products and compositions are convolutions; `jet` converts from and to JAX's default
factorial-scaled terms (derivatives) at its boundary. A series known to be zero is `None`.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.core import ClosedJaxpr, Primitive, Trace, Tracer, get_aval
from numbax._src.errors import NumbaxValueError
from numbax._src.interpreters import ad

Series = list | None  # K Taylor coefficients, or None for a series known to be zero

# prim -> rule(primals, series, **params) -> (primals_out, series_out), lists; a series_out
# entry may be None (zero). Every input series arrives instantiated (K arrays).
jet_rules: dict[Primitive, Callable] = {}
# prim -> rule(trace, tracers, **params) -> output tracers: primitives holding a jaxpr that
# runs as it is (custom derivatives, checkpoint), interpreted under the jet trace itself.
jet_call_rules: dict[Primitive, Callable] = {}


class JetTracer(Tracer):
    __slots__ = ("primal", "terms")

    def __init__(self, trace: Trace, primal: Any, terms: Series) -> None:
        super().__init__(trace)
        self.primal = primal
        self.terms = terms

    @property
    def aval(self) -> core.ShapedArray:
        return get_aval(self.primal)

    def full_lower(self) -> Any:
        return core.full_lower(self.primal) if self.terms is None else self

    def to_concrete_value(self) -> Any:
        if isinstance(self.primal, Tracer):
            return self.primal.to_concrete_value()
        return core.concrete_or_error(self.primal, "")


class JetTrace(Trace):
    """main.global_data is the order K (the number of terms of every series)."""

    def pure(self, val: Any) -> JetTracer:
        return JetTracer(self, val, None)

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        call_rule = jet_call_rules.get(primitive)
        if call_rule is not None:
            return call_rule(self, tracers, **params)
        primals_in = [t.primal for t in tracers]
        series_in = [t.terms for t in tracers]
        if all(s is None for s in series_in):
            return core.bind(primitive, *primals_in, **params)
        rule = jet_rules.get(primitive)
        if rule is None:
            if primitive not in ad.non_differentiable:
                raise NotImplementedError(
                    f"jet: Taylor-mode rule for '{primitive.name}' is not implemented. "
                    "Rewrite that part of the function with supported operations, or "
                    "differentiate it with repeated jvp."
                )
            return [JetTracer(self, x, None)
                    for x in core.bind(primitive, *primals_in, **params)]
        order = self.main.global_data
        series_in = [instantiate(s, x, order) for s, x in zip(series_in, primals_in, strict=True)]
        primals_out, series_out = rule(primals_in, series_in, **params)
        return [JetTracer(self, x, s) for x, s in zip(primals_out, series_out, strict=True)]


def instantiate(series: Series, primal: Any, order: int) -> list:
    """The K terms of `series`, zeros (of the primal's type) where it is None."""
    if series is not None:
        return series
    zero = ad.zeros_like_aval(get_aval(primal).update(weak_type=False))
    return [zero] * order


def jet_flat(f: Callable, primals: Sequence[Any], series: Sequence[Series],
             order: int) -> tuple[list, list[Series]]:
    """Pushes Taylor coefficients (not factorial-scaled) through f, a function of flat arrays
    returning a flat list; output series are None where known to be zero."""
    with core.new_main(JetTrace, order) as main:
        trace = JetTrace(main)
        tracers = [JetTracer(trace, x, None if s is None else list(s))
                   for x, s in zip(primals, series, strict=True)]
        outs = [core.full_raise(trace, out) for out in f(*tracers)]
        return [t.primal for t in outs], [t.terms for t in outs]


def jet2(f: Callable, primals: Sequence[Any], series: Sequence[list]) -> tuple[Any, list]:
    """jet of a function with one output, in coefficients (for rules built by composition):
    (primal_out, its K coefficients); K may be 0."""
    order = len(series[0])
    if order == 0:
        return f(*primals), []
    (out,), (terms,) = jet_flat(lambda *xs: [f(*xs)], primals, series, order)
    return out, instantiate(terms, out, order)


def jet(fun: Callable, primals: Sequence[Any], series: Sequence[Sequence[Any]],
        factorial_scaled: bool = True, **_: Any) -> tuple[Any, Any]:
    """Taylor-mode higher-order automatic differentiation.

    Args:
      fun: a function of arrays (positional arguments) returning an array or a pytree of them.
      primals: a tuple or list of the arguments at which to expand `fun`.
      series: one tuple or list of terms per argument, all of the same length K (the order).
        With `factorial_scaled`, term k (from 1) of argument i is the k-th derivative of that
        argument along a curve, so that `jet` returns derivatives; otherwise terms are the
        Taylor coefficients (the derivative divided by k!).
      factorial_scaled: whether input and output terms are derivatives (True, JAX's default)
        or Taylor coefficients.

    Returns:
      `(primals_out, series_out)`: `fun(*primals)` and its K terms, each a pytree like the
      output (a list of K arrays for an array output).

    Unlike JAX: custom_jvp/custom_vjp functions (jax.nn.relu...) and checkpoint are expanded
    through the functions they wrap (JAX fails on them), a conversion to an integer type
    carries a zero series (JAX converts the terms), and the factorials are exact.

    >>> import numbax.numpy as jnp
    >>> from numbax.experimental.jet import jet
    >>> y0, (y1, y2) = jet(jnp.exp, (0.0,), ((1.0, 0.0),))
    >>> float(y0), float(y1), float(y2)
    (1.0, 1.0, 1.0)
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(series, (tuple, list)):
        raise NumbaxValueError(
            f"jet: primals and series have types {type(primals).__name__} and "
            f"{type(series).__name__}, expected tuples or lists with one entry per argument. "
            "Pass (x,) and ((x1, x2, ...),) for one argument.")
    try:
        (order,) = set(map(len, series))
    except ValueError:
        raise NumbaxValueError("jet terms have inconsistent lengths for different arguments") \
            from None
    if len(primals) != len(series):
        raise NumbaxValueError(
            f"jet: primals has {len(primals)} arguments and series {len(series)}, expected one "
            "series per argument.")
    for i, (x, terms) in enumerate(zip(primals, series, strict=True)):
        if not tu.treedef_is_leaf(tu.tree_structure(x)):
            raise NumbaxValueError(f"primal value at position {i} is not an array")
        for j, t in enumerate(terms):
            if not tu.treedef_is_leaf(tu.tree_structure(t)):
                raise NumbaxValueError(f"term {j} for argument {i} is not an array")
    series = [[_scale(t, k, factorial_scaled, down=True) for k, t in enumerate(terms)]
              for terms in series]
    store: dict[str, Any] = {}

    def flat_fun(*xs):
        out_flat, store["tree"] = tu.tree_flatten(fun(*xs))
        return out_flat

    primals_out, series_out = jet_flat(flat_fun, list(primals), series, order)
    series_out = [[_scale(t, k, factorial_scaled, down=False) for k, t in
                   enumerate(instantiate(s, x, order))]
                  for s, x in zip(series_out, primals_out, strict=True)]
    tree = store["tree"]
    return tu.tree_unflatten(tree, primals_out), tu.tree_unflatten(tree, series_out)


def _scale(term: Any, k: int, factorial_scaled: bool, down: bool) -> Any:
    """Term k (from 0: the first-order term) from a derivative to a coefficient (down) or
    back. Every term is scaled, the first by 1.0, so integer terms become floats (JAX's)."""
    if not factorial_scaled:
        return term
    fact = float(math.factorial(k + 1))
    return term / fact if down else term * fact


# ----------------------------------------------------------------------------- calls


def call_rule(param: str) -> Callable:
    """A primitive that calls the jaxpr in `param` on its operands (its custom derivative rule,
    if any, unused): the jaxpr is interpreted under the jet trace."""

    def rule(trace: JetTrace, tracers: list, **params) -> list:
        sub = params[param]
        jaxpr, consts = (sub.jaxpr, sub.consts) if isinstance(sub, ClosedJaxpr) else (sub, [])
        outs = core.eval_jaxpr(jaxpr, consts, *tracers)
        return [core.full_raise(trace, out) for out in outs]

    return rule
