"""jet programs shared by make_jet_reference.py (run with JAX, x64 on) and tests/test_jet.py
(numbax): each takes a namespace `m` holding `jax`, `jnp`, `lax`, `nn` and returns
(fun, primals, series); JAX's (primals_out, series_out) are recorded in jet_jax_reference.json.

JAX's jet has no rule for exp2, cbrt, tan, asin, acos, atan, lgamma, digamma and checkpoint
(KeyError) and leaks a tracer on custom_jvp functions (relu, softplus): those are in
NUMBAX_ONLY, checked against repeated jvp alone."""
import numpy as np

X = np.array([0.1, 0.5, 0.7])
H1, H2, H3 = np.array([1.0, -0.5, 0.25]), np.array([0.5, 0.3, -1.0]), np.array([-0.3, 2.0, 0.1])
SERIES = ((H1, H2, H3),)
Y = np.array([1.3, 0.4, 2.0])
M = np.linspace(-1.0, 1.0, 12).reshape(3, 4)


def unary(name):
    """fun = m.<module>.<name> applied to X with three terms."""
    def program(m):
        fun = m
        for attr in name.split("."):
            fun = getattr(fun, attr)
        return fun, (X,), SERIES
    return program


UNARY = ["jnp.exp", "jnp.log", "jnp.log1p", "jnp.expm1", "jnp.sqrt", "lax.rsqrt",
         "jnp.tanh", "nn.sigmoid", "jnp.sin", "jnp.cos", "jnp.sinh", "jnp.cosh",
         "jnp.arcsinh", "jnp.arctanh", "lax.erf", "lax.erfc", "lax.erf_inv", "jnp.square",
         "jnp.abs", "jnp.negative", "jnp.cumsum", "jnp.cumprod", "nn.softmax", "nn.logsumexp",
         "jnp.linalg.norm", "nn.gelu"]
NUMBAX_ONLY_UNARY = ["jnp.exp2", "jnp.cbrt", "jnp.tan", "jnp.arcsin", "jnp.arccos", "jnp.arctan",
                     "lax.lgamma", "lax.digamma", "nn.relu", "nn.softplus"]


def docs_example(m):
    """JAX's docstring: sin at h0 = 0.5**3 with h1 = 3 * 0.5**2, h2 = 6 * 0.5."""
    return m.jnp.sin, (0.5 ** 3,), ((3 * 0.5 ** 2, 6 * 0.5),)


def arithmetic(m):
    return (lambda x, y: x * y + x / y - 2.0 * x + y ** 3), (X, Y), \
        ((H1, H2, H3), (H3, H1, H2))


def powers(m):
    return (lambda x, y: x ** y + x ** 3 + x ** -2 + m.lax.integer_pow(x, 0)), (X, Y), \
        ((H1, H2, H3), (H2, H3, H1))


def atan2(m):
    return m.jnp.arctan2, (X, Y), ((H1, H2, H3), (H2, H3, H1))


def matmul(m):
    return (lambda w, x: m.jnp.tanh(w.T @ m.jnp.sin(x))), (M, X), \
        ((M * 0.5, M * -0.1, M * 0.2), (H1, H2, H3))


def choices(m):
    jnp = m.jnp

    def f(x, y):
        z = jnp.where(x > 0.3, x * x, jnp.exp(x))
        return jnp.maximum(x, y) + jnp.minimum(z, jnp.full_like(z, 0.2)) + jnp.maximum(x, 0.5) + \
            m.lax.clamp(0.2, x, jnp.full_like(x, 0.6))
    return f, (X, np.array([0.1, 0.2, 0.9])), ((H1, H2, H3), (H2, H1, H3))


def reductions(m):
    jnp = m.jnp
    return (lambda w: (jnp.max(w, axis=1), jnp.min(w), jnp.sum(w * w, axis=0))), (M,), \
        ((M * 0.5, M * -0.1, M * 0.2),)


def structure(m):
    jnp, lax = m.jnp, m.lax

    def f(w):
        a = jnp.concatenate([w, w[::-1] * 2.0], axis=0).reshape(4, 6).T
        b = jnp.pad(w, ((1, 0), (0, 2)))[1:, 2:]
        c = lax.dynamic_slice(w, (1, 1), (2, 2))
        d = w[jnp.array([2, 0])] + jnp.broadcast_to(w[:, :1], (3, 4))[:2]
        return {"a": jnp.sin(a), "b": b * b, "c": jnp.exp(c), "d": d}
    return f, (M,), ((M * 0.5, M * -0.1, M * 0.2),)


def jitted(m):
    g = m.jax.jit(lambda x: m.jnp.sin(x) * m.jnp.exp(x))
    return (lambda x: g(x) * 2.0), (X,), SERIES


def conversions(m):
    jnp = m.jnp
    return (lambda x: (x.astype(jnp.float32).astype(jnp.float64) * x)), (X,), SERIES


def order5(m):
    return (lambda x: m.jnp.exp(m.jnp.sin(x)) / (1.0 + x * x)), (X,), \
        ((H1, H2, H3, H1 * 0.1, H2 * 0.3),)


def rem(m):
    return (lambda x: m.lax.rem(x * 7.0, 1.5)), (X,), SERIES


PROGRAMS = {**{f"unary_{n}": unary(n) for n in UNARY}, "docs_example": docs_example,
            "arithmetic": arithmetic, "powers": powers, "atan2": atan2, "matmul": matmul,
            "choices": choices, "reductions": reductions, "structure": structure,
            "jitted": jitted, "conversions": conversions, "order5": order5, "rem": rem}
NUMBAX_ONLY = {f"unary_{n}": unary(n) for n in NUMBAX_ONLY_UNARY}
