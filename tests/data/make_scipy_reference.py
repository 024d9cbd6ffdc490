"""Records jax.scipy.special / jax.scipy.stats / jax.lax special-function outputs (x64) into
scipy_jax_reference.json (run once, with jax installed):

    /work/jaxenv/bin/python tests/data/make_scipy_reference.py

Each case is {"fn": dotted path under jax (e.g. "scipy.stats.norm.logpdf"), "args": [...],
"kwargs": {...}, "grad": argnum or null, "out": [...]}; the numbax tests read the JSON only,
call numbax's function of the same path and compare (nan where JAX gives nan). Inputs mix
ordinary points with edges (0, -0, +-inf, nan, out-of-support values) where JAX's
conventions differ from scipy's."""
import json
import pathlib

import numpy as np

OUT = pathlib.Path(__file__).with_name("scipy_jax_reference.json")

EDGE = [-np.inf, -5.0, -1.0, -0.5, -0.0, 0.0, 1e-10, 0.3, 0.5, 1.0, 2.5, 5.0, 30.0, np.inf,
        np.nan]
POS = [1e-10, 0.3, 0.5, 1.0, 2.5, 5.0, 30.0]
PROB = [-0.1, 0.0, 1e-12, 0.01, 0.3, 0.5, 0.9, 1.0, 1.1, np.nan]


