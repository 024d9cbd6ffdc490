"""docs/jit-compilation.md and docs/key-concepts.md: jaxprs of small functions, side effects
under tracing, static arguments, jit in a Python loop, selu."""
from tests.compat.programs import builtin_error, program


@program("docs/jit-compilation.md")
def jit_jaxprs_and_side_effects():
    import jax
    import jax.numpy as jnp

    global_list = []

    def log2(x):
        global_list.append(x)
        ln_x = jnp.log(x)
        ln_2 = jnp.log(2.0)
        return ln_x / ln_2

    jaxpr = str(jax.make_jaxpr(log2)(3.0))

    def log2_if_rank_2(x):
        if x.ndim == 2:
            ln_x = jnp.log(x)
            ln_2 = jnp.log(2.0)
            return ln_x / ln_2
        else:
            return x

    rank_jaxpr = str(jax.make_jaxpr(log2_if_rank_2)(jax.numpy.array([1, 2, 3])))

    # The tutorial's jaxpr of selu is left out: JAX wraps jnp.where in a jit of its own, an
    # implementation detail numbax does not copy.
    def selu(x, alpha=1.67, lambda_=1.05):
        return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

    x = jnp.arange(100)
    selu_jit = jax.jit(selu)
    return {"log2_jaxpr": jaxpr, "side_effect": [type(v).__name__ == "float"
                                                  for v in global_list],
            "rank_jaxpr": rank_jaxpr, "selu": selu(x), "selu_jit": selu_jit(x),
            "selu_scalar": selu_jit(1.0)}


@program("docs/jit-compilation.md")
def jit_static_arguments():
    from functools import partial

    import jax

    def f(x):
        if x > 0:
            return x
        else:
            return 2 * x

    out = {}
    try:
        jax.jit(f)(10)
        out["value_branch"] = "no error"
    except jax.errors.ConcretizationTypeError as err:
        out["value_branch"] = builtin_error(err)

    def g(x, n):
        i = 0
        while i < n:
            i += 1
        return x + i

    try:
        jax.jit(g)(10, 20)
        out["value_loop"] = "no error"
    except jax.errors.ConcretizationTypeError as err:
        out["value_loop"] = builtin_error(err)

    @jax.jit
    def loop_body(prev_i):
        return prev_i + 1

    def g_inner_jitted(x, n):
        i = 0
        while i < n:
            i = loop_body(i)
        return x + i

    out["inner_jitted"] = g_inner_jitted(10, 20)
    out["static_argnums"] = jax.jit(f, static_argnums=0)(10)

    def unjitted_loop_body(prev_i):
        return prev_i + 1

    def g_inner_jitted_partial(x, n):
        i = 0
        while i < n:
            i = jax.jit(partial(unjitted_loop_body))(i)
        return x + i

    def g_inner_jitted_lambda(x, n):
        i = 0
        while i < n:
            i = jax.jit(lambda x: unjitted_loop_body(x))(i)
        return x + i

    out["loops"] = [g_inner_jitted_partial(10, 5), g_inner_jitted_lambda(10, 5)]
    return out


@program("docs/jit-compilation.md")
def jit_static_argnames_positional():
    import jax

    def g(x, n):
        i = 0
        while i < n:
            i += 1
        return x + i

    @jax.jit(static_argnames=['n'])
    def g_jit_decorated(x, n):
        i = 0
        while i < n:
            i += 1
        return x + i

    return {"static_argnames": jax.jit(g, static_argnames=['n'])(10, 20),
            "decorator_factory": g_jit_decorated(10, 20)}


@program("docs/key-concepts.md")
def key_concepts_tracing_and_pytrees():
    from typing import NamedTuple

    import jax
    import jax.numpy as jnp
    from jax import lax

    seen = []

    @jax.jit
    def f(x):
        seen.append(str(x))  # the tutorial prints the tracer
        return x + 1

    x = jnp.arange(5)
    result = f(x)
    params = [1, 2, (jnp.arange(3), jnp.ones(2))]
    out = {"result": result, "traced_once": len(seen),
           "list": [str(jax.tree.structure(params)), jax.tree.leaves(params)]}
    params = {'n': 5, 'W': jnp.ones((2, 2)), 'b': jnp.zeros(2)}
    out["dict"] = [str(jax.tree.structure(params)), jax.tree.leaves(params)]

    class Params(NamedTuple):
        a: int
        b: float

    out["namedtuple"] = jax.tree.leaves(Params(1, 5.0))
    out["promote"] = jnp.add(1, 1.0)
    try:
        lax.add(1, 1.0)
        out["lax_add"] = "no error"
    except TypeError as err:
        out["lax_add"] = builtin_error(err)
    out["lax_add_f32"] = lax.add(jnp.float32(1), 1.0)
    x = jnp.array([1, 2, 1])
    y = jnp.ones(10)
    out["convolve"] = jnp.convolve(x, y)
    return out


@program("docs/key-concepts.md")
def key_concepts_lax_convolution():
    import jax.numpy as jnp
    from jax import lax

    x = jnp.array([1, 2, 1])
    y = jnp.ones(10)
    result = lax.conv_general_dilated(
        x.reshape(1, 1, 3).astype(float),
        y.reshape(1, 1, 10),
        window_strides=(1,),
        padding=[(len(y) - 1, len(y) - 1)])
    return {"conv": result[0, 0]}
