"""Programs from JAX's documentation pages not covered elsewhere: complex differentiation,
stateful computations with refs, a custom jaxpr interpreter (the inverse transformation),
JVP/VJP and higher-order derivatives, the 101 transformations page, the 301 cookbook, the
201 control-flow page and generalized convolutions (docs/complex-differentiation.md,
docs/new_docs/101/state.md, docs/notebooks/Writing_custom_interpreters_in_Jax.md,
docs/jacobian-vector-products.md, docs/higher-order.md, docs/new_docs/101/transformations.md,
docs/new_docs/301/cookbook.md, docs/new_docs/201/control-flow.md,
docs/notebooks/convolutions.md). They showed numbax's Array repr wrapping differently from
JAX's, gradients losing the weak type of weakly typed inputs, and the divisor's derivative
of `div` rounding differently from JAX's (d/dx sum(x / sum(x)) not exactly zero)."""
from tests.compat.programs import program, raised


@program("docs/complex-differentiation.md", rtol=1e-5, atol=1e-5)
def complex_differentiation_checks():
    import jax.numpy as jnp
    from jax import grad, jvp, random, vjp

    def coefficients(seed):
        key = random.key(seed)
        key, subkey = random.split(key)
        a, b, c, d = random.uniform(subkey, (4,))
        key, subkey = random.split(key)
        x, y = random.uniform(subkey, (2,))
        key, subkey = random.split(key)
        tc, td = random.uniform(subkey, (2,))
        return (a, b, c, d), (x, y), (tc, td)

    def check_jvp(seed):
        (a, b, c, d), (x, y), (tc, td) = coefficients(seed)
        u = lambda x, y: a * x + b * y
        v = lambda x, y: c * x + d * y
        fun = lambda z: u(jnp.real(z), jnp.imag(z)) + v(jnp.real(z), jnp.imag(z)) * 1j
        _, ans = jvp(fun, (x + y * 1j,), (tc + td * 1j,))
        expected = (grad(u, 0)(x, y) * tc + grad(u, 1)(x, y) * td
                    + grad(v, 0)(x, y) * tc * 1j + grad(v, 1)(x, y) * td * 1j)
        return ans, bool(jnp.allclose(ans, expected))

    def check_vjp(seed):
        (a, b, c, d), (x, y), (tc, td) = coefficients(seed)
        u = lambda x, y: a * x + b * y
        v = lambda x, y: c * x + d * y
        fun = lambda z: u(jnp.real(z), jnp.imag(z)) + v(jnp.real(z), jnp.imag(z)) * 1j
        _, fun_vjp = vjp(fun, x + y * 1j)
        ans, = fun_vjp(jnp.array(tc + td * 1j))
        expected = (grad(u, 0)(x, y) * tc + grad(v, 0)(x, y) * (-td)
                    + grad(u, 1)(x, y) * tc * (-1j) + grad(v, 1)(x, y) * (-td) * (-1j))
        return ans, bool(jnp.allclose(ans, expected, atol=1e-5, rtol=1e-5))

    A = jnp.array([[5., 2. + 3j, 5j],
                   [2. - 3j, 7., 1. + 7j],
                   [-5j, 1. - 7j, 12.]])

    def chol_loss(X):
        L = jnp.linalg.cholesky(X)
        return jnp.sum((L - jnp.sin(L)) ** 2)

    chol_grad = grad(chol_loss, holomorphic=True)(A)
    return {"jvp": [check_jvp(s) for s in range(3)],
            "vjp": [check_vjp(s) for s in range(3)],
            "grad_real_valued": grad(lambda z: jnp.real(z) ** 2 + jnp.imag(z) ** 2)(3. + 4j),
            "holomorphic_sin": repr(grad(jnp.sin, holomorphic=True)(3. + 4j).dtype),
            "holomorphic_conj": repr(grad(jnp.conjugate, holomorphic=True)(3. + 4j)),
            "cholesky_grad": chol_grad,
            # the notebook prints this matrix: JAX wraps Array reprs at numpy's line width
            # with the dtype on the last line (or on its own line when it does not fit)
            "hermitian_repr": repr(jnp.array([[-0.75, -3.0625 - 10.9375j, 5.984375 + 3.5j],
                                              [-3.0625 + 10.9375j, -8.90625, -5.125 - 6.5j],
                                              [5.984375 - 3.5j, -5.125 + 6.5j, 0.015625]])),
            "wide_repr": repr(jnp.arange(12.).reshape(2, 6) * (1.5 + 2.25j)),
            "long_repr": repr(jnp.linspace(0., 1., 9) + 1.),
            "empty_repr": [repr(jnp.zeros((0,))), repr(jnp.zeros((2, 0), jnp.int32))]}


