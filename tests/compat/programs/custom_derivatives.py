"""docs/notebooks/Custom_derivative_rules_for_Python_code.md: custom_jvp (defjvp, defjvps,
numerical stability of log1pexp, x / (1 + sqrt x) at 0, Python control flow), custom_vjp
(gradient clipping, implicit differentiation of a fixed point, pytrees, nondiff_argnums)."""
from tests.compat.programs import builtin_error, program


@program("docs/notebooks/Custom_derivative_rules_for_Python_code.md")
def custom_jvp_basics():
    import jax.numpy as jnp
    from jax import custom_jvp, grad, jit, jvp, vmap

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

    out = {"defjvp": [f(2., 3.), jvp(f, (2., 3.), (1., 0.)), grad(f)(2., 3.)]}

    @custom_jvp
    def f2(x, y):
        return jnp.sin(x) * y

    f2.defjvps(lambda x_dot, primal_out, x, y: jnp.cos(x) * x_dot * y,
               lambda y_dot, primal_out, x, y: jnp.sin(x) * y_dot)
    out["defjvps"] = [f2(2., 3.), jvp(f2, (2., 3.), (1., 0.)), grad(f2)(2., 3.)]

    def log1pexp_naive(x):
        return jnp.log(1. + jnp.exp(x))

    out["naive"] = [jit(log1pexp_naive)(3.), jit(grad(log1pexp_naive))(3.),
                    vmap(jit(grad(log1pexp_naive)))(jnp.arange(3.)),
                    grad(log1pexp_naive)(100.)]

    @custom_jvp
    def log1pexp(x):
        return jnp.log(1. + jnp.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        x, = primals
        x_dot, = tangents
        ans = log1pexp(x)
        ans_dot = (1 - 1/(1 + jnp.exp(x))) * x_dot
        return ans, ans_dot

    out["stable"] = [grad(log1pexp)(100.), jit(log1pexp)(3.), jit(grad(log1pexp))(3.),
                     vmap(jit(grad(log1pexp)))(jnp.arange(3.))]

    def g(x):
        return x / (1 + jnp.sqrt(x))

    @custom_jvp
    def g2(x):
        return x / (1 + jnp.sqrt(x))

    g2.defjvps(lambda t, ans, x: ((jnp.sqrt(x) + 2) / (2 * (jnp.sqrt(x) + 1)**2)) * t)
    out["sqrt_at_zero"] = [grad(g)(0.), grad(g2)(0.)]

    @custom_jvp
    def h(x, y):
        return x ** 2 * y

    h.defjvps(lambda x_dot, primal_out, x, y: 2 * x * y * x_dot, None)
    out["defjvps_none"] = [grad(h)(2., 3.), grad(h, 0)(2., 3.), grad(h, 1)(2., 3.)]
    return out


@program("docs/notebooks/Custom_derivative_rules_for_Python_code.md")
def custom_jvp_tracing_and_control_flow():
    import jax.numpy as jnp
    from jax import custom_jvp, grad, jit, jvp, vmap

    calls = []

    @custom_jvp
    def f(x):
        calls.append('f')
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        calls.append('f_jvp')
        x, = primals
        t, = tangents
        return f(x), jnp.cos(x) * t

    out = {"values": [f(3.), vmap(f)(jnp.arange(3.)), jit(f)(3.), jvp(f, (3.,), (1.,))[1],
                      grad(f)(3.), grad(grad(f))(3.)]}
    out["calls"] = calls

    @custom_jvp
    def g(x):
        if x > 0:
            return jnp.sin(x)
        else:
            return jnp.cos(x)

    @g.defjvp
    def g_jvp(primals, tangents):
        x, = primals
        x_dot, = tangents
        ans = g(x)
        if x > 0:
            return ans, 2 * x_dot
        else:
            return ans, 3 * x_dot

    out["python_branches"] = [grad(g)(1.), grad(g)(-1.)]
    return out


@program("docs/notebooks/Custom_derivative_rules_for_Python_code.md")
def custom_vjp_clip_and_fixed_point():
    from functools import partial

    import jax.numpy as jnp
    from jax import custom_vjp, grad, jit, vjp, vmap
    from jax.lax import while_loop

    @custom_vjp
    def clip_gradient(lo, hi, x):
        return x

    def clip_gradient_fwd(lo, hi, x):
        return x, (lo, hi)

    def clip_gradient_bwd(res, g):
        lo, hi = res
        return (None, None, jnp.clip(g, lo, hi))

    clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)

    def clip_sin(x):
        x = clip_gradient(-0.75, 0.75, x)
        return jnp.sin(x)

    t = jnp.linspace(0, 10, 50)
    out = {"clip": [clip_sin(t), vmap(grad(clip_sin))(t)]}

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
        a_bar, = vjp_a(fixed_point(partial(rev_iter, f),
                                   (a, x_star, x_star_bar),
                                   x_star_bar))
        return a_bar, jnp.zeros_like(x_star)

    def rev_iter(f, packed, u):
        a, x_star, x_star_bar = packed
        _, vjp_x = vjp(lambda x: f(a, x), x_star)
        return x_star_bar + vjp_x(u)[0]

    fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)

    def newton_sqrt(a):
        update = lambda a, x: 0.5 * (x + a / x)
        return fixed_point(update, a, a)

    out["newton"] = [newton_sqrt(2.), jit(vmap(newton_sqrt))(jnp.array([1., 2., 3., 4.])),
                     grad(newton_sqrt)(2.), grad(grad(newton_sqrt))(2.),
                     grad(jnp.sqrt)(2.), grad(grad(jnp.sqrt))(2.)]
    return out


