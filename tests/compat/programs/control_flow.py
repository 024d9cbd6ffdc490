"""docs/control-flow.md: Python loops under jit, value-dependent branches (errors, static
arguments, grad), lax.cond / while_loop / fori_loop / scan / switch, logical operators."""
from tests.compat.programs import builtin_error, program


@program("docs/control-flow.md")
def control_flow_python_under_jit():
    import jax
    import jax.numpy as jnp
    from jax import grad, jit

    @jit
    def f(x):
        for i in range(3):
            x = 2 * x
        return x

    @jit
    def g(x):
        y = 0.
        for i in range(x.shape[0]):
            y = y + x[i]
        return y

    out = {"loop": f(3), "unrolled_sum": g(jnp.array([1., 2., 3.]))}

    @jit
    def f_branch(x):
        if x < 3:
            return 3. * x ** 2
        else:
            return -4 * x

    try:
        f_branch(2)
        out["branch_error"] = "no error"
    except jax.errors.TracerBoolConversionError as err:
        out["branch_error"] = ["TracerBoolConversionError",
                               isinstance(err, jax.errors.ConcretizationTypeError),
                               builtin_error(err)]

    @jit
    def g_and(x):
        return (x > 0) and (x < 3)

    try:
        g_and(2)
        out["and_error"] = "no error"
    except jax.errors.ConcretizationTypeError as err:
        out["and_error"] = builtin_error(err)

    def f_py(x):
        if x < 3:
            return 3. * x ** 2
        else:
            return -4 * x

    out["grad_branches"] = [grad(f_py)(2.), grad(f_py)(4.)]

    def example_fun(length, val):
        return jnp.ones((length,)) * val

    out["unjitted"] = example_fun(5, 4)
    try:
        jit(example_fun)(10, 4)
        out["shape_from_tracer"] = "no error"
    except TypeError as err:
        out["shape_from_tracer"] = [builtin_error(err),
                                    isinstance(err, jax.errors.ConcretizationTypeError)]
    return out


@program("docs/control-flow.md")
def control_flow_static_argnames():
    import jax.numpy as jnp
    from jax import jit

    def f(x):
        if x < 3:
            return 3. * x ** 2
        else:
            return -4 * x

    def f_n(x, n):
        y = 0.
        for i in range(n):
            y = y + x[i]
        return y

    def example_fun(length, val):
        return jnp.ones((length,)) * val

    good_example_jit = jit(example_fun, static_argnames='length')
    return {"static_x": jit(f, static_argnames='x')(2.),
            "static_n": jit(f_n, static_argnames='n')(jnp.array([2., 3., 4.]), 2),
            "static_length": [good_example_jit(10, 4), good_example_jit(5, 4)]}


@program("docs/control-flow.md")
def control_flow_lax_primitives():
    import jax.numpy as jnp
    from jax import grad, jit, lax

    operand = jnp.array([0.])
    out = {"cond": [lax.cond(True, lambda x: x+1, lambda x: x-1, operand),
                    lax.cond(False, lambda x: x+1, lambda x: x-1, operand)]}
    out["while"] = lax.while_loop(lambda x: x < 10, lambda x: x+1, 0)
    out["fori"] = lax.fori_loop(0, 10, lambda i, x: x+i, 0)

    def cumsum_step(carry, x):
        new_carry = carry + x
        return new_carry, new_carry

    out["scan"] = lax.scan(cumsum_step, 0.0, jnp.arange(1., 5.))
    branches = [lambda x: x - 1, lambda x: x * 2, lambda x: x ** 2]
    out["switch"] = [lax.switch(i, branches, 3.0) for i in (-1, 0, 1, 2, 7)]
    out["grad_fori"] = grad(lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, 1.0))(2.0)
    out["grad_cond"] = grad(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))(0.5)

    def python_check_positive_even(x):
        is_even = x % 2 == 0
        return is_even and (x > 0)

    @jit
    def jax_check_positive_even(x):
        is_even = x % 2 == 0
        return jnp.logical_and(is_even, x > 0)

    out["positive_even"] = [python_check_positive_even(24), jax_check_positive_even(24),
                            jax_check_positive_even(jnp.array([-1, 2, 5]))]
    try:
        python_check_positive_even(jnp.array([-1, 2, 5]))
        out["array_truth"] = "no error"
    except ValueError as err:
        out["array_truth"] = builtin_error(err)
    return out