@program("docs/new_docs/101/state.md", rtol=1e-5, atol=1e-6)
def state_counter_momentum_and_refs():
    import jax
    import jax.numpy as jnp

    class CounterV2:
        def count(self, n):
            return n + 1, n + 1

        def reset(self):
            return 0

    counter = CounterV2()
    state = counter.reset()
    values = []
    for _ in range(3):
        value, state = counter.count(state)
        values.append(value)

    def loss_fn(params, batch):
        x, y = batch
        return jnp.mean((params['w'] * x + params['b'] - y) ** 2)

    def optimizer_step(params, grads, opt_state, lr=0.1, decay=0.9):
        new_opt_state = jax.tree.map(lambda m, g: decay * m + g, opt_state, grads)
        new_params = jax.tree.map(lambda p, m: p - lr * m, params, new_opt_state)
        return new_params, new_opt_state

    def update(params, opt_state, batch):
        grads = jax.grad(loss_fn)(params, batch)
        return optimizer_step(params, grads, opt_state)

    params = {'w': jnp.float32(1.0), 'b': jnp.float32(0.0)}
    opt_state = jax.tree.map(jnp.zeros_like, params)
    batch = (jnp.array([1.0, 2.0, 3.0]), jnp.array([3.0, 5.0, 7.0]))
    for _ in range(100):
        params, opt_state = update(params, opt_state, batch)

    def g(x):
        x_ref = jax.new_ref(0.)
        x_ref[...] = jnp.sin(x)
        return x_ref[...]

    def normalize(x):
        acc = jax.new_ref(0.0)
        acc[...] = jnp.sum(x)
        return x / acc[...]

    x_ref = jax.new_ref(jnp.arange(12.).reshape(3, 4))
    row = x_ref[0]
    x_ref[1] = row
    x_ref[2, 3] = x_ref[1, 2]
    x_ref[0, :3] = x_ref[:, 1]
    vals = x_ref[jnp.array([0, 0, 1]), jnp.array([1, 2, 3])]
    x_ref[jnp.array([1, 2, 1]), jnp.array([0, 0, 1])] = vals

    out_ref = jax.new_ref(jnp.zeros(3))

    def scale_into(x, out_ref):
        out_ref[...] = 2.0 * x

    jax.vmap(scale_into)(jnp.arange(3.0), out_ref)
    return {"counter": values,
            "fit": jax.tree.map(lambda x: round(float(x), 2), params),
            "grad_through_ref": jax.grad(g)(1.0),
            # d/dx sum(x / sum(x)) is exactly zero in JAX: the divisor's derivative is
            # -t * x * y**-2, which cancels 1/y exactly (-t * ans / y left -1.5e-8)
            "normalize_grad": repr(jax.grad(lambda x: normalize(x).sum())(
                jnp.arange(1.0, 4.0))),
            "plain_normalize_grad": repr(jax.grad(lambda x: (x / jnp.sum(x)).sum())(
                jnp.arange(1.0, 4.0))),
            "frozen": jax.freeze(x_ref),
            "vmapped_writes": out_ref[...]}