def cases():
    """(fn, args, kwargs, grad) for every recorded output."""
    out = []

    def add(fn, *args, grad=None, **kwargs):
        out.append((fn, [_encode(a) for a in args], kwargs, grad))

    # --- special: unary on the edge grid
    for name in ["gammaln", "gamma", "gammasgn", "loggamma", "digamma", "erf", "erfc",
                 "erfcx", "dawsn", "expit", "i0", "i0e", "i1", "i1e", "entr", "ndtr",
                 "log_ndtr", "spence", "expi"]:
        add(f"scipy.special.{name}", EDGE)
    for name in ["erfinv", "logit", "ndtri"]:
        add(f"scipy.special.{name}", PROB)
    add("scipy.special.sici", EDGE)
    add("scipy.special.fresnel", EDGE)
    for v in [1e-10, 0.5, 1.0, 5.0, 50.0]:  # JAX's exp1/expn do not finish on arrays
        add("scipy.special.exp1", v)
        add("scipy.special.expn", 3, v)
    add("scipy.special.factorial", [-1.0, 0.0, 1.0, 3.5, 10.0, np.nan])
    # --- special: several arguments
    a = [0.5, 1.0, 2.5, 0.0, -1.0, 3.0, np.inf, 2.0]
    x = [0.3, 1.0, 4.0, 1.0, 1.0, 0.0, 1.0, np.nan]
    add("scipy.special.gammainc", a, x)
    add("scipy.special.gammaincc", a, x)
    add("scipy.special.betaln", [0.5, 1.0, 2.5, 1e-3, 300.0, -1.5],
        [2.0, 1.0, 0.3, 1e4, 400.0, 2.0])
    add("scipy.special.beta", [0.5, 1.0, 2.5, -0.5, 3.0], [2.0, 1.0, 0.3, 1.5, -1.2])
    add("scipy.special.betainc", [1.0, 2.0, 0.5, 3.0, 2.0], [1.0, 3.0, 0.5, 2.0, 2.0],
        [0.5, 0.2, 0.9, 0.0, 1.5])
    add("scipy.special.xlogy", [0.0, 0.0, 2.0, 1.0, 0.0], [0.0, 2.0, 3.0, -1.0, np.nan])
    add("scipy.special.xlog1py", [0.0, 0.0, 2.0, 1.0, 0.0], [-1.0, 2.0, 3.0, -2.0, np.nan])
    add("scipy.special.rel_entr", [0.0, 0.0, 1.0, 2.0, -1.0, 1.0], [0.0, 1.0, 2.0, 0.5, 1.0, 0.0])
    add("scipy.special.kl_div", [0.0, 0.0, 1.0, 2.0, -1.0, 1.0], [0.0, 1.0, 2.0, 0.5, 1.0, 0.0])
    add("scipy.special.boxcox", [0.5, 1.0, 2.0, 0.0, -1.0], [0.0, 2.0, -1.5, 2.0, 0.5])
    add("scipy.special.boxcox1p", [0.5, 0.0, 2.0, -1.0, -2.0], [0.0, 2.0, -1.5, 2.0, 0.5])
    add("scipy.special.comb", [5.0, 10.0, 4.0, -1.0, 6.0], [2.0, 3.0, 5.0, 1.0, 0.0])
    add("scipy.special.comb", [5.0, 10.0, 0.0], [2.0, 3.0, 0.0], repetition=True)
    add("scipy.special.poch", [3.0, 20.0, -2.5, 0.5, -2.0, 1.0], [2.0, 30.0, 1.5, 0.0, 1.0, -1.0])
    add("scipy.special.multigammaln", [3.0, 5.5, 10.0], 3)
    add("scipy.special.polygamma", [0, 1, 3, 2], [1.5, 2.0, 0.7, -0.5])
    add("scipy.special.zeta", [2.0, 3.5, 1.5, 1.0, 0.5, 2.0], [1.0, 0.3, 2.0, 1.0, 1.0, -1.5])
    add("scipy.special.owens_t", [0.0, 0.5, -1.0, 3.0, 0.2, 2.0], [1.0, 0.3, 2.0, -0.5, 10.0, 0.0])
    add("scipy.special.hyp1f1", [1.0, 0.5, 2.0, 0.0, 1.5, 3.0], [2.0, 1.5, 3.0, 1.0, 1.5, 0.0],
        [1.0, -2.0, 5.0, 3.0, 2.0, 1.0])
    add("scipy.special.hyp2f1", [1.0, 0.5, 2.0, 0.0, 1.0, 1.0], [1.0, 1.5, 0.3, 2.0, 2.0, 2.0],
        [2.0, 2.5, 3.0, 1.0, 2.0, 4.5], [0.5, -0.5, 0.2, 0.7, 0.3, 1.0])
    add("scipy.special.logsumexp", [[1.0, 2.0, 3.0], [-np.inf, -np.inf, -np.inf]], axis=1)
    add("scipy.special.logsumexp", [1.0, 2.0], b=[1.0, -1.0], return_sign=True)
    add("scipy.special.softmax", [[1.0, 2.0], [3.0, 5.0]])
    add("scipy.special.log_softmax", [[1.0, 2.0], [3.0, 5.0]], axis=0)
    add("scipy.special.bernoulli", 8)
    add("scipy.special.bessel_jn", [0.5, 1.0, 3.0, 10.0], v=3)
    add("scipy.special.sph_harm_y", [0, 1, 2, 3, 3], [0, -1, 2, 1, -3], [0.3, 1.0, 2.0, 0.5, 2.5],
        [0.1, 2.0, 4.0, 1.0, 5.5], n_max=3)
    add("scipy.special.wofz", [0.5, -1.0, 3.0])
    z = np.array([0j, -1 + 0j, -2.5 + 0j, complex(-2.5, -0.0), 1 + 0j, 2 + 3j, -3 + 1e-300j,
                  -3.0000001 + 1e-9j, complex(np.nan, 1), complex(np.inf, 0), 0.5 - 2j,
                  -50.3 + 4j, 0.25 + 0.1j])
    add("scipy.special.loggamma", z)
    add("scipy.special.gamma", z[[0, 1, 2, 4, 5, 10, 12]])
    # --- special: JAX's custom derivatives
    for name, pts in [("erfcx", [-1.0, 0.5, 3.0]), ("dawsn", [0.1, 1.0, 4.0]),
                      ("expi", [-2.0, 0.5, 3.0]), ("ndtri", [1e-5, 0.3, 0.9]),
                      ("log_ndtr", [-30.0, -2.0, 3.0]), ("spence", [0.3, 0.8, 4.0]),
                      ("gammaln", [0.5, 3.0, 7.0]), ("digamma", [0.5, 3.0, 7.0]),
                      ("logit", [0.2, 0.5, 0.9]), ("i0e", [-2.0, 0.5, 4.0]),
                      ("i1e", [-2.0, 0.5, 4.0])]:
        add(f"scipy.special.{name}", pts, grad=0)
    add("scipy.special.zeta", [2.0, 3.5, 5.0], [1.0, 0.3, 2.0], grad=0)
    add("scipy.special.zeta", [2.0, 3.5, 5.0], [1.0, 0.3, 2.0], grad=1)
    add("scipy.special.gammainc", [0.5, 2.0, 10.0], [0.3, 3.0, 8.0], grad=0)
    add("scipy.special.gammaincc", [0.5, 2.0, 10.0], [0.3, 3.0, 8.0], grad=1)
    add("scipy.special.betainc", [1.0, 2.0, 0.5], [1.0, 3.0, 0.5], [0.5, 0.2, 0.9], grad=2)
    add("scipy.special.poch", [3.0, 2.5, 0.5], [2.0, 1.5, 3.0], grad=0)
    add("scipy.special.poch", [3.0, 2.5, 0.5], [2.0, 1.5, 3.0], grad=1)
    add("scipy.special.xlogy", [0.0, 2.0, 1.5], [2.0, 3.0, 0.5], grad=1)
    add("scipy.special.owens_t", [0.5, -1.0, 3.0], [0.3, 2.0, -0.5], grad=0)
    add("scipy.special.owens_t", [0.5, -1.0, 3.0], [0.3, 2.0, -0.5], grad=1)
    add("scipy.special.hyp1f1", [1.0, 0.5, 2.0], [2.0, 1.5, 3.0], [1.0, -2.0, 5.0], grad=0)
    add("scipy.special.hyp1f1", [1.0, 0.5, 2.0], [2.0, 1.5, 3.0], [1.0, -2.0, 5.0], grad=2)
    add("lax.random_gamma_grad", [0.5, 2.0, 10.0], [0.3, 3.0, 8.0])
    add("lax.igamma_grad_a", [0.5, 2.0, 10.0, 0.0, 1.0], [0.3, 3.0, 8.0, 1.0, 0.0])

    # --- stats, on points spanning the supports and their edges
    xs = [-np.inf, -3.0, -0.5, 0.0, 0.2, 0.5, 1.0, 1.5, 4.0, np.inf, np.nan]
    qs = PROB
    every = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]
    gumbel = every[:-1]
    for dist, fns in [("norm", every), ("uniform", ["logpdf", "pdf", "cdf", "ppf"]),
                      ("expon", every[:-1]), ("laplace", ["logpdf", "pdf", "cdf"]),
                      ("logistic", ["logpdf", "pdf", "cdf", "sf", "ppf", "isf"]),
                      ("cauchy", every), ("gumbel_l", gumbel), ("gumbel_r", gumbel)]:
        for fn in fns:
            points = qs if fn in ("ppf", "isf") else xs
            if (dist, fn) in (("norm", "isf"), ("cauchy", "ppf"), ("cauchy", "isf")):
                # numbax keeps the tails' precision (ndtri(q), cot): JAX loses it near 0 and 1
                points = [q for q in qs if q != q or 0.01 <= q <= 0.9]
            add(f"scipy.stats.{dist}.{fn}", points, 0.5, 2.0)
    add("scipy.stats.gumbel_r.logpdf", [0.5, 1.0], 0.0, [-1.0, 0.0])
    add("scipy.stats.norm.logpdf", xs)
    for fn in ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]:
        add(f"scipy.stats.beta.{fn}", xs, 2.0, 3.0)
        add(f"scipy.stats.beta.{fn}", [0.2, 0.5, 0.7], [0.5, -1.0, 2.0], [0.5, 2.0, 0.0], 0.1,
            [1.0, 1.0, 1.0])
        add(f"scipy.stats.gamma.{fn}", xs, 2.5, 0.5, 1.5)
        add(f"scipy.stats.chi2.{fn}", xs, 3.0, 0.5, 1.5)
        add(f"scipy.stats.pareto.{fn}", xs + [3.0, 10.0], 2.0, 0.5, 1.5)
        # JAX's truncnorm cdf family returns 1 or 0 at x = nan; numbax propagates the nan
        add(f"scipy.stats.truncnorm.{fn}", xs[:-1] if "cdf" in fn or "sf" in fn else xs,
            -1.0, 2.0, 0.5, 1.5)
        add(f"scipy.stats.truncnorm.{fn}", [0.0, 5.0, 7.0], [3.0, 4.0, 2.0], [8.0, 9.0, 1.0])
    add("scipy.stats.pareto.ppf", qs, 2.0, 0.5, 1.5)
    for fn in ["logpdf", "pdf"]:
        add(f"scipy.stats.t.{fn}", xs, 3.0, 0.5, 1.5)
        add(f"scipy.stats.vonmises.{fn}", xs, [1.0] * 10 + [-1.0])
        add(f"scipy.stats.wrapcauchy.{fn}", [-1.0, 0.0, 1.0, 3.0, 7.0, 2.0], [0.5] * 5 + [1.5])
        add(f"scipy.stats.gennorm.{fn}", xs, 1.5)
        add(f"scipy.stats.multivariate_normal.{fn}", [[0.5, -1.0], [1.0, 2.0]], [0.2, 0.1],
            [[2.0, 0.3], [0.3, 1.0]])
        add(f"scipy.stats.dirichlet.{fn}", [[0.2, 0.5], [0.3, 0.3], [0.5, 0.2]], [1.5, 2.0, 3.0])
    add("scipy.stats.gennorm.cdf", xs, 1.5)
    add("scipy.stats.multivariate_normal.logpdf", [0.5, 1.0], 0.2, 2.0)
    add("scipy.stats.multivariate_normal.logpdf", [[0.5, 1.0]], [0.0, 0.2], 2.0)
    ks = [-1.0, 0.0, 1.0, 2.0, 2.5, 3.0, 10.0, np.nan]
    for fn in ["logpmf", "pmf"]:
        add(f"scipy.stats.bernoulli.{fn}", ks, 0.3)
        add(f"scipy.stats.binom.{fn}", ks, 5.0, 0.3)
        add(f"scipy.stats.binom.{fn}", [0.0, 0.0, 3.0], [0.0, 3.0, 3.0], [0.3, 0.0, 1.0])
        add(f"scipy.stats.betabinom.{fn}", ks, 5.0, 2.0, 3.0)
        add(f"scipy.stats.geom.{fn}", ks, 0.3)
        add(f"scipy.stats.nbinom.{fn}", ks, 3.0, 0.4)
        add(f"scipy.stats.poisson.{fn}", ks, 2.5)
        add(f"scipy.stats.multinomial.{fn}", np.array([1, 2, 0]), 3, [0.2, 0.5, 0.3])
    add("scipy.stats.bernoulli.cdf", ks, 0.3)
    add("scipy.stats.bernoulli.ppf", qs, 0.3)
    add("scipy.stats.poisson.cdf", ks, 2.5)
    add("scipy.stats.poisson.entropy", [0.0, 0.5, 3.0, 20.0, 99.0])
    add("scipy.stats.rankdata", [3.0, 1.0, 3.0, 2.0, 1.0], method="average")
    add("scipy.stats.rankdata", [3.0, 1.0, 3.0, 2.0, 1.0], method="min")
    add("scipy.stats.rankdata", [3.0, 1.0, 3.0, 2.0, 1.0], method="max")
    add("scipy.stats.rankdata", [3.0, 1.0, 3.0, 2.0, 1.0], method="dense")
    add("scipy.stats.rankdata", [3.0, 1.0, 3.0, 2.0, 1.0], method="ordinal")
    add("scipy.stats.rankdata", [3.0, np.nan, 3.0])
    add("scipy.stats.rankdata", [[3.0, 1.0, 3.0], [0.0, 2.0, 2.0]], axis=1)
    add("scipy.stats.sem", [[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]], axis=1)
    add("scipy.stats.sem", [1.0, 2.0, np.nan, 4.0], nan_policy="omit")
    add("scipy.stats.mode", [[3.0, 1.0, 3.0], [2.0, 2.0, 1.0]], axis=1)
    add("scipy.stats.mode", [1.0, 2.0, 2.0, 1.0], axis=None)
    return out


