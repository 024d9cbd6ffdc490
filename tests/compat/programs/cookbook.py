"""docs/notebooks/autodiff_cookbook.md: Jacobians (jacfwd, jacrev, of dicts), Hessians,
jvp/vjp, Hessian-vector products three ways, vmapped matrix-Jacobian products, Jacobians
built from vmap, Python exceptions under vjp, complex differentiation (holomorphic,
non-holomorphic, a complex Cholesky)."""
from tests.compat.programs import program


def _logistic(jnp, random):
    key = random.key(0)

    def sigmoid(x):
        return 0.5 * (jnp.tanh(x / 2) + 1)

    def predict(W, b, inputs):
        return sigmoid(jnp.dot(inputs, W) + b)

    inputs = jnp.array([[0.52, 1.12, 0.77],
                        [0.88, -1.08, 0.15],
                        [0.52, 0.06, -1.30],
                        [0.74, -2.49, 1.39]])
    key, W_key, b_key = random.split(key, 3)
    W = random.normal(W_key, (3,))
    b = random.normal(b_key, ())
    return key, predict, inputs, W, b


@program("docs/notebooks/autodiff_cookbook.md", rtol=1e-5, atol=1e-6)
def cookbook_jacobians_and_hessians():
    import jax.numpy as jnp
    from jax import jacfwd, jacrev, jvp, random, vjp

    key, predict, inputs, W, b = _logistic(jnp, random)
    f = lambda W: predict(W, b, inputs)
    out = {"jacfwd": jacfwd(f)(W), "jacrev": jacrev(f)(W)}

    def predict_dict(params, inputs):
        return predict(params['W'], params['b'], inputs)

    out["jac_dict"] = jacrev(predict_dict)({'W': W, 'b': b}, inputs)

    def hessian(f):
        return jacfwd(jacrev(f))

    out["hessian"] = hessian(f)(W)
    key, subkey = random.split(key)
    v = random.normal(subkey, W.shape)
    out["jvp"] = jvp(f, (W,), (v,))
    y, vjp_fun = vjp(f, W)
    key, subkey = random.split(key)
    u = random.normal(subkey, y.shape)
    out["vjp"] = vjp_fun(u)

    def vgrad(f, x):
        y, vjp_fn = vjp(f, x)
        return vjp_fn(jnp.ones(y.shape))[0]

    out["vgrad"] = vgrad(lambda x: 3*x**2, jnp.ones((2, 2)))
    return out


@program("docs/notebooks/autodiff_cookbook.md", rtol=2e-4, atol=2e-5)
def cookbook_hessian_vector_products():
    import jax.numpy as jnp
    from jax import grad, jacfwd, jacrev, jvp, random

    def hessian(f):
        return jacfwd(jacrev(f))

    def hvp(f, primals, tangents):
        return jvp(grad(f), primals, tangents)[1]

    def hvp_revfwd(f, primals, tangents):
        g = lambda primals: jvp(f, primals, tangents)[1]
        return grad(g)(primals)

    def hvp_revrev(f, primals, tangents):
        x, = primals
        v, = tangents
        return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)

    def f(X):
        return jnp.sum(jnp.tanh(X)**2)

    key = random.key(0)
    key, subkey1, subkey2 = random.split(key, 3)
    X = random.normal(subkey1, (6, 5))
    V = random.normal(subkey2, (6, 5))
    ans1 = hvp(f, (X,), (V,))
    ans2 = jnp.tensordot(hessian(f)(X), V, 2)
    return {"fwd_over_rev": ans1, "full_hessian": ans2,
            "allclose": jnp.allclose(ans1, ans2, 1e-4, 1e-4),
            "rev_over_fwd": hvp_revfwd(f, (X,), (V,)),
            "rev_over_rev": hvp_revrev(f, (X,), (V,))}


