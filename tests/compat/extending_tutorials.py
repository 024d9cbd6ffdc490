"""The code of JAX's extension tutorials, written once against a module bundle so the same
lines run on JAX (tests/data/make_extending_reference.py records their outputs) and on numbax
(tests/compat/test_extending.py compares with the record).

Taken from jax-ml/jax docs/jax-primitives.md ("JAX Internals: primitives"),
docs/notebooks/Writing_custom_interpreters_in_Jax.md and the lax-only parts of
docs/notebooks/Custom_derivative_rules_for_Python_code.md. Changes: `jax._src.util.safe_map`
is a local function, `jax._src.api` calls are `jax.` calls, the 5000x5000 example is 50x50,
prints become recorded values, and primitive names carry a suffix so each run defines fresh
primitives."""
from __future__ import annotations

import itertools
from functools import partial, wraps
from types import SimpleNamespace

import numpy as np

_fresh = itertools.count()


def _value(x):
    """A JSON-friendly value: nested lists of floats/ints/bools."""
    if isinstance(x, (tuple, list)):
        return [_value(v) for v in x]
    return np.asarray(x).tolist()


def safe_map(f, *args):
    args = [list(a) for a in args]
    n = len(args[0])
    for arg in args[1:]:
        assert len(arg) == n, "length mismatch"
    return list(map(f, *args))


def _raises(fn, exc_type) -> str:
    """The name of the exception fn raises ('' if none): how the tutorial's
    expectNotImplementedError blocks are recorded."""
    try:
        fn()
    except exc_type:
        return exc_type.__name__
    return ""


