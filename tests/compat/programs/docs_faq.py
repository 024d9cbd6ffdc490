"""JAX's FAQ (docs/faq.rst) and the pages it moved out (docs/buffer_donation.md,
docs/benchmarking.md), the MAML tutorial (docs/notebooks/maml.md, on today's
example_libraries names) and the basic use of jax.export (docs/export/export.md)."""
from tests.compat.programs import program, raised


def _warned(fn) -> tuple:
    """`fn()`'s value and the messages of the warnings it raised (first 40 characters)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fn()
    return value, [str(w.message)[:40] for w in caught]


@program("docs/faq.rst")
def faq_jit_changes_behavior():
    import jax

    printed = []

    def impure_func(x):
        printed.append(("Inside:", y))
        return x + y

    results = []
    for y in range(3):
        results.append(impure_func(y))
    jitted = jax.jit(impure_func)
    jit_results = []
    for y in range(3):  # noqa: B007 - the FAQ's global `y`, read at trace time only
        jit_results.append(jitted(y))
    return {"printed": [list(p) for p in printed], "results": results,
            "jit_results": jit_results}


@program("docs/faq.rst")
def faq_jit_numerics():
    # Under jit XLA rewrites log(exp(x)) to x (100.0); that simplification is XLA's, so only
    # the eager values and jit(log(sqrt(x))) are recorded.
    import jax.numpy as jnp
    from jax import jit

    def f(x):
        return jnp.log(jnp.sqrt(x))

    def g(x):
        return jnp.log(jnp.exp(x))

    x = jnp.pi
    return {"f": f(x), "f_jit": jit(f)(x), "g": g(100.0)}


@program("docs/faq.rst")
def faq_jit_methods():
    from functools import partial

    import jax.numpy as jnp
    from jax import jit, tree_util

    out = {}

    class CustomClass:
        def __init__(self, x: jnp.ndarray, mul: bool):
            self.x = x
            self.mul = mul

        @jit  # <---- How to do this correctly?
        def calc(self, y):
            if self.mul:
                return self.x * y
            return y

    out["plain_jit"] = raised(lambda: CustomClass(2, True).calc(3))

    # Strategy 1: JIT-compiled helper function
    @partial(jit, static_argnums=0)
    def _calc(mul, x, y):
        if mul:
            return x * y
        return y

    class CustomClass1:
        def __init__(self, x: jnp.ndarray, mul: bool):
            self.x = x
            self.mul = mul

        def calc(self, y):
            return _calc(self.mul, self.x, y)

    out["helper"] = CustomClass1(2, True).calc(3)

    # Strategy 2: marking `self` as static (broken on mutation, as the FAQ shows)
    class CustomClass2:
        def __init__(self, x: jnp.ndarray, mul: bool):
            self.x = x
            self.mul = mul

        @partial(jit, static_argnums=0)
        def calc(self, y):
            if self.mul:
                return self.x * y
            return y

    c = CustomClass2(2, True)
    first = c.calc(3)
    c.mul = False
    out["static_self"] = [first, c.calc(3)]  # the FAQ: "Should print 3" but prints 6

    class CustomClass3:
        def __init__(self, x: jnp.ndarray, mul: bool):
            self.x = x
            self.mul = mul

        @partial(jit, static_argnums=0)
        def calc(self, y):
            if self.mul:
                return self.x * y
            return y

        def __hash__(self):
            return hash((self.x, self.mul))

        def __eq__(self, other):
            return (isinstance(other, CustomClass3) and
                    (self.x, self.mul) == (other.x, other.mul))

    out["hash_eq"] = [CustomClass3(2, True).calc(3), CustomClass3(2, False).calc(3)]

    # Strategy 3: making CustomClass a PyTree
    class CustomClass4:
        def __init__(self, x: jnp.ndarray, mul: bool):
            self.x = x
            self.mul = mul

        @jit
        def calc(self, y):
            if self.mul:
                return self.x * y
            return y

        def _tree_flatten(self):
            children = (self.x,)  # arrays / dynamic values
            aux_data = {'mul': self.mul}  # static values
            return (children, aux_data)

        @classmethod
        def _tree_unflatten(cls, aux_data, children):
            return cls(*children, **aux_data)

    tree_util.register_pytree_node(CustomClass4, CustomClass4._tree_flatten,
                                   CustomClass4._tree_unflatten)
    c = CustomClass4(2, True)
    first = c.calc(3)
    c.mul = False  # mutation is detected
    second = c.calc(3)
    c = CustomClass4(jnp.array(2), True)  # non-hashable x is supported
    out["pytree"] = [first, second, c.calc(3)]
    return out


@program("docs/faq.rst")
def faq_where_gradients():
    import jax
    import jax.numpy as jnp

    def my_log(x):
        return jnp.where(x > 0., jnp.log(x), 0.)

    def safe_for_grad_log(x):
        return jnp.log(jnp.where(x > 0., x, 1.))

    def my_log_or_y(x, y):
        """Return log(x) if x > 0 or y"""
        return jnp.where(x > 0., jnp.log(jnp.where(x > 0., x, 1.)), y)

    xs = jnp.array([0., 2.])
    return {"my_log": my_log(0.), "grad_my_log": jax.grad(my_log)(0.),
            "safe": safe_for_grad_log(0.), "grad_safe": jax.grad(safe_for_grad_log)(0.),
            "log_or_y": my_log_or_y(xs, 5.),
            "grad_log_or_y": jax.vmap(jax.grad(my_log_or_y, argnums=(0, 1)),
                                      in_axes=(0, None))(xs, 5.),
            "jit_grad_my_log": jax.jit(jax.grad(my_log))(0.)}


@program("docs/faq.rst")
def faq_sort_order_gradients():
    import jax
    import jax.numpy as jnp

    def f(x):
        return (x > 0).astype(float)

    df = jax.vmap(jax.grad(f))
    x = jnp.array([-1.0, -0.5, 0.0, 0.5, 1.0])

    def g(x):
        return jax.nn.sigmoid(x)

    dg = jax.vmap(jax.grad(g))
    x2 = jnp.array([-10.0, -1.0, 0.0, 1.0, 10.0])
    return {"f": f(x), "df": df(x), "g": g(x2), "dg": dg(x2),
            "argmax_grad": jax.grad(lambda v: jnp.max(v) * jnp.argmax(v))(x)}


@program("docs/faq.rst")
def faq_tracer_to_numpy():
    import jax
    import jax.numpy as jnp
    import numpy as np

    seen = []

    @jax.jit
    def f(x):
        seen.append(isinstance(x, jax.core.Tracer))
        return x

    out = {"f": f(jnp.arange(5)), "is_tracer": seen}

    @jax.jit
    def to_numpy(x):
        return np.asarray(x)

    out["np_asarray"] = raised(lambda: to_numpy(jnp.arange(5)))
    try:
        to_numpy(jnp.arange(5))
    except jax.errors.TracerArrayConversionError:
        out["error_class"] = "TracerArrayConversionError"
    return out


@program("docs/buffer_donation.md")
def buffer_donation():
    import jax
    import numpy as np

    def add(x, y):
        return x + y

    out = {}
    x = jax.device_put(np.ones((2, 3)))
    y = jax.device_put(np.ones((2, 3)))
    # Execute `add` with donation of the buffer for `y`.
    z = jax.jit(add, donate_argnums=(1,))(x, y)
    out["z"] = z
    out["deleted"] = [x.is_deleted(), y.is_deleted()]
    out["reuse_donated"] = raised(lambda: y + 1)

    def add_ones(xs):
        return [x + 1 for x in xs]

    xs = [jax.device_put(np.ones((2, 3))), jax.device_put(np.ones((3, 4)))]
    out["add_ones"] = jax.jit(add_ones, donate_argnums=0)(xs)
    out["pytree_deleted"] = [a.is_deleted() for a in xs]

    # Keyword arguments are not donated.
    x = jax.device_put(np.ones((2, 3)))
    y = jax.device_put(np.ones((2, 3)))
    out["keyword"] = jax.jit(add, donate_argnums=(1,))(x, y=y)
    out["keyword_deleted"] = y.is_deleted()

    # More donated buffers than outputs: one is unused, with a warning.
    x = jax.device_put(np.ones((2, 3)))
    y = jax.device_put(np.ones((2, 3)))
    z, warned = _warned(lambda: jax.jit(add, donate_argnums=(0, 1))(x, y))
    out["both"] = z
    out["both_warned"] = [w.startswith("Some donated buffers were not usable")
                          for w in warned]
    x = jax.device_put(np.ones((2, 3)))
    y = jax.device_put(np.ones((1, 3)))  # `y` has different shape than the output
    z, warned = _warned(lambda: jax.jit(add, donate_argnums=(1,))(x, y))
    out["mismatch"] = z
    out["mismatch_warned"] = [w.startswith("Some donated buffers were not usable")
                              for w in warned]
    out["mismatch_deleted"] = y.is_deleted()

    # Donation is disabled under jax_debug_nans, for the executable compiled then.
    f = jax.jit(lambda x: x + 1, donate_argnums=(0,))
    a, b, c = (jax.device_put(np.ones(3)) for _ in range(3))
    with jax.debug_nans(True):
        f(a)
    f(b)
    f.clear_cache()
    out["debug_nans"] = [f(c), a.is_deleted(), b.is_deleted(), c.is_deleted()]
    return out


@program("docs/benchmarking.md", rtol=1e-5, atol=1e-4)
def benchmarking_microbenchmark():
    import jax
    import numpy as np

    def f(x):  # function we're benchmarking (works in both NumPy & JAX)
        return x.T @ (x - x.mean(axis=0))

    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((50, 50)).astype(np.float32)  # the page's is 1000x1000 ones
    want = f(x_np)
    x_jax = jax.device_put(x_np).block_until_ready()
    f_jit = jax.jit(f)
    got = f_jit(x_jax).block_until_ready()
    again = f_jit(x_jax).block_until_ready()
    return {"jax": got, "again": again, "matches_numpy": bool(np.allclose(got, want,
                                                                          atol=1e-4)),
            "dtype": str(x_jax.dtype), "eager": f(x_jax)}


@program("docs/notebooks/maml.md", rtol=2e-4, atol=2e-5)
def maml_sinusoid():
    # jax.experimental.{stax,optimizers} and tree_multimap are today's
    # jax.example_libraries.{stax,optimizers} and jax.tree_util.tree_map; 20000 steps are 5.
    from functools import partial

    import jax.numpy as jnp
    import numpy as np
    from jax import grad, jit, random, vmap
    from jax.example_libraries import optimizers, stax
    from jax.example_libraries.stax import Dense, Relu
    from jax.tree_util import tree_map

    out = {}
    f = lambda x: jnp.exp(x)  # noqa: E731 - the page's lambdas
    g = lambda x: jnp.square(x)  # noqa: E731
    out["grads_of_grads"] = [grad(f)(1.), grad(grad(f))(1.), grad(grad(grad(f)))(1.),
                             grad(g)(2.), grad(grad(g))(2.), grad(grad(grad(g)))(2.)]

    net_init, net_apply = stax.serial(Dense(40), Relu, Dense(40), Relu, Dense(1))
    rng = random.PRNGKey(0)
    in_shape = (-1, 1,)
    out_shape, net_params = net_init(rng, in_shape)
    out["out_shape"] = list(out_shape)

    def loss(params, inputs, targets):
        predictions = net_apply(params, inputs)
        return jnp.mean((targets - predictions)**2)

    xrange_inputs = jnp.linspace(-5, 5, 100).reshape((100, 1))  # (k, 1)
    targets = jnp.sin(xrange_inputs)
    out["predictions"] = vmap(partial(net_apply, net_params))(xrange_inputs)[::10]
    out["losses"] = vmap(partial(loss, net_params))(xrange_inputs, targets)[::10]

    opt_init, opt_update, get_params = optimizers.adam(step_size=1e-2)
    opt_state = opt_init(net_params)

    @jit
    def step(i, opt_state, x1, y1):
        p = get_params(opt_state)
        g = grad(loss)(p, x1, y1)
        return opt_update(i, g, opt_state)

    for i in range(5):
        opt_state = step(i, opt_state, xrange_inputs, targets)
    out["fit_loss"] = loss(get_params(opt_state), xrange_inputs, targets)

    g = lambda x, y: jnp.square(x) + y  # noqa: E731
    x0, y0 = 2., 1.

    def maml_objective(x, y):
        return g(x - grad(g)(x, y), y)

    out["toy"] = [grad(g)(x0, y0), x0 - grad(g)(x0, y0), maml_objective(x0, y0),
                  x0 - grad(maml_objective)(x0, y0)]

    alpha = .1

    def inner_update(p, x1, y1):
        grads = grad(loss)(p, x1, y1)
        inner_sgd_fn = lambda g, state: (state - alpha*g)  # noqa: E731
        return tree_map(inner_sgd_fn, grads, p)

    def maml_loss(p, x1, y1, x2, y2):
        p2 = inner_update(p, x1, y1)
        return loss(p2, x2, y2)

    out["maml_loss"] = maml_loss(net_params, xrange_inputs, targets, jnp.array([0.]),
                                 jnp.array([0.]))

    data = np.random.default_rng(0)

    def sample_tasks(outer_batch_size, inner_batch_size):
        As = data.uniform(low=0.1, high=.5, size=outer_batch_size)
        phases = data.uniform(low=0., high=np.pi, size=outer_batch_size)

        def get_batch():
            xs, ys = [], []
            for A, phase in zip(As, phases):
                x = data.uniform(low=-5., high=5., size=(inner_batch_size, 1))
                xs.append(x)
                ys.append(A * np.sin(x + phase))
            return jnp.stack(xs), jnp.stack(ys)

        x1, y1 = get_batch()
        x2, y2 = get_batch()
        return x1, y1, x2, y2

    opt_init, opt_update, get_params = optimizers.adam(step_size=1e-3)
    out_shape, net_params = net_init(rng, in_shape)
    opt_state = opt_init(net_params)

    def batch_maml_loss(p, x1_b, y1_b, x2_b, y2_b):
        task_losses = vmap(partial(maml_loss, p))(x1_b, y1_b, x2_b, y2_b)
        return jnp.mean(task_losses)

    @jit
    def batch_step(i, opt_state, x1, y1, x2, y2):
        p = get_params(opt_state)
        g = grad(batch_maml_loss)(p, x1, y1, x2, y2)
        l = batch_maml_loss(p, x1, y1, x2, y2)  # noqa: E741 - the page's name
        return opt_update(i, g, opt_state), l

    batched_losses = []
    for i in range(5):
        x1_b, y1_b, x2_b, y2_b = sample_tasks(4, 20)
        opt_state, l = batch_step(i, opt_state, x1_b, y1_b, x2_b, y2_b)  # noqa: E741
        batched_losses.append(l)
    out["batched_losses"] = batched_losses
    net_params = get_params(opt_state)
    x1 = data.uniform(low=-5., high=5., size=(10, 1))
    y1 = 1. * np.sin(x1 + 0.)
    shots = []
    for _ in range(1, 3):
        net_params = inner_update(net_params, x1, y1)
        shots.append(vmap(partial(net_apply, net_params))(xrange_inputs)[::20])
    out["shots"] = shots
    return out


@program("docs/export/export.md", needs="jax.export (export, Exported.call, in_avals)")
def export_basic_usage():
    # The page's serialize/deserialize round trip needs the flatbuffers package, which the
    # recording machine lacks; the Exported object is called directly instead.
    import jax
    import numpy as np
    from jax import export

    def f(x):
        return 2 * x * x

    exported = export.export(jax.jit(f))(jax.ShapeDtypeStruct((), np.float32))
    return {"fun_name": exported.fun_name, "in_avals": [str(a) for a in exported.in_avals],
            "out_avals": [str(a) for a in exported.out_avals],
            "call": exported.call(np.float32(3.)),
            "jit_call": jax.jit(exported.call)(np.float32(4.)),
            "grad": jax.grad(exported.call)(np.float32(3.))}