@program("docs/notebooks/autodiff_cookbook.md", rtol=1e-5, atol=1e-6)
def cookbook_vmapped_products():
    import jax.numpy as jnp
    from jax import jacfwd, jacrev, jit, jvp, random, vjp, vmap

    key, predict, inputs, W, b = _logistic(jnp, random)
    f = lambda W: predict(W, b, inputs)
    y = f(W)

    def loop_mjp(f, x, M):
        y, vjp_fun = vjp(f, x)
        return jnp.vstack([jnp.asarray(vjp_fun(mi)) for mi in M])

    def vmap_mjp(f, x, M):
        y, vjp_fun = vjp(f, x)
        outs, = vmap(vjp_fun)(M)
        return outs

    key = random.key(0)
    U = random.normal(key, (16,) + y.shape)
    loop_vs, vmap_vs = loop_mjp(f, W, M=U), vmap_mjp(f, W, M=U)

    def loop_jmp(f, W, M):
        return jnp.vstack([jvp(f, (W,), (mi,))[1] for mi in M])

    def vmap_jmp(f, W, M):
        _jvp = lambda s: jvp(f, (W,), (s,))[1]
        return vmap(_jvp)(M)

    S = random.normal(key, (16,) + W.shape)

    def our_jacrev(f):
        def jacfun(x):
            y, vjp_fun = vjp(f, x)
            J, = vmap(vjp_fun, in_axes=0)(jnp.eye(len(y)))
            return J
        return jacfun

    def our_jacfwd(f):
        def jacfun(x):
            _jvp = lambda s: jvp(f, (x,), (s,))[1]
            Jt = vmap(_jvp, in_axes=1)(jnp.eye(len(x)))
            return jnp.transpose(Jt)
        return jacfun

    def g(x):
        try:
            if x < 3:
                return 2 * x ** 3
            else:
                raise ValueError
        except ValueError:
            return jnp.pi * x

    y, g_vjp = vjp(g, 4.)
    return {"mjp": [loop_vs, vmap_vs], "jmp": [loop_jmp(f, W, M=S), vmap_jmp(f, W, M=S)],
            "our_jacrev": [our_jacrev(f)(W), jacrev(f)(W)],
            "our_jacfwd": [our_jacfwd(f)(W), jacfwd(f)(W)],
            "jit_vjp": jit(g_vjp)(1.)}


@program("docs/notebooks/autodiff_cookbook.md", rtol=1e-5, atol=1e-6)
def cookbook_complex_differentiation():
    import jax.numpy as jnp
    from jax import grad, jvp, random, vjp

    def check(seed):
        key = random.key(seed)
        key, subkey = random.split(key)
        a, b, c, d = random.uniform(subkey, (4,))

        def fun(z):
            x, y = jnp.real(z), jnp.imag(z)
            return u(x, y) + v(x, y) * 1j

        def u(x, y):
            return a * x + b * y

        def v(x, y):
            return c * x + d * y

        key, subkey = random.split(key)
        x, y = random.uniform(subkey, (2,))
        z = x + y * 1j
        key, subkey = random.split(key)
        c, d = random.uniform(subkey, (2,))
        z_dot = c + d * 1j
        _, ans = jvp(fun, (z,), (z_dot,))
        z_bar = jnp.array(c + d * 1j)
        _, fun_vjp = vjp(fun, z)
        ans_vjp, = fun_vjp(z_bar)
        return [ans, ans_vjp]

    out = {"checks": [check(0), check(1), check(2)]}

    def f(z):
        x, y = jnp.real(z), jnp.imag(z)
        return x**2 + y**2

    z = 3. + 4j
    out["real_valued"] = grad(f)(z)
    out["holomorphic_sin"] = grad(lambda z: jnp.sin(z), holomorphic=True)(z)
    out["conjugate"] = grad(lambda z: jnp.conjugate(z), holomorphic=True)(z)
    A = jnp.array([[5., 2.+3j, 5j],
                   [2.-3j, 7., 1.+7j],
                   [-5j, 1.-7j, 12.]])

    def chol_loss(X):
        L = jnp.linalg.cholesky(X)
        return jnp.sum((L - jnp.sin(L))**2)

    out["cholesky"] = grad(chol_loss, holomorphic=True)(A)
    return out