def _resolve(jax, path):
    obj = jax
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _encode(x):
    """A list (complex values as {"re": [...], "im": [...]}, since JSON has no complex)."""
    x = np.asarray(x)
    if x.dtype.kind == "c":  # complex values
        return {"re": x.real.tolist(), "im": x.imag.tolist()}
    return x.tolist()


def _decode(x):
    if isinstance(x, dict):
        return np.asarray(x["re"]) + 1j * np.asarray(x["im"])
    return np.asarray(x) if isinstance(x, list) else x


def record() -> dict:
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.scipy.special  # noqa: F401
    import jax.scipy.stats  # noqa: F401

    records = []
    for fn, args, kwargs, grad in cases():
        f = _resolve(jax, fn)
        if grad is not None:
            def scalar(*a, f=f, kwargs=kwargs):
                return f(*a, **kwargs)

            g = jax.vmap(jax.grad(scalar, argnums=grad))
            outs = g(*[np.asarray(_decode(a), float) for a in args])
        else:
            outs = f(*[_decode(a) for a in args],
                     **{k: np.asarray(v) if isinstance(v, list) else v
                        for k, v in kwargs.items()})
        outs = list(outs) if isinstance(outs, tuple) else [outs]
        records.append({"fn": fn, "args": args, "kwargs": kwargs, "grad": grad,
                        "out": [_encode(o) for o in outs]})
    return {"jax_version": jax.__version__, "cases": records}


if __name__ == "__main__":
    data = record()
    text = json.dumps(data, allow_nan=True)
    OUT.write_text(text)
    print(f"{len(data['cases'])} cases, {len(text) / 1024:.0f} KB -> {OUT}")
