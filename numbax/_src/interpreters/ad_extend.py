"""JAX's autodiff extension API (jax.interpreters.ad) over numbax's rule tables.

JAX's rules take and return single values for single-result primitives and sequences for
multiple-result ones; numbax's tables (ad.jvp_rules, ad.transpose_rules) hold list-returning
rules. The views here translate in both directions, so a rule registered either way serves
both numbax's transformations and code that reads JAX's tables."""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from typing import Any

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.core import Primitive
from numbax._src.interpreters import ad
from numbax._src.interpreters import partial_eval as pe
from numbax._src.interpreters.ad import Zero, add_tangents, instantiate_zeros

# ----------------------------------------------------------------------------- rule tables


def _single(prim: Primitive, outs: list) -> Any:
    return outs if prim.multiple_results else outs[0]


def _listed(prim: Primitive, outs: Any) -> list:
    return list(outs) if prim.multiple_results else [outs]


class _RuleView(MutableMapping):
    """A JAX-convention view of one of numbax's rule tables: setting a JAX rule stores its
    numbax translation; reading gives the JAX rule (the one set, or a translation)."""

    def __init__(self, table: dict, to_numbax: Callable, to_jax: Callable,
                 extra: Callable[[], set] = set) -> None:
        self._table = table
        self._to_numbax = to_numbax
        self._to_jax = to_jax
        self._extra = extra  # primitives with an implicit rule (non-differentiable ones)
        self._originals: dict[Primitive, tuple[Callable, Callable]] = {}

    def __setitem__(self, prim: Primitive, rule: Callable) -> None:
        translated = self._to_numbax(prim, rule)
        self._table[prim] = translated
        self._originals[prim] = (rule, translated)

    def __getitem__(self, prim: Primitive) -> Callable:
        rule = self._table.get(prim)
        if rule is None:
            if prim in self._extra():
                return self._to_jax(prim, None)
            raise KeyError(prim)
        original = self._originals.get(prim)
        if original is not None and original[1] is rule:
            return original[0]
        return self._to_jax(prim, rule)

    def __delitem__(self, prim: Primitive) -> None:
        del self._table[prim]
        self._originals.pop(prim, None)

    def __iter__(self) -> Iterator[Primitive]:
        yield from self._table
        yield from (p for p in self._extra() if p not in self._table)

    def __len__(self) -> int:
        return len(set(self._table) | set(self._extra()))

    def __contains__(self, prim: object) -> bool:
        return prim in self._table or prim in self._extra()

    def __repr__(self) -> str:
        return f"{{{', '.join(p.name for p in self)}}}"


def _jvp_to_numbax(prim: Primitive, rule: Callable) -> Callable:
    def numbax_rule(primals, tangents, **params):
        out, t_out = rule(primals, tangents, **params)
        return _listed(prim, out), _listed(prim, t_out)

    return numbax_rule


def _jvp_to_jax(prim: Primitive, rule: Callable | None) -> Callable:
    def jax_rule(primals, tangents, **params):
        if rule is None:  # non-differentiable: zero tangents
            outs = core.bind(prim, *primals, **params)
            return _single(prim, outs), _single(prim, [Zero.from_primal_value(o) for o in outs])
        outs, t_outs = rule(list(primals), list(tangents), **params)
        return _single(prim, outs), _single(prim, t_outs)

    return jax_rule


def _transpose_to_numbax(prim: Primitive, rule: Callable) -> Callable:
    def numbax_rule(cts, *args, **params):
        return list(rule(_single(prim, cts), *args, **params))

    return numbax_rule


def _transpose_to_jax(prim: Primitive, rule: Callable) -> Callable:
    def jax_rule(ct, *args, **params):
        return rule(_listed(prim, ct), *args, **params)

    return jax_rule


primitive_jvps: MutableMapping = _RuleView(ad.jvp_rules, _jvp_to_numbax, _jvp_to_jax,
                                           lambda: ad.non_differentiable)
primitive_transposes: MutableMapping = _RuleView(ad.transpose_rules, _transpose_to_numbax,
                                                 _transpose_to_jax)


def get_primitive_transpose(p: Primitive) -> Callable:
    """The transpose rule of p; NotImplementedError when it has none."""
    try:
        return primitive_transposes[p]
    except KeyError as err:
        raise NotImplementedError(
            f"Transpose rule (for reverse-mode differentiation) for '{p}' not implemented"
        ) from err


# ----------------------------------------------------------------------------- rule helpers


def _sum_tangents(ans: Any, contributions: list) -> Any:
    return functools.reduce(add_tangents, contributions, Zero.from_primal_value(ans))


def _check_single(api: str, prim: Primitive) -> None:
    if prim.multiple_results:
        raise NotImplementedError(
            f"ad.{api}: {prim.name} has multiple results; write its rule as a function and "
            "register it in ad.primitive_jvps.")


def defjvp(primitive: Primitive, *jvprules: Callable | None) -> None:
    """One tangent rule per operand, `rule(g, *primals, **params)` (None: the operand does not
    affect the output); the output tangent is the sum over nonzero input tangents."""
    _check_single("defjvp", primitive)

    def rule(primals, tangents, **params):
        ans = primitive.bind(*primals, **params)
        parts = [fn(t, *primals, **params) for fn, t in zip(jvprules, tangents, strict=True)
                 if fn is not None and type(t) is not Zero]
        return [ans], [_sum_tangents(ans, parts)]

    ad.jvp_rules[primitive] = rule


