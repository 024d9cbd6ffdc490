"""jax.custom_derivatives programs (custom_gradient, closure_convert, linear_call, symbolic
zeros, optimize_remat), shared by make_api_reference.py (run with JAX) and
tests/test_custom_derivatives_api.py (numbax): each takes a namespace holding `jax`, `jnp`, `cd`
(the custom_derivatives module) and returns plain Python values (and what the rules saw)."""
from functools import partial

import numpy as np


def _plain(x):
    if isinstance(x, (tuple, list)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, str) or x is None:
        return x
    return np.asarray(x).tolist()


def custom_gradient(m):
    jax, jnp = m.jax, m.jnp

    @m.cd.custom_gradient
    def square(x):
        return x ** 2, lambda g: (g * x,)

    @m.cd.custom_gradient
    def mul(x, y):
        return x * y, lambda g: (g * y, g * x)

    @jax.custom_gradient
    def clipped_sin(x):  # the rule closes over a forward-pass intermediate
        c = jnp.cos(x)
        return jnp.sin(x), lambda g: (jnp.clip(g * c, -0.5, 0.5),)

    xs = jnp.linspace(-2.0, 2.0, 5)
    return _plain([square(3.0), jax.grad(square)(3.0), mul(3.0, 4.0),
                   jax.grad(mul, argnums=(0, 1))(3.0, 4.0),
                   jax.jit(jax.grad(mul, argnums=(0, 1)))(1.5, -2.0),
                   jax.vmap(jax.grad(clipped_sin))(xs),
                   jax.grad(lambda x: jnp.sum(clipped_sin(x) * 3.0))(xs),
                   jax.jit(jax.vmap(jax.grad(square)))(xs)])


def closure_convert_minimize(m):
    """The closure_convert docstring's pattern: a fixed-point solver with an implicit
    gradient, differentiated with respect to a value the objective closes over."""
    jax, jnp = m.jax, m.jnp

    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def fixed_point(f, x0, *args):
        x = x0
        for _ in range(60):
            x = f(x, *args)
        return x

    def fwd(f, x0, *args):
        x = fixed_point(f, x0, *args)
        return x, (x, args)

    def bwd(f, res, g):
        x, args = res
        _, vjp_x = jax.vjp(lambda z: f(z, *args), x)
        _, vjp_args = jax.vjp(lambda *a: f(x, *a), *args)
        w = g  # solve w = g + (df/dx)^T w by iteration
        for _ in range(60):
            w = g + vjp_x(w)[0]
        return (jnp.zeros_like(x),) + tuple(vjp_args(w))

    fixed_point.defvjp(fwd, bwd)

    def solve(a):
        f = lambda x: 0.5 * jnp.cos(x) * a  # noqa: E731 - closes over a
        converted, consts = m.cd.closure_convert(f, 0.3)
        return fixed_point(converted, 0.3, *consts), len(consts)

    def value(a):
        return solve(a)[0]

    h = 1e-6
    return _plain([value(1.2), solve(1.2)[1], jax.grad(value)(1.2),
                   (value(1.2 + h) - value(1.2 - h)) / (2 * h)])


