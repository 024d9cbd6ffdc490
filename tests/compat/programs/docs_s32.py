"""Snippets of JAX's documentation that showed numbax behaving differently: weak types through
loops, concrete-predicate conds, type promotion of weak scalars, gradients and Jacobians of
Python scalars, custom rules on namedtuples, `jit(f).trace`, and vjp functions returned from
jitted forward passes (docs/control-flow.md, docs/jep/9407-type-promotion.md,
docs/new_docs/201/debugging.md, docs/new_docs/301/custom-jvp-vjp.md and vjp-objects.md,
docs/aot.md)."""
from tests.compat.programs import program, raised


@program("docs/control-flow.md")
def control_flow_weak_typed_loops():
    import jax.numpy as jnp
    from jax import lax

    init_val = 0
    cond_fun = lambda x: x < 10
    body_fun = lambda x: x + 1
    out = {"while": repr(lax.while_loop(cond_fun, body_fun, init_val)),
           "fori": repr(lax.fori_loop(0, 10, lambda i, x: x + i, init_val))}
    # the body's output type wins over a Python-scalar carry's weak type, and a carry the body
    # promotes (0. + float16) is cast first, as JAX's loops do
    out["fori_float"] = repr(lax.fori_loop(0, 3, lambda i, x: x + i, 0.))
    out["fori_strong"] = repr(lax.fori_loop(0, 3, lambda i, x: x + jnp.float32(i), 0.))
    out["fori_f16"] = repr(lax.fori_loop(0, 3, lambda i, x: x + jnp.float16(1), 0.))
    out["while_f16"] = repr(lax.while_loop(lambda x: x < 3, lambda x: x + jnp.float16(1), 0.))
    out["scan"] = repr(lax.scan(lambda c, x: (c + x, c), 0, jnp.arange(3)))
    out["scan_f16"] = repr(lax.scan(lambda c, x: (c + x, c), 0.,
                                    jnp.arange(3, dtype=jnp.float16)))
    out["fori_unroll"] = repr(lax.fori_loop(0, 3, lambda i, x: x + i, 0, unroll=True))
    return out


@program("docs/control-flow.md")
def control_flow_cond_concrete_predicate():
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    operand = jnp.array([0.])
    out = {"cond_true": lax.cond(True, lambda x: x + 1, lambda x: x - 1, operand),
           "cond_literal": repr(lax.cond(True, lambda: 1, lambda: 2)),
           "cond_passthrough": repr(lax.cond(False, lambda x: x, lambda x: x + 1., 1.)),
           "cond_mixed_weak": repr(lax.cond(True, lambda: 1., lambda: jnp.float32(2))),
           "cond_numpy": repr(lax.cond(True, lambda x: x, lambda x: x, np.ones(2, np.float32))),
           "cond_tuple": repr(lax.cond(True, lambda: (1, 2.), lambda: (3, 4.))),
           "switch": repr(lax.switch(1, [lambda: 1, lambda: 2])),
           "switch_operand": repr(lax.switch(0, [lambda x: x, lambda x: x * 2], 2)),
           "jit_cond": repr(jax.jit(lambda p: lax.cond(p, lambda: 1., lambda: 2.))(True))}
    return out


@program("docs/jep/9407-type-promotion.md")
def type_promotion_weak_scalar_outranks():
    import jax.numpy as jnp
    import numpy as np

    x = jnp.int32(1) + 1.0  # int32 and a weak float: a weak float (f*)
    return {"int_plus_float": repr(x),
            "then_float16": repr(x * jnp.float16(2)),  # weak float32 joins float16
            "bool_plus_int": repr(jnp.bool_(True) + 1),
            "uint8_times_half": repr(jnp.arange(3, dtype=jnp.uint8) * 0.5),
            "int8_plus_complex": repr(jnp.int8(1) + 1j),
            "float32_plus_complex": repr(jnp.float32(1) + 1j),
            "int16_plus_int": repr(jnp.int16(1) + 1),
            "where": repr(jnp.where(np.array([True, False]), jnp.int32(1), 2.5))}


@program("docs/new_docs/201/debugging.md")
def debugging_custom_vjp_print_grad():
    import jax

    printed = []

    @jax.custom_vjp
    def print_grad(x):
        return x

    def print_grad_fwd(x):
        return x, None

    def print_grad_bwd(_, x_grad):
        jax.debug.callback(lambda g: printed.append(float(g)), x_grad)
        return (x_grad,)

    print_grad.defvjp(print_grad_fwd, print_grad_bwd)

    def f(x):
        x = print_grad(x)
        return x * 2.

    g = jax.grad(f)(1.)
    return {"grad": repr(g), "printed": printed,
            "grad_plain": repr(jax.grad(lambda x: x * 2.)(1.)),
            "grad_strong_input": repr(jax.grad(lambda x: x * 2.)(jax.numpy.float32(1.))),
            "value_and_grad": repr(jax.value_and_grad(lambda x: x * 2.)(1.)),
            "grad_unused": repr(jax.grad(lambda x, y: x * 2., argnums=(0, 1))(1., 2.))}


