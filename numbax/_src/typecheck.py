"""Jaxpr type checking: every variable bound once before use, every equation's output types
as its primitive's abstract evaluation gives them (run after each transform and pass when
jax_enable_checks is on)."""
from __future__ import annotations

from numbax._src.avals import ShapedArray
from numbax._src.config import config
from numbax._src.core import Atom, Jaxpr, Literal, Var, abstract_eval
from numbax._src.errors import JaxprTypeError


def typecheck_jaxpr(jaxpr: Jaxpr) -> None:
    """Checks that every variable is bound once before use and every eqn's types follow."""
    env: set[Var] = set()

    def check_atom(x: Atom) -> ShapedArray:
        if isinstance(x, Literal):
            return x.aval
        if x not in env:
            raise JaxprTypeError(f"variable {x} used before it is bound\n{jaxpr}")
        return x.aval

    for v in (*jaxpr.constvars, *jaxpr.invars):
        if v in env:
            raise JaxprTypeError(f"variable {v} bound twice\n{jaxpr}")
        env.add(v)
    for eqn in jaxpr.eqns:
        in_avals = [check_atom(x) for x in eqn.invars]
        out_avals = abstract_eval(eqn.primitive, in_avals, eqn.params)
        for v, aval in zip(eqn.outvars, out_avals, strict=True):
            if (v.aval.shape, v.aval.dtype) != (aval.shape, aval.dtype):
                raise JaxprTypeError(
                    f"{eqn.primitive.name} produces {aval.str_short()} but binds "
                    f"{v.aval.str_short()}\n{jaxpr}"
                )
            if v in env:
                raise JaxprTypeError(f"variable {v} bound twice\n{jaxpr}")
            env.add(v)
    for x in jaxpr.outvars:
        check_atom(x)


def check_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """Typechecks when jax_enable_checks is on; returns the jaxpr for chaining."""
    if config.jax_enable_checks:
        typecheck_jaxpr(jaxpr)
    return jaxpr