@program("docs/notebooks/Writing_custom_interpreters_in_Jax.md", rtol=1e-5, atol=1e-6)
def custom_interpreter_inverse():
    from functools import wraps

    import jax
    import jax.numpy as jnp
    from jax import grad, jit, lax, vmap
    from jax.extend import core

    # the notebook imports safe_map from jax._src.util (JAX's private module): the same helper
    def safe_map(f, *xs):
        return list(map(f, *xs))

    def f(x):
        return jnp.exp(jnp.tanh(x))

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

    inverse_registry = {lax.exp_p: jnp.log, lax.tanh_p: jnp.arctanh}

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
                raise NotImplementedError(f"{eqn.primitive} does not have registered inverse.")
            outval = inverse_registry[eqn.primitive](*invals)
            safe_map(write, eqn.invars, [outval])
        return safe_map(read, jaxpr.invars)

    def inverse(fun):
        @wraps(fun)
        def wrapped(*args, **kwargs):
            closed_jaxpr = jax.make_jaxpr(fun)(*args, **kwargs)
            out = inverse_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.literals, *args)
            return out[0]
        return wrapped

    closed_jaxpr = jax.make_jaxpr(f)(jnp.ones(5))
    foo = jax.make_jaxpr(lambda x: x + 1)(5).jaxpr
    f_inv = inverse(f)
    xs = (jnp.arange(5) + 1.) / 5.  # weakly typed: int32 array plus a Python float
    return {"eval_jaxpr": eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.literals, jnp.ones(5)),
            "primitives": [str(e.primitive) for e in closed_jaxpr.jaxpr.eqns],
            "foo": [len(foo.invars), len(foo.eqns), str(foo.eqns[0].primitive)],
            "roundtrip": bool(jnp.allclose(f_inv(f(1.0)), 1.0)),
            "inverse_primitives": [str(e.primitive)
                                   for e in jax.make_jaxpr(inverse(f))(f(1.)).jaxpr.eqns],
            # JAX keeps the weak type of xs through grad (the notebook prints weak_type=True)
            "jit_vmap_grad_inverse": repr(jit(vmap(grad(inverse(f))))(xs).dtype),
            "weak": jit(vmap(grad(inverse(f))))(xs).weak_type,
            "values": jit(vmap(grad(inverse(f))))(xs)}


@program("docs/jep/9407-type-promotion.md", rtol=2e-5, atol=1e-6)
def weak_typed_gradients():
    """Gradients of weakly typed inputs stay weak in JAX: the derivative rules build their
    constants as Python scalars (lax._const) and their zeros with full_like."""
    import jax
    import jax.numpy as jnp
    from jax import grad, lax, vmap

    xs = (jnp.arange(5) + 1.) / 5.
    x = xs[1]
    fns = {"tanh": jnp.tanh, "arctanh": jnp.arctanh, "arcsinh": jnp.arcsinh,
           "arcsin": jnp.arcsin, "arctan": jnp.arctan, "sqrt": jnp.sqrt, "cbrt": jnp.cbrt,
           "log1p": jnp.log1p, "exp2": jnp.exp2, "expm1": jnp.expm1, "square": jnp.square,
           "abs": jnp.abs, "rsqrt": lax.rsqrt, "logistic": lax.logistic, "erf": lax.erf,
           "erf_inv": lax.erf_inv, "digamma": lax.digamma,
           "cube": lambda x: lax.integer_pow(x, 3),
           "logaddexp": lambda x: jnp.logaddexp(x, x + 1.),
           "clip": lambda x: jnp.clip(x, 0.3, 0.5)}
    out = {}
    for name, fn in fns.items():
        g, gs = grad(fn)(x), vmap(grad(fn))(xs)
        out[name] = {"weak": [g.weak_type, gs.weak_type], "grad": g, "vmapped": gs,
                     "jvp_weak": jax.jvp(fn, (x,), (x,))[1].weak_type}
    out["strong_stays_strong"] = grad(jnp.tanh)(jnp.float32(0.4)).weak_type
    return out


