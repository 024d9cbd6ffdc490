"""docs/notebooks/Common_Gotchas_in_JAX.md ("sharp bits"): impure functions under jit,
iterators in loops, immutable arrays and .at updates, methods under jit, out-of-bounds
indexing, non-array inputs, boolean masks, float64 requests with x64 off."""
from tests.compat.programs import builtin_error, program


@program("docs/notebooks/Common_Gotchas_in_JAX.md")
def gotchas_pure_functions():
    import jax
    import jax.numpy as jnp
    from jax import jit, lax, make_jaxpr

    saved = []

    def impure_saves_global(x):
        saved.append(x)
        return x

    saved_out = jit(impure_saves_global)(4.)

    def pure_uses_internal_state(x):
        state = dict(even=0, odd=0)
        for i in range(10):
            state['even' if i % 2 == 0 else 'odd'] += x
        return state['even'] + state['odd']

    array = jnp.arange(10)
    iterator = iter(range(10))

    def func11(arr, extra):
        ones = jnp.ones(arr.shape)

        def body(carry, aelems):
            ae1, ae2 = aelems
            return (carry + ae1 * ae2 + extra, carry)
        return lax.scan(body, 0., (arr, ones))

    return {            "saved": [saved_out, isinstance(saved[0], jax.core.Tracer)],
            "internal_state": jit(pure_uses_internal_state)(5.),
            "fori_array": lax.fori_loop(0, 10, lambda i, x: x+array[i], 0),
            "fori_iterator": lax.fori_loop(0, 10, lambda i, x: x+next(iterator), 0),
            "scan": func11(jnp.arange(16), 5.),
            "scan_jaxpr_eqns": len(make_jaxpr(func11)(jnp.arange(16), 5.).jaxpr.eqns)}


@program("docs/notebooks/Common_Gotchas_in_JAX.md")
def gotchas_globals_cached():
    import jax.numpy as jnp
    from jax import jit

    printed = []

    def impure_print_side_effect(x):
        printed.append("Executing function")
        return x

    calls = [jit(impure_print_side_effect)(4.), jit(impure_print_side_effect)(5.),
             jit(impure_print_side_effect)(jnp.array([5.]))]
    g = [0.]

    def impure_uses_globals(x):
        return x + g[0]

    first = jit(impure_uses_globals)(4.)
    g[0] = 10.  # a new jit wrapper of the same function reuses the first trace: 5, not 15
    return {"side_effect_calls": calls, "traces": len(printed),
            "globals": [first, jit(impure_uses_globals)(5.),
                        jit(impure_uses_globals)(jnp.array([4.]))]}


@program("docs/notebooks/Common_Gotchas_in_JAX.md")
def gotchas_in_place_updates():
    import jax.numpy as jnp
    import numpy as np

    jax_array = jnp.zeros((3, 3), dtype=jnp.float32)
    try:
        jax_array[1, :] = 1.0
        setitem = "no error"
    except TypeError as err:
        setitem = builtin_error(err)
    jax_array = jnp.array([10, 20])
    jax_array_new = jax_array
    jax_array_new += 10
    numpy_array = np.array([10, 20])
    numpy_array_new = numpy_array
    numpy_array_new += 10
    jax_array = jnp.zeros((3, 3), dtype=jnp.float32)
    updated_array = jax_array.at[1, :].set(1.0)
    ones = jnp.ones((5, 6))
    return {"setitem": setitem, "rebound": [jax_array_new, jnp.array([10, 20])],
            "numpy_aliased": numpy_array, "at_set": [updated_array, jax_array],
            "at_add": ones.at[::2, 3:].add(7.),
            "at_ops": [jnp.arange(5.).at[1].mul(3.), jnp.arange(5.).at[2].min(-1.),
                       jnp.arange(5).at[jnp.array([0, 0, 3])].add(1)]}