def linear_call(m):
    jax = m.jax

    def f(r, x):
        return x / r

    def t(r, ct):
        return ct / r

    def div_add(x, denom):
        return x + m.cd.linear_call(f, t, denom, x)

    def transpose(fun, x_example):
        def transposed(y):
            (x,) = jax.linear_transpose(fun, x_example)(y)
            return x
        return transposed

    def custom_id(x):
        return m.cd.linear_call(lambda _, x: x, lambda _, t: 7.0, (), x)

    def pair(x):  # pytree linear arguments and outputs
        return m.cd.linear_call(lambda r, xy: {"s": xy[0] * r, "d": xy[1] - xy[0]},
                                lambda r, ct: (ct["s"] * r - ct["d"], ct["d"] * 2.0),
                                2.0, (x, x * 3.0))

    xs = [1.0, 2.0, 3.0]  # (JAX has no batching rule for linear_call: the test vmaps these)
    return _plain([div_add(9.0, 3.0), transpose(partial(div_add, denom=3.0), 1.0)(18.0),
                   custom_id(1.0), transpose(custom_id, 1.0)(1.0),
                   transpose(transpose(custom_id, 1.0), 1.0)(1.0),
                   jax.grad(div_add)(9.0, 3.0), jax.jit(jax.grad(div_add))(9.0, 3.0),
                   [div_add(x, x + 1) for x in xs], [jax.grad(div_add)(x, x + 1) for x in xs],
                   pair(1.5), jax.grad(lambda x: pair(x)["s"] + 5 * pair(x)["d"])(1.5)])


def symbolic_zeros(m):
    jax, jnp, cd = m.jax, m.jnp, m.cd
    seen = []

    @jax.custom_jvp
    def f(x, y):
        return x * y

    def f_jvp(primals, tangents):
        seen.append(["jvp"] + [type(t).__name__ == "SymbolicZero" for t in tangents])
        (x, y), (tx, ty) = primals, tangents
        out = 0.0
        if type(tx) is not cd.SymbolicZero:
            out = out + tx * y
        if type(ty) is not cd.SymbolicZero:
            out = out + ty * x
        return x * y, out

    f.defjvp(f_jvp, symbolic_zeros=True)

    @jax.custom_vjp
    def g(x, y):
        return x * y, jnp.sin(x)

    def g_fwd(x, y):
        seen.append(["fwd", x.perturbed, y.perturbed])
        x, y = cd.custom_vjp_primal_tree_values((x, y))
        return g(x, y), (x, y)

    def g_bwd(res, cts):
        seen.append(["bwd"] + [type(c) is cd.SymbolicZero for c in cts])
        (x, y), (a, b) = res, cts
        gx = 0.0
        if type(a) is not cd.SymbolicZero:
            gx = gx + a * y
        if type(b) is not cd.SymbolicZero:
            gx = gx + b * jnp.cos(x)
        return gx, None

    g.defvjp(g_fwd, g_bwd, symbolic_zeros=True)
    out = [jax.grad(f)(2.0, 3.0), jax.jvp(f, (2.0, 3.0), (1.0, 0.0)),
           jax.grad(lambda x, y: g(x, y)[0])(2.0, 3.0),
           jax.grad(lambda x, y: g(x, y)[1])(2.0, 3.0),
           jax.vmap(jax.grad(lambda x, y: g(x, y)[1]))(jnp.arange(3.0), jnp.ones(3))]
    z = cd.zero_from_primal({"a": 1.0, "b": (jnp.ones(3),)}, symbolic_zeros=True)
    zeros = cd.zero_from_primal((2.0, jnp.ones((2, 2))))
    return _plain([out, seen, [type(z["a"]).__name__, list(z["b"][0].shape), str(z["a"].dtype)],
                   zeros, repr(cd.CustomVJPPrimal(1, True))])


def optimize_remat(m):
    jax, jnp = m.jax, m.jnp

    @jax.custom_vjp
    def h(x):
        return jnp.sin(x) * 2.0

    h.defvjp(lambda x: (jnp.sin(x) * 2.0, jnp.cos(x)), lambda c, g: (2.0 * c * g,),
             optimize_remat=True)
    f = jax.checkpoint(lambda x: jnp.sum(h(h(x)) ** 2))
    xs = jnp.linspace(-1.0, 1.0, 4)
    return _plain([jax.grad(f)(xs), jax.jit(jax.grad(f))(xs), jax.vmap(jax.grad(f))(xs[:, None])])


PROGRAMS = {f.__name__: f for f in (custom_gradient, closure_convert_minimize, linear_call,
                                     symbolic_zeros, optimize_remat)}
