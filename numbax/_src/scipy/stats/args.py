"""Argument promotion and small numerics shared by the numbax.scipy.stats distributions."""
from __future__ import annotations

from typing import Any

from numbax._src.numpy.lax_numpy import where
from numbax._src.numpy.ufuncs import exp, expm1, log, log1p
from numbax._src.scipy.special.args import const, real_float


def promote(api: str, *args: Any) -> list[Any]:
    """args promoted to one real floating dtype and broadcast (errors name stats.<api>)."""
    return real_float(f"stats.{api}", *args)


def log1mexp(t: Any) -> Any:
    """log(1 - exp(-t)) for t >= 0, accurate at both ends (Maechler's switch at log 2)."""
    small = t < 0.6931471805599453
    return where(small, log(-expm1(-where(small, t, const(t, 1)))),
                 log1p(-exp(-where(small, const(t, 1), t))))


def log_diff_exp(x: Any, y: Any) -> Any:
    """log(exp(x) - exp(y)) for x >= y (-inf where they are equal)."""
    same = x == y
    return where(same, const(x, -float("inf")), x + log1mexp(where(same, const(x, 1), x - y)))


_ARG_DOCS = {
    "x": "the points, a real array",
    "k": "the counts, a real array (integer-valued)",
    "q": "probabilities, a real array",
    "p": "probabilities, a real array",
    "loc": "location, broadcast against the other arguments",
    "scale": "scale (> 0), broadcast against the other arguments",
    "a": "the first shape parameter, broadcast",
    "b": "the second shape parameter, broadcast",
    "df": "degrees of freedom, broadcast",
    "n": "the number of trials, broadcast",
    "mu": "the mean, broadcast",
    "beta": "the shape parameter, broadcast",
    "kappa": "the concentration (> 0), broadcast",
    "c": "the shape parameter in (0, 1), broadcast",
    "mean": "the mean vector (..., n) or a scalar",
    "cov": "the covariance matrix (..., n, n) or a scalar variance",
    "alpha": "the concentration vector, one-dimensional",
    "allow_singular": "not supported: must be None (as in JAX)",
}


def documented(returns: str):
    """Adds Args (from the signature's names) and Returns sections after a public
    distribution function's first paragraph."""
    import inspect

    def wrap(fn):
        names = list(inspect.signature(fn).parameters)
        args = "\n".join(f"      {name}: {_ARG_DOCS[name]}." for name in names)
        summary, _, rest = (fn.__doc__ or "").rstrip().partition("\n\n")
        sections = f"\n\n    Args:\n{args}\n\n    Returns:\n      {returns}\n"
        fn.__doc__ = summary + sections + (("\n" + rest + "\n") if rest.strip() else "")
        return fn

    return wrap