@program("docs/jacobian-vector-products.md", rtol=1e-4, atol=1e-5)
def jvp_vjp_hvp_products():
    import jax
    import jax.numpy as jnp

    key = jax.random.key(0)
    key, W_key, b_key = jax.random.split(key, 3)
    W = jax.random.normal(W_key, (3,))
    b = jax.random.normal(b_key, ())

    def sigmoid(x):
        return 0.5 * (jnp.tanh(x / 2) + 1)

    def predict(W, b, inputs):
        return sigmoid(jnp.dot(inputs, W) + b)

    inputs = jnp.array([[0.52, 1.12, 0.77],
                        [0.88, -1.08, 0.15],
                        [0.52, 0.06, -1.30],
                        [0.74, -2.49, 1.39]])
    f = lambda W: predict(W, b, inputs)
    key, subkey = jax.random.split(key)
    v = jax.random.normal(subkey, W.shape)
    y, u = jax.jvp(f, (W,), (v,))
    y, vjp_fun = jax.vjp(f, W)
    key, subkey = jax.random.split(key)
    pulled = vjp_fun(jax.random.normal(subkey, y.shape))

    def vgrad(f, x):
        y, vjp_fn = jax.vjp(f, x)
        return vjp_fn(jnp.ones(y.shape))[0]

    def hvp(f, primals, tangents):
        return jax.jvp(jax.grad(f), primals, tangents)[1]

    def hvp_revfwd(f, primals, tangents):
        g = lambda primals: jax.jvp(f, primals, tangents)[1]
        return jax.grad(g)(primals)

    def hvp_revrev(f, primals, tangents):
        x, = primals
        v, = tangents
        return jax.grad(lambda x: jnp.vdot(jax.grad(f)(x), v))(x)

    g = lambda X: jnp.sum(jnp.tanh(X) ** 2)
    key, k1, k2 = jax.random.split(key, 3)
    X = jax.random.normal(k1, (4, 5))
    V = jax.random.normal(k2, (4, 5))
    ans1 = hvp(g, (X,), (V,))
    ans2 = jnp.tensordot(jax.jacfwd(jax.jacrev(g))(X), V, 2)

    def loop_mjp(f, x, M):
        y, vjp_fun = jax.vjp(f, x)
        return jnp.vstack([jnp.asarray(vjp_fun(mi)) for mi in M])

    def vmap_mjp(f, x, M):
        y, vjp_fun = jax.vjp(f, x)
        outs, = jax.vmap(vjp_fun)(M)
        return outs

    def vmap_jmp(f, W, M):
        return jax.vmap(lambda s: jax.jvp(f, (W,), (s,))[1])(M)

    U = jax.random.normal(jax.random.key(0), (8,) + y.shape)
    S = jax.random.normal(jax.random.key(0), (8,) + W.shape)
    loop_jmp = jnp.vstack([jax.jvp(f, (W,), (mi,))[1] for mi in S])
    return {"jvp": [y, u], "vjp": pulled, "vgrad": vgrad(lambda x: 3 * x ** 2, jnp.ones((2, 2))),
            "hvp": ans1, "hvp_matches_hessian": bool(jnp.allclose(ans1, ans2, 1e-4, 1e-4)),
            "hvp_revfwd": hvp_revfwd(g, (X,), (V,)), "hvp_revrev": hvp_revrev(g, (X,), (V,)),
            "mjp": vmap_mjp(f, W, U),
            "mjp_loop_matches": bool(jnp.allclose(loop_mjp(f, W, U), vmap_mjp(f, W, U))),
            "jmp": vmap_jmp(f, W, S),
            "jmp_loop_matches": bool(jnp.allclose(loop_jmp, vmap_jmp(f, W, S)))}


@program("docs/higher-order.md", rtol=1e-5, atol=1e-6)
def higher_order_td_and_straight_through():
    import jax
    import jax.numpy as jnp

    hessian = lambda f: jax.jacfwd(jax.grad(f))
    value_fn = lambda theta, state: jnp.dot(theta, state)
    theta = jnp.array([0.1, -0.1, 0.])
    s_tm1, r_t, s_t = jnp.array([1., 2., -1.]), jnp.array(1.), jnp.array([2., 1., 0.])

    def td_loss_naive(theta, s_tm1, r_t, s_t):
        v_tm1 = value_fn(theta, s_tm1)
        target = r_t + value_fn(theta, s_t)
        return -0.5 * ((target - v_tm1) ** 2)

    def td_loss(theta, s_tm1, r_t, s_t):
        v_tm1 = value_fn(theta, s_tm1)
        target = r_t + value_fn(theta, s_t)
        return -0.5 * ((jax.lax.stop_gradient(target) - v_tm1) ** 2)

    s_grad = jax.grad(value_fn)(theta, s_tm1)
    original = (r_t + value_fn(theta, s_t) - value_fn(theta, s_tm1)) * s_grad

    def straight_through_f(x):
        zero = x - jax.lax.stop_gradient(x)
        return zero + jax.lax.stop_gradient(jnp.round(x))

    batched = [jnp.stack([a, a]) for a in (s_tm1, r_t, s_t)]
    perex_grads = jax.jit(jax.vmap(jax.grad(td_loss), in_axes=(None, 0, 0, 0)))
    almost = jax.vmap(jax.grad(td_loss))(jnp.stack([theta, theta]), *batched)
    return {"hessian": hessian(lambda x: jnp.dot(x, x))(jnp.array([1., 2., 3.])),
            "td_naive": jax.grad(td_loss_naive)(theta, s_tm1, r_t, s_t),
            "td": jax.grad(td_loss)(theta, s_tm1, r_t, s_t), "original": original,
            "round": [jnp.round(3.2), straight_through_f(3.2)],
            "grad_round": [jax.grad(jnp.round)(3.2), jax.grad(straight_through_f)(3.2)],
            "perex": perex_grads(theta, *batched), "almost_perex": almost}