def defjvp2(primitive: Primitive, *jvprules: Callable | None) -> None:
    """Like defjvp, but each rule also gets the primal output: `rule(g, ans, *primals, **p)`."""
    _check_single("defjvp2", primitive)

    def rule(primals, tangents, **params):
        ans = primitive.bind(*primals, **params)
        parts = [fn(t, ans, *primals, **params) for fn, t in
                 zip(jvprules, tangents, strict=True) if fn is not None and type(t) is not Zero]
        return [ans], [_sum_tangents(ans, parts)]

    ad.jvp_rules[primitive] = rule


def _linear_jvp(primitive: Primitive) -> Callable:
    def rule(primals, tangents, **params):
        outs = core.bind(primitive, *primals, **params)
        if all(type(t) is Zero for t in tangents):
            return outs, [Zero.from_primal_value(o) for o in outs]
        return outs, core.bind(primitive, *map(instantiate_zeros, tangents), **params)

    return rule


def _zero_cts(args: Sequence[Any]) -> list:
    return [Zero(ad.tangent_aval(x.aval)) if ad.is_undefined_primal(x) else None for x in args]


def deflinear(primitive: Primitive, transpose_rule: Callable) -> None:
    """A primitive linear in all its operands; `transpose_rule(ct, **params)` returns one
    cotangent per operand."""

    def transpose(cts, *args, **params):
        ct = _single(primitive, cts)
        if type(ct) is Zero:
            return _zero_cts(args)
        return list(transpose_rule(ct, **params))

    ad.jvp_rules[primitive] = _linear_jvp(primitive)
    ad.transpose_rules[primitive] = transpose


def deflinear2(primitive: Primitive, transpose_rule: Callable) -> None:
    """Like deflinear, but the rule also sees the operands: `transpose_rule(ct, *args, **p)`
    (linear ones as UndefinedPrimal)."""

    def transpose(cts, *args, **params):
        ct = _single(primitive, cts)
        if type(ct) is Zero:
            return _zero_cts(args)
        return list(transpose_rule(ct, *args, **params))

    ad.jvp_rules[primitive] = _linear_jvp(primitive)
    ad.transpose_rules[primitive] = transpose


def defbilinear(prim: Primitive, lhs_rule: Callable, rhs_rule: Callable) -> None:
    """A primitive linear in each of its two operands separately (like mul): the rules give
    the cotangent of x (`lhs_rule(ct, x, y, **p)`, x undefined) and of y."""
    ad.defbilinear(prim, lhs_rule, rhs_rule)


def add_jaxvals(x: Any, y: Any) -> Any:
    """x + y for tangent values (the add_any primitive)."""
    return ad.add_any_p.bind(x, y)


add_jaxvals_p = ad.add_any_p

# ----------------------------------------------------------------------------- transformations


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False,
        instantiate: bool | Sequence[bool] = True, transform_stack: bool = True) -> tuple:
    """Forward mode of `fun` at `primals` along `tangents` (flat sequences; Zero allowed).

    Returns (primal output leaves, tangent output leaves) and, with has_aux, the auxiliary
    output of `fun` (which then returns a pair (outputs, aux))."""
    primals, tangents = list(primals), list(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"ad.jvp: {len(primals)} primals but {len(tangents)} tangents; pass "
                         "one tangent (or ad.Zero) per primal.")
    store: dict[str, Any] = {}

    def flat_fun(*xs):
        ans = fun(*xs)
        if has_aux:
            if not isinstance(ans, (list, tuple)) or len(ans) != 2:
                raise TypeError("ad.jvp: expected a function with aux output to return a "
                                f"two-element tuple, but got {type(ans).__name__}.")
            ans, store["aux"] = ans
        return tu.tree_leaves(ans)

    primals_out, tangents_out = ad.jvp_flat(flat_fun, primals, tangents)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(tangents_out)
    tangents_out = [instantiate_zeros(t) if inst else t
                    for t, inst in zip(tangents_out, instantiate, strict=True)]
    aux = (_lower(store["aux"]),) if has_aux else ()
    return (primals_out, tangents_out, *aux)


def _lower(tree: Any) -> Any:
    """An auxiliary output without the tracers of the transformation that just ended."""

    def strip(x):
        while isinstance(x, core.Tracer):
            if isinstance(x, ad.JVPTracer):
                x = x.primal
            elif isinstance(x, pe.PartialEvalTracer) and x.pval.is_known:
                x = x.pval.const
            else:
                break
        return x

    return tu.tree_map(strip, tree)


def linearize(traceable: Callable, primals: Sequence[Any], has_aux: bool = False,
              is_vjp: bool = False) -> tuple:
    """Evaluates `traceable` at `primals` and stages its linear (tangent) part.

    Returns (primal output leaves, out_zeros, jaxpr, consts): the jaxpr takes the tangents of
    the inexact (float or complex) primals, in order, with `consts` for its constvars, and
    returns every output tangent (out_zeros is all False: zeros are instantiated).
    Unlike JAX: integer and boolean primals get no tangent input in the jaxpr."""
    store: dict[str, Any] = {}

    def flat_fun(*xs):
        ans = traceable(*xs)
        if has_aux:
            ans, store["aux"] = ans
        return tu.tree_leaves(ans)

    primals_out, jaxpr, consts, _ = ad.linearize_flat(flat_fun, list(primals))
    out_zeros = [False] * len(jaxpr.outvars)
    aux = (_lower(store["aux"]),) if has_aux else ()
    return (primals_out, out_zeros, jaxpr, consts, *aux)