def primitives_tutorial(m: SimpleNamespace) -> dict:
    """docs/jax-primitives.md: multiply_add as lax ops, then as a new primitive with impl,
    abstract eval, jvp, transpose and batching rules."""
    jax, lax, np_ = m.jax, m.lax, np
    out: dict = {}

    def multiply_add_lax(x, y, z):
        return lax.add(lax.mul(x, y), z)

    def square_add_lax(a, b):
        return multiply_add_lax(a, a, b)

    out["square_add_lax"] = _value(square_add_lax(2., 10.))
    out["grad_square_add_lax"] = _value(jax.grad(square_add_lax, argnums=0)(2.0, 10.))

    def multiply_add_numpy(x, y, z):
        return m.jnp.add(m.jnp.multiply(x, y), z)

    def square_add_numpy(a, b):
        return multiply_add_numpy(a, a, b)

    out["square_add_numpy"] = _value(square_add_numpy(2., 10.))
    out["grad_square_add_numpy"] = _value(jax.grad(square_add_numpy)(2.0, 10.))

    multiply_add_p = m.ecore.Primitive(f"multiply_add_{next(_fresh)}")

    def multiply_add_prim(x, y, z):
        return multiply_add_p.bind(x, y, z)

    def square_add_prim(a, b):
        return multiply_add_prim(a, a, b)

    out["eval_without_impl"] = _raises(lambda: square_add_prim(2., 10.), NotImplementedError)

    def multiply_add_impl(x, y, z):
        return np_.add(np_.multiply(x, y), z)

    multiply_add_p.def_impl(multiply_add_impl)
    assert square_add_prim(2., 10.) == 14.
    out["square_add_prim"] = _value(square_add_prim(2., 10.))
    out["jit_without_abstract_eval"] = _raises(lambda: jax.jit(square_add_prim)(2., 10.),
                                               NotImplementedError)

    def multiply_add_abstract_eval(xs, ys, zs):
        assert xs.shape == ys.shape
        assert xs.shape == zs.shape
        return m.core.ShapedArray(xs.shape, xs.dtype)

    multiply_add_p.def_abstract_eval(multiply_add_abstract_eval)
    out["make_jaxpr_prim"] = [e.primitive.name.rsplit("_", 1)[0] for e in
                              jax.make_jaxpr(square_add_prim)(2., 10.).eqns]
    if m.has_lowering_fallback:  # JAX needs an XLA lowering first; numbax runs the impl
        assert jax.jit(lambda x, y: square_add_prim(x, y))(2., 10.) == 14.
        assert jax.jit(lambda x, y: square_add_prim(x, y), static_argnums=1)(2., 10.) == 14.
    out["jvp_without_rule"] = _raises(lambda: jax.jvp(square_add_prim, (2., 10.), (1., 1.)),
                                      NotImplementedError)

    def multiply_add_value_and_jvp(arg_values, arg_tangents):
        x, y, z = arg_values
        xt, yt, zt = arg_tangents
        primal_out = multiply_add_prim(x, y, z)

        def make_zero(tan):
            return lax.full_like(x, 0) if type(tan) is m.ad.Zero else tan

        output_tangent = multiply_add_prim(make_zero(xt), y, multiply_add_prim(
            x, make_zero(yt), make_zero(zt)))
        return (primal_out, output_tangent)

    m.ad.primitive_jvps[multiply_add_p] = multiply_add_value_and_jvp
    assert jax.jvp(square_add_prim, (2., 10.), (1., 1.)) == (14., 5.)
    out["jvp"] = _value(jax.jvp(square_add_prim, (2., 10.), (1., 1.)))
    if m.has_lowering_fallback:
        assert jax.jit(lambda arg_values, arg_tangents: jax.jvp(
            square_add_prim, arg_values, arg_tangents))((2., 10.), (1., 1.)) == (14., 5.)
    out["grad_without_transpose"] = _raises(lambda: jax.grad(square_add_prim)(2., 10.),
                                            NotImplementedError)

    def multiply_add_transpose(ct, x, y, z):
        if not m.ad.is_undefined_primal(x):
            assert m.ad.is_undefined_primal(y)
            ct_y = m.ad.Zero(y.aval) if type(ct) is m.ad.Zero else multiply_add_prim(
                x, ct, lax.full_like(x, 0))
            res = None, ct_y, ct
        else:
            assert m.ad.is_undefined_primal(x)
            ct_x = m.ad.Zero(x.aval) if type(ct) is m.ad.Zero else multiply_add_prim(
                ct, y, lax.full_like(y, 0))
            res = ct_x, None, ct
        return res

    m.ad.primitive_transposes[multiply_add_p] = multiply_add_transpose
    assert jax.grad(square_add_prim)(2., 10.) == 4.
    out["grad"] = _value(jax.grad(square_add_prim)(2., 10.))
    if m.has_lowering_fallback:
        assert jax.jit(jax.grad(square_add_prim))(2., 10.) == 4.
    vectors = (np_.array([2., 3.]), np_.array([10., 20.]))
    out["vmap_without_batcher"] = _raises(
        lambda: jax.vmap(square_add_prim, in_axes=0, out_axes=0)(*vectors), NotImplementedError)

    def multiply_add_batch(vector_arg_values, batch_axes):
        assert batch_axes[0] == batch_axes[1]
        assert batch_axes[0] == batch_axes[2]
        res = multiply_add_prim(*vector_arg_values)
        return res, batch_axes[0]

    m.batching.primitive_batchers[multiply_add_p] = multiply_add_batch
    assert np_.allclose(jax.vmap(square_add_prim, in_axes=0, out_axes=0)(*vectors), [14., 29.])
    out["vmap"] = _value(jax.vmap(square_add_prim, in_axes=0, out_axes=0)(*vectors))
    if m.has_lowering_fallback:
        assert np_.allclose(jax.jit(jax.vmap(square_add_prim, in_axes=0, out_axes=0))(
            *vectors), [14., 29.])
    return out