@program("docs/new_docs/101/transformations.md", rtol=1e-5, atol=1e-5)
def transformations_101_linear_regression():
    import jax
    import jax.numpy as jnp
    import numpy as np

    def selu(x, alpha=1.67, lmbda=1.05):
        return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

    def sum_logistic(x):
        return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))

    def first_finite_differences(f, x, eps=1E-3):
        return jnp.array([(f(x + eps * v) - f(x - eps * v)) / (2 * eps)
                          for v in jnp.eye(len(x))])

    x_small = jnp.arange(3.)
    key = jax.random.key(1701)
    key1, key2 = jax.random.split(key)
    mat = jax.random.normal(key1, (15, 10))
    batched_x = jax.random.normal(key2, (4, 10))
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(100,)).astype(np.float32)
    ys = (3 * xs - 1 + rng.normal(scale=0.1, size=(100,))).astype(np.float32)

    def model(theta, x):
        w, b = theta
        return w * x + b

    def loss_fn(theta, x, y):
        return jnp.mean((model(theta, x) - y) ** 2)

    @jax.jit
    def update(theta, x, y, lr=0.1):
        return theta - lr * jax.grad(loss_fn)(theta, x, y)

    theta = jnp.array([1., 1.])
    for _ in range(200):
        theta = update(theta, xs, ys)
    apply_matrix = lambda v: jnp.dot(mat, v)
    return {"selu": jax.jit(selu)(jnp.arange(-2., 3.)),
            "grad_logistic": jax.grad(sum_logistic)(x_small),
            "finite_differences": first_finite_differences(sum_logistic, x_small),
            "grad_grad_grad": jax.grad(jax.grad(jax.grad(sum_logistic)))(1.0),
            "jacfwd_shape": list(jax.jacfwd(jax.jacrev(sum_logistic))(x_small).shape),
            "vmap": jax.vmap(apply_matrix)(batched_x),
            "vmap_matches": bool(jnp.allclose(jax.vmap(apply_matrix)(batched_x),
                                              jnp.dot(batched_x, mat.T), atol=1e-4)),
            "theta": theta,
            "bool_conversion": raised(lambda: jax.jit(lambda x: x if x > 0 else -x)(1.))}


@program("docs/new_docs/301/cookbook.md", rtol=1e-5, atol=1e-6)
def cookbook_301_jacobians_and_complex():
    import jax
    import jax.numpy as jnp
    from jax import grad, jacfwd, jacrev, jvp, vjp, vmap

    def f(x):
        return jnp.array([jnp.sin(x[0]) * x[1], x[0] ** 2 + x[2], jnp.exp(x[1] * x[2])])

    x = jnp.array([0.5, 1.0, -0.3])
    v = jnp.array([1.0, 0.0, 2.0])
    y, jv = jvp(f, (x,), (v,))
    y, f_vjp = vjp(f, x)
    (vj,) = f_vjp(v)
    hvp = lambda f, x, v: jvp(grad(f), (x,), (v,))[1]
    scalar = lambda x: jnp.sum(jnp.sin(x) * x ** 2)
    per_example = vmap(grad(lambda w, xi: jnp.sum((w * xi) ** 2)), in_axes=(None, 0))

    def c(z):
        return jnp.abs(z) ** 2

    z = 3.0 + 4.0j
    return {"jvp": jv, "vjp": vj, "jacfwd": jacfwd(f)(x), "jacrev": jacrev(f)(x),
            "hessian": jax.hessian(scalar)(x), "hvp": hvp(scalar, x, v),
            "per_example": per_example(x, jnp.arange(6.).reshape(2, 3)),
            "complex_grad": grad(c)(z), "complex_grad_of_sq": grad(lambda z: jnp.real(z * z))(z),
            "holomorphic": grad(lambda z: z ** 3, holomorphic=True)(z),
            "jacrev_holomorphic": jacrev(lambda z: jnp.sin(z), holomorphic=True)(
                jnp.array([1. + 1j, 2. - 1j]))}