@program("docs/notebooks/Common_Gotchas_in_JAX.md")
def gotchas_methods_under_jit():
    import jax.numpy as jnp
    from jax import jit, tree_util

    class CustomClass:
        def __init__(self, x, mul):
            self.x = x
            self.mul = mul

        @jit
        def calc(self, y):
            if self.mul:
                return self.x * y
            return y

    try:
        CustomClass(2, True).calc(3)
        unhashable = "no error"
    except TypeError as err:
        unhashable = builtin_error(err)

    class CustomClass2:
        def __init__(self, x, mul):
            self.x = x
            self.mul = mul

        def calc(self, y):
            return _calc(self.mul, self.x, y)

    @jit(static_argnums=0)
    def _calc(mul, x, y):
        if mul:
            return x * y
        return y

    class CustomClass3:
        def __init__(self, x, mul):
            self.x = x
            self.mul = mul

        @jit(static_argnums=0)
        def calc(self, y):
            if self.mul:
                return self.x * y
            return y

    c = CustomClass3(2, True)
    stale = [c.calc(3)]
    c.mul = False
    stale.append(c.calc(3))  # the tutorial's broken example: still 6

    class CustomClass4:
        def __init__(self, x, mul):
            self.x = x
            self.mul = mul

        @jit
        def calc(self, y):
            if self.mul:
                return self.x * y
            return y

        def _tree_flatten(self):
            return (self.x,), {'mul': self.mul}

        @classmethod
        def _tree_unflatten(cls, aux_data, children):
            return cls(*children, **aux_data)

    tree_util.register_pytree_node(CustomClass4, CustomClass4._tree_flatten,
                                   CustomClass4._tree_unflatten)
    c = CustomClass4(2, True)
    pytree = [c.calc(3)]
    c.mul = False
    pytree.append(c.calc(3))
    pytree.append(CustomClass4(jnp.array(2), True).calc(3))
    return {"unhashable": unhashable, "static_helper": CustomClass2(2, True).calc(3),
            "stale": stale, "pytree": pytree}


@program("docs/notebooks/Common_Gotchas_in_JAX.md")
def gotchas_out_of_bounds_and_inputs():
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import make_jaxpr

    out = {"clamped_index": jnp.arange(10)[11],
           "at_get": jnp.arange(10.0).at[11].get(),
           "fill": jnp.arange(10.0).at[11].get(mode='fill', fill_value=jnp.nan),
           "scatter_dropped": jnp.arange(4.0).at[7].set(100.),
           "np_sum": np.sum([1, 2, 3])}
    # Left out: jnp.sum([1, 2, 3]) raises TypeError in JAX; numbax deliberately accepts
    # lists as numpy does (docs/sharp_bits.md, Arrays).

    def permissive_sum(x):
        return jnp.sum(jnp.array(x))

    x = list(range(10))
    out["permissive"] = permissive_sum(x)
    out["permissive_jaxpr_invars"] = len(make_jaxpr(permissive_sum)(x).jaxpr.invars)

    def nansum(x):
        mask = ~jnp.isnan(x)
        x_without_nans = x[mask]
        return x_without_nans.sum()

    x = jnp.array([1, 2, jnp.nan, 3, 4])
    out["nansum"] = nansum(x)
    try:
        jax.jit(nansum)(x)
        out["boolean_mask_jit"] = "no error"
    except jax.errors.NonConcreteBooleanIndexError as err:
        out["boolean_mask_jit"] = builtin_error(err)

    @jax.jit
    def nansum_2(x):
        mask = ~jnp.isnan(x)
        return jnp.where(mask, x, 0).sum()

    out["nansum_where"] = nansum_2(x)
    return out


@program("docs/notebooks/Common_Gotchas_in_JAX.md")
def gotchas_double_precision():
    import warnings

    import jax.numpy as jnp
    from jax import random

    with warnings.catch_warnings(record=True):  # JAX warns that float64 is truncated
        warnings.simplefilter("always")
        x = random.uniform(random.key(0), (1000,), dtype=jnp.float64)
        y = jnp.array([1.5, 2.5], dtype=jnp.float64)
    return {"uniform_dtype": str(x.dtype), "array_dtype": str(y.dtype),
            "mean": x.mean(), "int_dtype": str(jnp.arange(3).dtype),
            "python_scalars": [jnp.array(1.0), jnp.array(2), jnp.zeros(2).dtype.name]}