def interpreters_tutorial(m: SimpleNamespace) -> dict:
    """docs/notebooks/Writing_custom_interpreters_in_Jax.md: examining jaxprs, eval_jaxpr
    and the `inverse` interpreter, composed with jit, vmap and grad."""
    jax, jnp, lax, core = m.jax, m.jnp, m.lax, m.ecore
    out: dict = {}
    x = jax.random.normal(jax.random.key(0), (50, 50))

    def f(w, b, x):
        return jnp.tanh(jnp.dot(x, w) + b)

    fast_f = jax.jit(f)
    out["fast_f_shape"] = list(fast_f(x, x[0], x).shape)

    def examine_jaxpr(closed_jaxpr):
        jaxpr = closed_jaxpr.jaxpr
        return {"invars": [str(v.aval.shape) for v in jaxpr.invars],
                "outvars": [str(v.aval.shape) for v in jaxpr.outvars],
                "constvars": len(jaxpr.constvars),
                "eqns": [[len(e.invars), str(e.primitive), len(e.outvars),
                          sorted(k for k in e.params if "sharding" not in k)]
                         for e in jaxpr.eqns]}

    def foo(x):
        return x + 1

    out["foo"] = examine_jaxpr(jax.make_jaxpr(foo)(5))

    def bar(w, b, x):
        return jnp.dot(w, x) + b + jnp.ones(5), x

    out["bar"] = examine_jaxpr(jax.make_jaxpr(bar)(jnp.ones((5, 10)), jnp.ones(5),
                                                   jnp.ones(10)))

    def f(x):  # noqa: F811 - the tutorial redefines f
        return jnp.exp(jnp.tanh(x))

    closed_jaxpr = jax.make_jaxpr(f)(jnp.ones(5))
    out["f_jaxpr"] = str(closed_jaxpr.jaxpr)
    out["f_literals"] = list(closed_jaxpr.literals)

    def eval_jaxpr(jaxpr, consts, *args):
        env = {}

        def read(var):
            if type(var) is core.Literal:
                return var.val
            return env[var]

        def write(var, val):
            env[var] = val

        safe_map(write, jaxpr.invars, args)
        safe_map(write, jaxpr.constvars, consts)
        for eqn in jaxpr.eqns:
            invals = safe_map(read, eqn.invars)
            outvals = eqn.primitive.bind(*invals, **eqn.params)
            if not eqn.primitive.multiple_results:
                outvals = [outvals]
            safe_map(write, eqn.outvars, outvals)
        return safe_map(read, jaxpr.outvars)

    closed_jaxpr = jax.make_jaxpr(f)(jnp.ones(5))
    out["eval_jaxpr"] = _value(eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.literals,
                                          jnp.ones(5)))
    inverse_registry = {lax.exp_p: jnp.log, lax.tanh_p: jnp.arctanh}

    def inverse(fun):
        @wraps(fun)
        def wrapped(*args, **kwargs):
            closed_jaxpr = jax.make_jaxpr(fun)(*args, **kwargs)
            out = inverse_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.literals, *args)
            return out[0]
        return wrapped

    def inverse_jaxpr(jaxpr, consts, *args):
        env = {}

        def read(var):
            if type(var) is core.Literal:
                return var.val
            return env[var]

        def write(var, val):
            env[var] = val

        safe_map(write, jaxpr.outvars, args)
        safe_map(write, jaxpr.constvars, consts)
        for eqn in jaxpr.eqns[::-1]:
            invals = safe_map(read, eqn.outvars)
            if eqn.primitive not in inverse_registry:
                raise NotImplementedError(
                    f"{eqn.primitive} does not have registered inverse.")
            outval = inverse_registry[eqn.primitive](*invals)
            safe_map(write, eqn.invars, [outval])
        return safe_map(read, jaxpr.invars)

    f_inv = inverse(f)
    assert jnp.allclose(f_inv(f(1.0)), 1.0)
    out["f_inv"] = _value(f_inv(f(1.0)))
    out["inverse_jaxpr"] = str(jax.make_jaxpr(inverse(f))(f(1.)))
    out["jit_vmap_grad_inverse"] = _value(
        jax.jit(jax.vmap(jax.grad(inverse(f))))((jnp.arange(5) + 1.) / 5.))
    return out