@program("docs/new_docs/201/control-flow.md", rtol=1e-5, atol=1e-6)
def control_flow_201_loops_and_branches():
    import jax
    import jax.numpy as jnp
    from jax import lax

    def cumulative_sum(xs):
        return lax.scan(lambda c, x: (c + x, c + x), 0., xs)

    def newton_sqrt(a):
        def cond(state):
            x, i = state
            return (jnp.abs(x * x - a) > 1e-6) & (i < 50)

        def body(state):
            x, i = state
            return 0.5 * (x + a / x), i + 1

        return lax.while_loop(cond, body, (a, 0))

    def piecewise(x):
        return lax.switch(jnp.clip(x.astype(jnp.int32), 0, 2),
                          [lambda x: x ** 2, lambda x: jnp.sin(x), lambda x: -x], x)

    def relu_or_square(x, flag):
        return lax.cond(flag, lambda x: jnp.maximum(x, 0.), lambda x: x * x, x)

    xs = jnp.arange(5.)
    return {"scan": cumulative_sum(xs), "scan_reverse": lax.scan(
                lambda c, x: (c + x, c), 0., xs, reverse=True),
            "fori": lax.fori_loop(0, 10, lambda i, acc: acc + i * i, 0),
            "newton": newton_sqrt(jnp.float32(2.)),
            "switch": jax.vmap(piecewise)(jnp.array([0.5, 1.5, 2.5, -1.])),
            "cond": [relu_or_square(jnp.float32(-2.), True),
                     relu_or_square(jnp.float32(-2.), False)],
            "grad_cond": jax.grad(relu_or_square)(jnp.float32(-2.), False),
            "grad_scan": jax.grad(lambda xs: cumulative_sum(xs)[1].sum())(xs),
            "jit_while": jax.jit(newton_sqrt)(jnp.float32(9.)),
            "associative_scan": lax.associative_scan(jnp.add, xs),
            "cummax": lax.cummax(jnp.array([1., 3., 2., 5., 4.])),
            "map": lax.map(lambda x: x ** 2, xs)}


@program("docs/notebooks/convolutions.md", rtol=1e-5, atol=1e-5)
def generalized_convolutions():
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    kernel = np.zeros((3, 3, 3, 3), dtype=jnp.float32)
    kernel += np.array([[1, 1, 0], [1, 0, -1], [0, -1, -1]])[:, :, np.newaxis, np.newaxis]
    img = np.zeros((1, 40, 30, 3), dtype=jnp.float32)
    for k in range(3):
        x, y = 10 + 5 * k, 6 + 7 * k
        img[0, x:x + 5, y:y + 5, k] = 1.0
    out = lax.conv(jnp.transpose(img, [0, 3, 1, 2]), jnp.transpose(kernel, [3, 2, 0, 1]),
                   (1, 1), 'SAME')
    dn = lax.conv_dimension_numbers(img.shape, kernel.shape, ('NHWC', 'HWIO', 'NHWC'))
    out_nhwc = lax.conv_general_dilated(img, kernel, (1, 1), 'SAME', (1, 1), (1, 1), dn)
    out_valid = lax.conv_general_dilated(img, kernel, (1, 1), 'VALID', (1, 1), (1, 1), dn)
    out_strided = lax.conv_general_dilated(img, kernel, (2, 2), 'SAME', (1, 1), (1, 1), dn)
    out_dilated = lax.conv_general_dilated(img, kernel, (1, 1), 'VALID', (1, 1), (12, 12), dn)
    out_lhs_dilated = lax.conv_general_dilated(img, kernel, (1, 1), ((0, 0), (0, 0)), (2, 2),
                                               (1, 1), dn)
    x1 = jnp.arange(1, 6, dtype=jnp.float32)
    k1 = jnp.array([2, 3, 1], dtype=jnp.float32)
    dn1 = lax.conv_dimension_numbers((1, 5, 1), (3, 1, 1), ('NWC', 'WIO', 'NWC'))
    return {"conv_shape": list(out.shape), "conv_sum": out.sum(), "conv_row": out[0, 0, 12],
            "dn": [list(d) for d in dn],
            "nhwc": [list(out_nhwc.shape), out_nhwc[0, 12, :, 0]],
            "valid": [list(out_valid.shape), out_valid.sum()],
            "strided": [list(out_strided.shape), out_strided[0, 6, :, 1]],
            "dilated": [list(out_dilated.shape), out_dilated.sum()],
            "lhs_dilated": [list(out_lhs_dilated.shape), out_lhs_dilated.sum()],
            "convolve": jnp.convolve(x1, k1, mode='same'),
            "conv_1d": lax.conv_general_dilated(x1[None, :, None], k1[::-1, None, None],
                                                (1,), 'SAME', (1,), (1,), dn1).ravel()}