@program("docs/notebooks/autodiff_cookbook.md")
def autodiff_weak_typed_jacobians():
    import jax
    import jax.numpy as jnp

    f = lambda x: x * 2.
    return {"jacrev": repr(jax.jacrev(f)(1.)),
            "jacfwd": repr(jax.jacfwd(f)(1.)),
            "hessian": repr(jax.hessian(lambda x: x ** 3)(1.)),
            "jacrev_strong": repr(jax.jacrev(f)(jnp.float32(1.))),
            "jacfwd_vector": repr(jax.jacfwd(lambda x: jnp.sin(x) * 2.)(jnp.arange(2.))),
            "jacrev_tuple": repr(jax.jacrev(lambda x, y: x * y, argnums=(0, 1))(
                2., jnp.float32(3.)))}


@program("docs/new_docs/301/custom-jvp-vjp.md")
def custom_rules_namedtuple_point():
    from collections import namedtuple

    import jax.numpy as jnp
    from jax import custom_jvp, custom_vjp, grad

    Point = namedtuple("Point", ["x", "y"])

    @custom_jvp
    def f(pt):
        x, y = pt.x, pt.y
        return {'a': x ** 2,
                'b': (jnp.sin(x), jnp.cos(y))}

    @f.defjvp
    def f_jvp(primals, tangents):
        pt, = primals
        pt_dot, = tangents
        ans = f(pt)
        ans_dot = {'a': 2 * pt.x * pt_dot.x,
                   'b': (jnp.cos(pt.x) * pt_dot.x, -jnp.sin(pt.y) * pt_dot.y)}
        return ans, ans_dot

    def fun(pt):
        dct = f(pt)
        return dct['a'] + dct['b'][0]

    pt = Point(1., 2.)
    out = {"jvp_f": f(pt), "jvp_grad": grad(fun)(pt), "jvp_grad_repr": repr(grad(fun)(pt))}

    @custom_vjp
    def g(pt):
        x, y = pt.x, pt.y
        return {'a': x ** 2,
                'b': (jnp.sin(x), jnp.cos(y))}

    def g_fwd(pt):
        return g(pt), pt

    def g_bwd(pt, ct):
        a_bar, (b0_bar, b1_bar) = ct['a'], ct['b']
        x_bar = 2 * pt.x * a_bar + jnp.cos(pt.x) * b0_bar
        y_bar = -jnp.sin(pt.y) * b1_bar
        return (Point(x_bar, y_bar),)

    g.defvjp(g_fwd, g_bwd)

    def gun(pt):
        dct = g(pt)
        return dct['a'] + dct['b'][0]

    out["vjp_grad"] = grad(gun)(pt)
    out["vjp_grad_repr"] = repr(grad(gun)(pt))
    return out


@program("docs/new_docs/301/custom-jvp-vjp.md")
def jit_trace_jaxpr():
    import jax
    import jax.numpy as jnp
    from jax import grad, jit

    def log1pexp(x):
        return jnp.log(1. + jnp.exp(x))

    traced = jit(grad(log1pexp)).trace(100.)
    out = {"primitives": [e.primitive.name for e in traced.jaxpr.eqns],
           "in_avals": str(traced.jaxpr.in_avals)}

    def f(x, y):
        return 2 * x + y, x

    t = jax.jit(f).trace(3, 4)
    out["out_info"] = repr(t.out_info)
    out["compiled"] = t.lower().compile()(3, 4)
    i32_scalar = jax.ShapeDtypeStruct((), jnp.dtype('int32'))
    out["static"] = jax.jit(f, static_argnums=0).trace(10, i32_scalar).lower().compile()(5)
    out["eval_shape"] = repr(jax.eval_shape(lambda x: x * 2, 1.))
    out["struct_eq"] = (jax.ShapeDtypeStruct((2,), jnp.float32, weak_type=True)
                        == jax.ShapeDtypeStruct((2,), jnp.float32))
    return out


@program("docs/new_docs/301/vjp-objects.md", rtol=1e-2, atol=1e-7)
def vjp_objects_through_jit():
    import jax
    import jax.numpy as jnp
    from jax import grad, jit

    def fwd_and_bwd(f):
        def fwd(*args):
            return jax.vjp(f, *args)

        def bwd(f_vjp, y_bar):
            return f_vjp(y_bar)
        return jit(fwd), jit(bwd)

    def layer(W, x):
        return jnp.tanh(x @ W)

    fwd, bwd = fwd_and_bwd(layer)
    W1, W2 = jnp.ones((3, 3)), 2. * jnp.ones((3, 3))
    x0 = jnp.ones((2, 3))
    x1, res1 = fwd(W1, x0)
    x2, res2 = fwd(W2, x1)
    dW2, dx1 = bwd(res2, jnp.ones_like(x2))
    dW1, dx0 = bwd(res1, dx1)

    def two_layers(W1, W2, x):
        return jnp.sum(layer(W2, layer(W1, x)))

    dW1_ref, dW2_ref = grad(two_layers, argnums=(0, 1))(W1, W2, x0)
    out = {"dW1": dW1, "dW2": dW2, "dx0": dx0, "dW1_ref": dW1_ref, "dW2_ref": dW2_ref,
           "has_leaves": len(jax.tree.leaves(res1)) > 0}
    y, f_vjp, aux = jax.vjp(lambda x: (jnp.sin(x) * 2, x), 1., has_aux=True)
    out["vmapped"] = jax.vmap(lambda c: f_vjp(c)[0])(jnp.arange(3.))
    out["aux"] = float(aux)
    out["bad_ct"] = raised(lambda: f_vjp((1., 2.)))
    return out