@program("docs/notebooks/Custom_derivative_rules_for_Python_code.md")
def custom_vjp_pytrees_and_nondiff():
    from collections import namedtuple
    from functools import partial

    import jax.numpy as jnp
    from jax import custom_jvp, custom_vjp, grad, jvp, vjp

    calls = []

    @custom_vjp
    def f(x):
        calls.append("f")
        return jnp.sin(x)

    def f_fwd(x):
        calls.append("f_fwd")
        return f(x), jnp.cos(x)

    def f_bwd(cos_x, y_bar):
        calls.append("f_bwd")
        return (cos_x * y_bar,)

    f.defvjp(f_fwd, f_bwd)
    out = {"plain": [f(3.), grad(f)(3.)]}
    y, f_vjp = vjp(f, 3.)
    out["vjp"] = [y, f_vjp(1.)]
    try:
        jvp(f, (3.,), (1.,))
        out["jvp_of_custom_vjp"] = "no error"
    except TypeError as err:
        out["jvp_of_custom_vjp"] = builtin_error(err)
    out["calls"] = calls

    Point = namedtuple("Point", ["x", "y"])

    @custom_jvp
    def fj(pt):
        x, y = pt.x, pt.y
        return {'a': x ** 2, 'b': (jnp.sin(x), jnp.cos(y))}

    @fj.defjvp
    def fj_jvp(primals, tangents):
        pt, = primals
        pt_dot, = tangents
        ans = fj(pt)
        ans_dot = {'a': 2 * pt.x * pt_dot.x,
                   'b': (jnp.cos(pt.x) * pt_dot.x, -jnp.sin(pt.y) * pt_dot.y)}
        return ans, ans_dot

    @custom_vjp
    def fv(pt):
        x, y = pt.x, pt.y
        return {'a': x ** 2, 'b': (jnp.sin(x), jnp.cos(y))}

    def fv_fwd(pt):
        return fv(pt), pt

    def fv_bwd(pt, g):
        a_bar, (b0_bar, b1_bar) = g['a'], g['b']
        x_bar = 2 * pt.x * a_bar + jnp.cos(pt.x) * b0_bar
        y_bar = -jnp.sin(pt.y) * b1_bar
        return (Point(x_bar, y_bar),)

    fv.defvjp(fv_fwd, fv_bwd)
    pt = Point(1., 2.)
    out["pytree_jvp"] = [fj(pt), grad(lambda p: fj(p)['a'] + fj(p)['b'][0])(pt)]
    out["pytree_vjp"] = [fv(pt), grad(lambda p: fv(p)['a'] + fv(p)['b'][0])(pt)]

    @partial(custom_jvp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    @app.defjvp
    def app_jvp(f, primals, tangents):
        x, = primals
        x_dot, = tangents
        return f(x), 2. * x_dot

    @partial(custom_jvp, nondiff_argnums=(0, 2))
    def app2(f, x, g):
        return f(g((x)))

    @app2.defjvp
    def app2_jvp(f, g, primals, tangents):
        x, = primals
        x_dot, = tangents
        return f(g(x)), 3. * x_dot

    @partial(custom_vjp, nondiff_argnums=(0,))
    def app3(f, x):
        return f(x)

    app3.defvjp(lambda f, x: (f(x), x), lambda f, x, g: (5 * g,))
    out["nondiff"] = [app(lambda x: x ** 3, 3.), grad(app, 1)(lambda x: x ** 3, 3.),
                      app2(lambda x: x ** 3, 3., lambda y: 5 * y),
                      grad(app2, 1)(lambda x: x ** 3, 3., lambda y: 5 * y),
                      app3(lambda x: x ** 2, 4.), grad(app3, 1)(lambda x: x ** 2, 4.)]
    return out