def custom_derivatives_tutorial(m: SimpleNamespace) -> dict:
    """The parts of docs/notebooks/Custom_derivative_rules_for_Python_code.md that need
    only jnp and lax: custom_jvp/custom_vjp basics, defjvps, a stable log1pexp, the
    sqrt-at-zero fix, clip_gradient and the implicit fixed-point derivative."""
    jax, jnp = m.jax, m.jnp
    custom_jvp, custom_vjp = jax.custom_jvp, jax.custom_vjp
    jit, grad, vmap, jvp, vjp = jax.jit, jax.grad, jax.vmap, jax.jvp, jax.vjp
    out: dict = {}

    @custom_jvp
    def f(x, y):
        return jnp.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        x_dot, y_dot = tangents
        primal_out = f(x, y)
        tangent_out = jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot
        return primal_out, tangent_out

    out["jvp_f"] = _value([f(2., 3.), *jvp(f, (2., 3.), (1., 0.)), grad(f)(2., 3.)])

    @custom_jvp
    def f(x, y):  # noqa: F811
        return jnp.sin(x) * y

    f.defjvps(lambda x_dot, primal_out, x, y: jnp.cos(x) * x_dot * y,
              lambda y_dot, primal_out, x, y: jnp.sin(x) * y_dot)
    out["defjvps_f"] = _value([f(2., 3.), *jvp(f, (2., 3.), (1., 0.)), grad(f)(2., 3.)])

    @custom_vjp
    def f(x, y):  # noqa: F811
        return jnp.sin(x) * y

    def f_fwd(x, y):
        return f(x, y), (jnp.cos(x), jnp.sin(x), y)

    def f_bwd(res, g):
        cos_x, sin_x, y = res
        return (cos_x * g * y, sin_x * g)

    f.defvjp(f_fwd, f_bwd)
    out["custom_vjp_f"] = _value(grad(f)(2., 3.))

    def log1pexp(x):
        return jnp.log(1. + jnp.exp(x))

    out["naive_log1pexp"] = _value([log1pexp(3.), jit(log1pexp)(3.), jit(grad(log1pexp))(3.),
                                    vmap(jit(grad(log1pexp)))(jnp.arange(3.))])
    out["naive_grad_100"] = _value(grad(log1pexp)(100.))

    @custom_jvp
    def log1pexp(x):  # noqa: F811
        return jnp.log(1. + jnp.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        x, = primals
        x_dot, = tangents
        ans = log1pexp(x)
        ans_dot = (1 - 1 / (1 + jnp.exp(x))) * x_dot
        return ans, ans_dot

    out["stable_log1pexp"] = _value([grad(log1pexp)(100.), jit(log1pexp)(3.),
                                     jit(grad(log1pexp))(3.),
                                     vmap(jit(grad(log1pexp)))(jnp.arange(3.))])

    @custom_jvp
    def log1pexp(x):  # noqa: F811
        return jnp.log(1. + jnp.exp(x))

    log1pexp.defjvps(lambda t, ans, x: (1 - 1 / (1 + jnp.exp(x))) * t)
    out["stable_log1pexp_defjvps"] = _value([grad(log1pexp)(100.), jit(log1pexp)(3.),
                                             jit(grad(log1pexp))(3.),
                                             vmap(jit(grad(log1pexp)))(jnp.arange(3.))])

    def f(x):  # noqa: F811
        return x / (1 + jnp.sqrt(x))

    out["naive_sqrt_grad_0"] = _value(grad(f)(0.))

    @custom_jvp
    def f(x):  # noqa: F811
        return x / (1 + jnp.sqrt(x))

    @f.defjvp
    def f_jvp(primals, tangents):  # noqa: F811
        x, = primals
        x_dot, = tangents
        ans = f(x)
        ans_dot = ((jnp.sqrt(x) + 2) / (2 * (jnp.sqrt(x) + 1)**2)) * x_dot
        return ans, ans_dot

    out["fixed_sqrt_grad_0"] = _value(grad(f)(0.))

    @custom_vjp
    def clip_gradient(lo, hi, x):
        return x

    def clip_gradient_fwd(lo, hi, x):
        return x, (lo, hi)

    def clip_gradient_bwd(res, g):
        lo, hi = res
        return (None, None, jnp.clip(g, lo, hi))

    clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)
    t = jnp.linspace(0, 10, 12)

    def clip_sin(x):
        x = clip_gradient(-0.75, 0.75, x)
        return jnp.sin(x)

    out["clip_sin"] = _value([clip_sin(t), vmap(grad(clip_sin))(t)])
    while_loop = m.lax.while_loop

    @partial(custom_vjp, nondiff_argnums=(0,))
    def fixed_point(f, a, x_guess):
        def cond_fun(carry):
            x_prev, x = carry
            return jnp.abs(x_prev - x) > 1e-6

        def body_fun(carry):
            _, x = carry
            return x, f(a, x)

        _, x_star = while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
        return x_star

    def fixed_point_fwd(f, a, x_init):
        x_star = fixed_point(f, a, x_init)
        return x_star, (a, x_star)

    def fixed_point_rev(f, res, x_star_bar):
        a, x_star = res
        _, vjp_a = vjp(lambda a: f(a, x_star), a)
        a_bar, = vjp_a(fixed_point(partial(rev_iter, f), (a, x_star, x_star_bar),
                                   x_star_bar))
        return a_bar, jnp.zeros_like(x_star)

    def rev_iter(f, packed, u):
        a, x_star, x_star_bar = packed
        _, vjp_x = vjp(lambda x: f(a, x), x_star)
        return x_star_bar + vjp_x(u)[0]

    fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)

    def newton_sqrt(a):
        update = lambda a, x: 0.5 * (x + a / x)  # noqa: E731
        return fixed_point(update, a, a)

    out["newton_sqrt"] = _value([newton_sqrt(2.), grad(newton_sqrt)(2.),
                                 grad(grad(newton_sqrt))(2.),
                                 jit(vmap(newton_sqrt))(jnp.array([1., 2., 3., 4.]))])
    return out


TUTORIALS = {"primitives": primitives_tutorial, "interpreters": interpreters_tutorial,
             "custom_derivatives": custom_derivatives_tutorial}
