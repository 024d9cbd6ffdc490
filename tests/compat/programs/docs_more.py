"""Further pages of JAX's documentation: advanced autodiff (stop_gradient, straight-through,
per-example gradients), convolutions, external callbacks, typed PRNG keys (JEP 9263), type
promotion and weak types, and ahead-of-time lowering (docs/aot.md)."""
from tests.compat.programs import program, raised
from tests.compat.programs.cookbook import _logistic


@program("docs/advanced-autodiff.md")
def advanced_autodiff_stop_gradient():
    import jax
    import jax.numpy as jnp

    def hessian(f):
        return jax.jacfwd(jax.grad(f))

    def f(x):
        return jnp.dot(x, x)

    out = {"hessian_dot": hessian(f)(jnp.array([1., 2., 3.]))}

    value_fn = lambda theta, state: jnp.dot(theta, state)
    theta = jnp.array([0.1, -0.1, 0.])
    s_tm1 = jnp.array([1., 2., -1.])
    r_t = jnp.array(1.)
    s_t = jnp.array([2., 1., 0.])

    def td_loss_naive(theta, s_tm1, r_t, s_t):
        v_tm1 = value_fn(theta, s_tm1)
        target = r_t + value_fn(theta, s_t)
        return -0.5 * ((target - v_tm1) ** 2)

    out["naive"] = jax.grad(td_loss_naive)(theta, s_tm1, r_t, s_t)

    def td_loss(theta, s_tm1, r_t, s_t):
        v_tm1 = value_fn(theta, s_tm1)
        target = r_t + value_fn(theta, s_t)
        return -0.5 * ((jax.lax.stop_gradient(target) - v_tm1) ** 2)

    td_update = jax.grad(td_loss)
    out["td"] = td_update(theta, s_tm1, r_t, s_t)
    s_grad = jax.grad(value_fn)(theta, s_tm1)
    out["td_original"] = (r_t + value_fn(theta, s_t) - value_fn(theta, s_tm1)) * s_grad

    def f_round(x):
        return jnp.round(x)  # non-differentiable

    def straight_through_f(x):
        zero = x - jax.lax.stop_gradient(x)
        return zero + jax.lax.stop_gradient(f_round(x))

    out["straight_through"] = [f_round(3.2), straight_through_f(3.2),
                               jax.grad(f_round)(3.2), jax.grad(straight_through_f)(3.2)]

    batched_s_tm1 = jnp.stack([s_tm1, s_tm1])
    batched_r_t = jnp.stack([r_t, r_t])
    batched_s_t = jnp.stack([s_t, s_t])
    perex_grads = jax.jit(jax.vmap(jax.grad(td_loss), in_axes=(None, 0, 0, 0)))
    out["perex"] = perex_grads(theta, batched_s_tm1, batched_r_t, batched_s_t)
    almost_perex_grads = jax.vmap(jax.grad(td_loss))
    batched_theta = jnp.stack([theta, theta])
    out["almost_perex"] = almost_perex_grads(batched_theta, batched_s_tm1, batched_r_t,
                                             batched_s_t)
    return out


@program("docs/advanced-autodiff.md", rtol=2e-5, atol=1e-5)
def advanced_autodiff_jacobians_and_hvp():
    import jax.numpy as jnp
    from jax import grad, jacfwd, jacrev, jvp, random, vjp, vmap

    key, predict, inputs, W, b = _logistic(jnp, random)  # the page's setup, as the cookbook's
    f = lambda W: predict(W, b, inputs)
    out = {"jacfwd": jacfwd(f)(W), "jacrev": jacrev(f)(W)}

    def predict_dict(params, inputs):
        return predict(params['W'], params['b'], inputs)

    out["jac_dict"] = jacrev(predict_dict)({'W': W, 'b': b}, inputs)

    def hessian(f):
        return jacfwd(jacrev(f))

    out["hessian"] = hessian(f)(W)

    def vgrad(f, x):
        y, vjp_fn = vjp(f, x)
        return vjp_fn(jnp.ones(y.shape))[0]

    out["vgrad"] = vgrad(lambda x: 3*x**2, jnp.ones((2, 2)))

    def hvp(f, primals, tangents):
        return jvp(grad(f), primals, tangents)[1]

    def hvp_revfwd(f, primals, tangents):
        g = lambda primals: jvp(f, primals, tangents)[1]
        return grad(g)(primals)

    def hvp_revrev(f, primals, tangents):
        x, = primals
        v, = tangents
        return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)

    def f2(X):
        return jnp.sum(jnp.tanh(X)**2)

    key, subkey1, subkey2 = random.split(key, 3)
    X = random.normal(subkey1, (3, 4))
    V = random.normal(subkey2, (3, 4))
    ans1 = hvp(f2, (X,), (V,))
    ans2 = jnp.tensordot(hessian(f2)(X), V, 2)
    out["hvp"] = [ans1, jnp.allclose(ans1, ans2, 1e-4, 1e-4), hvp_revfwd(f2, (X,), (V,)),
                  hvp_revrev(f2, (X,), (V,))]

    y, vjp_fun = vjp(f, W)

    def vmap_mjp(f, x, M):
        y, vjp_fun = vjp(f, x)
        outs, = vmap(vjp_fun)(M)
        return outs

    def loop_mjp(f, x, M):
        y, vjp_fun = vjp(f, x)
        return jnp.vstack([vjp_fun(mi)[0] for mi in M])  # JAX 0.10: vjp_fun returns a tuple

    U = random.normal(key, (4,) + y.shape)
    out["mjp"] = [vmap_mjp(f, W, M=U), jnp.allclose(loop_mjp(f, W, M=U), vmap_mjp(f, W, M=U))]

    def vmap_jmp(f, W, M):
        _jvp = lambda s: jvp(f, (W,), (s,))[1]
        return vmap(_jvp)(M)

    S = random.normal(key, (4,) + W.shape)
    out["jmp"] = vmap_jmp(f, W, M=S)

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

    out["our_jac"] = [our_jacrev(f)(W), our_jacfwd(f)(W)]
    return out


@program("docs/notebooks/convolutions.md", rtol=1e-5, atol=1e-5)
def convolutions_basic_and_general():
    import jax.numpy as jnp
    import numpy as np
    from jax import lax, random
    from jax.scipy.signal import convolve2d

    key = random.key(1701)
    x = jnp.linspace(0, 10, 50)
    y = jnp.sin(x) + 0.2 * random.normal(key, shape=(50,))
    window = jnp.ones(10) / 10
    y_smooth = jnp.convolve(y, window, mode='same')
    out = {"smooth": y_smooth, "correlate": jnp.correlate(y[:8], window[:3], mode='full')}

    key1, key2 = random.split(random.key(0))
    image = random.normal(key1, (12, 11))
    x2 = jnp.linspace(-3, 3, 7)
    window2 = jnp.exp(-x2[:, None]**2 - x2[None, :]**2)
    out["image_smooth"] = convolve2d(image, window2, mode='same')

    kernel = jnp.zeros((3, 3, 3, 3), dtype=jnp.float32)
    kernel += jnp.array([[1, 1, 0],
                         [1, 0, -1],
                         [0, -1, -1]])[:, :, jnp.newaxis, jnp.newaxis]
    img = jnp.zeros((1, 20, 18, 3), dtype=jnp.float32)
    for k in range(3):
        x = 3 + 6*k
        y = 2 + 6*k
        img = img.at[0, x:x+3, y:y+3, k].set(1.0)

    dn = lax.conv_dimension_numbers(img.shape, kernel.shape, ('NHWC', 'HWIO', 'NHWC'))
    out["dn"] = [list(dn.lhs_spec), list(dn.rhs_spec), list(dn.out_spec)]
    out["same"] = lax.conv_general_dilated(img, kernel, (1, 1), 'SAME', (1, 1), (1, 1), dn)
    out["strided"] = lax.conv_general_dilated(img, kernel, (2, 2), 'SAME', (1, 1), (1, 1), dn)
    out["dilated"] = lax.conv_general_dilated(img, kernel, (1, 1), 'VALID', (1, 1), (3, 3), dn)
    transposed = lax.conv_transpose(img, kernel, (2, 2), 'SAME', dimension_numbers=dn,
                                    transpose_kernel=True)
    kernel_rot = jnp.rot90(jnp.rot90(kernel, axes=(0, 1)), axes=(0, 1))
    manual = lax.conv_general_dilated(img, kernel_rot, (1, 1), ((2, 1), (2, 1)), (2, 2),
                                      (1, 1), dn)
    out["transpose"] = [transposed, jnp.allclose(transposed, manual)]

    kernel1 = jnp.array([[[1, 0, -1], [-1, 0, 1]],
                         [[1, 1, 1], [-1, -1, -1]]],
                        dtype=jnp.float32).transpose([2, 1, 0])
    data = np.zeros((1, 40, 2), dtype=jnp.float32)
    for i in range(2):
        for k in range(2):
            x = 7*i + 6 + 12*k
            data[0, x:x+6, k] = 1.0
    dn1 = lax.conv_dimension_numbers(data.shape, kernel1.shape, ('NWC', 'WIO', 'NWC'))
    out["dn1"] = [list(dn1.lhs_spec), list(dn1.rhs_spec), list(dn1.out_spec)]
    out["conv1d"] = lax.conv_general_dilated(data, kernel1, (1,), 'SAME', (1,), (1,), dn1)

    kernel3 = jnp.array([
        [[0, 0, 0], [0, 1, 0], [0, 0, 0]],
        [[0, -1, 0], [-1, 0, -1], [0, -1, 0]],
        [[0, 0, 0], [0, 1, 0], [0, 0, 0]]],
        dtype=jnp.float32)[:, :, :, jnp.newaxis, jnp.newaxis]
    data3 = jnp.zeros((1, 6, 6, 6, 1), dtype=jnp.float32)
    x, y, z = np.mgrid[0:1:6j, 0:1:6j, 0:1:6j]
    data3 += (jnp.sin(2*x*jnp.pi)*jnp.cos(2*y*jnp.pi)*jnp.cos(2*z*jnp.pi))[None, :, :, :, None]
    dn3 = lax.conv_dimension_numbers(data3.shape, kernel3.shape,
                                     ('NHWDC', 'HWDIO', 'NHWDC'))
    out["conv3d"] = lax.conv_general_dilated(data3, kernel3, (1, 1, 1), 'SAME', (1, 1, 1),
                                             (1, 1, 1), dn3)
    return out


@program("docs/notebooks/external_callbacks.md", rtol=1e-5, atol=1e-6)
def external_callbacks_pure_and_io():
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.experimental import io_callback

    def f_host(x):
        return np.sin(x).astype(x.dtype)

    def f(x):
        result_shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
        return jax.pure_callback(f_host, result_shape, x,
                                 vmap_method='sequential')  # JAX 0.10 needs one to vmap

    x = jnp.arange(5.0)

    def body_fun(_, x):
        return _, f(x)

    out = {"pure": [f(x), jax.jit(f)(x), jax.vmap(f)(x),
                    jax.lax.scan(body_fun, None, jnp.arange(5.0))[1]],
           "pure_grad": raised(lambda: jax.grad(lambda x: f(x).sum())(x))}

    printed = []

    def print_something():
        printed.append('printing something')
        return np.int32(0)

    @jax.jit
    def f1():
        return jax.pure_callback(print_something, np.int32(0))

    out["f1"] = f1()
    global_rng = np.random.default_rng(0)

    def host_side_random_like(x):
        printed.append(f'generating {x.dtype}{list(x.shape)}')
        return global_rng.uniform(size=x.shape).astype(x.dtype)

    @jax.jit
    def numpy_random_like(x):
        return io_callback(host_side_random_like, x, x)

    x = jnp.zeros(5)
    out["io"] = numpy_random_like(x)
    out["io_vmap"] = jax.vmap(numpy_random_like)(x)

    @jax.jit
    def numpy_random_like_ordered(x):
        return io_callback(host_side_random_like, x, x, ordered=True)

    out["io_ordered_vmap"] = raised(lambda: jax.vmap(numpy_random_like_ordered)(x))

    def body_fun2(_, x):
        return _, numpy_random_like_ordered(x)

    out["io_scan"] = jax.lax.scan(body_fun2, None, jnp.arange(5.0))[1]
    out["io_grad"] = raised(lambda: jax.grad(lambda x: numpy_random_like(x).sum())(x))

    @jax.jit
    def g(x):
        io_callback(lambda: printed.append('hello'), None)
        return x

    out["io_unused_grad"] = jax.grad(g)(1.0)

    def log_value(x):
        printed.append(f"log: {x}")

    @jax.jit
    def h(x):
        jax.debug.callback(log_value, x)
        return x

    h(1.0)
    jax.vmap(h)(jnp.arange(5.0))
    jax.grad(h)(1.0)
    jax.effects_barrier()
    out["printed"] = printed
    return out


@program("docs/notebooks/external_callbacks.md", rtol=1e-5, atol=1e-6, imports=("scipy",))
def external_callbacks_bessel_custom_jvp():
    from functools import partial

    import jax
    import jax.numpy as jnp
    import scipy.special

    def jv(v, z):
        v, z = jnp.asarray(v), jnp.asarray(z)
        assert jnp.issubdtype(v.dtype, jnp.integer)
        z = z.astype(jnp.result_type(float, z.dtype))
        _scipy_jv = lambda v, z: scipy.special.jv(v, z).astype(z.dtype)
        result_shape_dtype = jax.ShapeDtypeStruct(
            shape=jnp.broadcast_shapes(v.shape, z.shape),
            dtype=z.dtype)
        return jax.pure_callback(_scipy_jv, result_shape_dtype, v, z,
                                 vmap_method="broadcast_all")  # was vectorized=True

    j1 = partial(jv, 1)
    z = jnp.arange(5.0)
    out = {"j1": j1(z), "jit": jax.jit(j1)(z), "vmap": jax.vmap(j1)(z),
           "grad_error": raised(lambda: jax.grad(j1)(z))}

    jv = jax.custom_jvp(jv)

    @jv.defjvp
    def _jv_jvp(primals, tangents):
        v, z = primals
        _, z_dot = tangents
        jv_minus_1, jv_plus_1 = jv(v - 1, z), jv(v + 1, z)
        djv_dz = jnp.where(v == 0, -jv_plus_1, 0.5 * (jv_minus_1 - jv_plus_1))
        return jv(v, z), z_dot * djv_dz

    j1 = partial(jv, 1)
    out["grad"] = jax.grad(j1)(2.0)
    out["hessian"] = jax.hessian(j1)(2.0)
    out["vmap_grad"] = jax.vmap(jax.grad(j1))(z)
    return out


@program("docs/jep/9263-typed-keys.md")
def typed_keys_jep():
    import jax
    import jax.numpy as jnp
    from jax import dtypes, random

    raw = jax.random.PRNGKey(0)
    key = jax.random.key(0)
    out = {"raw": [raw, raw.shape, str(raw.dtype), repr(raw)],
           "typed": [key.shape, str(key.dtype), repr(key)]}
    key_arr = jax.vmap(jax.random.key)(jnp.arange(4))
    out["vmap_key"] = [key_arr.shape, repr(key_arr), jax.random.key_data(key_arr)]
    new_key, subkey = jax.random.split(key)
    out["split"] = [jax.random.key_data(new_key), jax.random.key_data(subkey)]
    out["uniform"] = jax.random.uniform(key, shape=(5,))
    out["add_error"] = raised(lambda: key + 1)
    out["key_data"] = [jax.random.key_data(key), jax.random.key_data(raw)]
    out["issubdtype"] = [jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key),
                         jax.dtypes.issubdtype(raw.dtype, jax.dtypes.prng_key),
                         jnp.issubdtype(key.dtype, dtypes.prng_key),
                         jax.dtypes.issubdtype(dtypes.prng_key, dtypes.extended),
                         jax.dtypes.issubdtype(key.dtype, dtypes.extended)]

    def ensure_typed_key_array(key):
        if dtypes.issubdtype(key.dtype, dtypes.prng_key):
            return key
        else:
            raise TypeError("New-style typed JAX PRNG keys required")

    out["ensure"] = [ensure_typed_key_array(key).shape,
                     raised(lambda: ensure_typed_key_array(raw))]
    threefry = jax.random.key(0, impl='threefry2x32')
    out["threefry"] = [str(threefry.dtype), jax.random.uniform(threefry, shape=(3,))]

    key = random.PRNGKey(999)
    new_key = random.PRNGKey(key[1])
    out["index_misuse"] = [new_key, key]
    out["index_typed"] = raised(lambda: random.key(999)[1])
    key = random.PRNGKey(0)
    out["arith_misuse"] = key + jnp.arange(10, dtype=key.dtype)[:, None]
    out["batched"] = random.split(key, 10)
    keys = random.split(random.PRNGKey(0))
    out["transpose_misuse"] = jax.vmap(random.uniform, 1)(keys)
    out["transpose_ok"] = jax.vmap(random.uniform, 0)(keys)
    key1, key2 = random.split(random.key(0))
    out["reuse"] = [random.uniform(key1, (4,)), random.uniform(key2, (4,))]
    wrapped = random.wrap_key_data(random.key_data(key_arr))
    out["wrap"] = [wrapped.shape, str(wrapped.dtype), random.key_data(wrapped)]
    return out


@program("docs/101/type_promotion.rst")
def type_promotion_table():
    import jax.numpy as jnp
    import numpy as np

    types = [np.bool_, np.uint8, np.uint16, np.uint32, np.uint64,
             np.int8, np.int16, np.int32, np.int64,
             jnp.bfloat16, np.float16, np.float32, np.float64,
             np.complex64, np.complex128, int, float, complex]
    return {"table": [[str(jnp.promote_types(t1, t2)) for t2 in types] for t1 in types]}


@program("docs/101/type_promotion.rst")
def type_promotion_weak_types():
    import jax
    import jax.numpy as jnp
    import numpy as np

    x = jnp.arange(5, dtype='int8')
    out = {"promote_weak": [str(jnp.promote_types('uint8', int)),
                            str(jnp.promote_types('float16', float))],
           "int16_plus_1": str((jnp.int16(1) + 1).dtype),
           "int16_plus_np": str((jnp.int16(1) + np.array(1)).dtype),
           "np_then_jnp": str((np.int16(1) + 1 + jnp.int16(1)).dtype),
           "weak_mul": [2 * x, repr(2 * x)],
           "strong_mul": [jnp.int32(2) * x, repr(jnp.int32(2) * x)],
           "asarray_weak": repr(jnp.asarray(2)),
           "asarray_strong": repr(jnp.asarray(2, dtype='int32'))}
    x = jnp.float32(1)
    y = jnp.int32(1)
    with jax.numpy_dtype_promotion('strict'):
        out["strict_error"] = raised(lambda: x + y)
        z = x + 1
    out["strict_weak"] = [z, str(z)]
    return out


@program("docs/aot.md")
def aot_lower_compile():
    import jax
    import jax.numpy as jnp
    import numpy as np

    def f(x, y):
        return 2 * x + y

    x, y = 3, 4
    lowered = jax.jit(f).lower(x, y)
    compiled = lowered.compile()
    out = {"compiled": [compiled(x, y), repr(compiled(x, y))]}
    i32_scalar = jax.ShapeDtypeStruct((), jnp.dtype('int32'))
    out["shape_dtype"] = repr(jax.jit(f).lower(i32_scalar, i32_scalar).compile()(x, y))
    x_1d = y_1d = jnp.arange(3)
    out["shape_mismatch"] = raised(
        lambda: jax.jit(f).lower(i32_scalar, i32_scalar).compile()(x_1d, y_1d))
    x_f = y_f = jnp.float32(72.)
    out["dtype_mismatch"] = raised(
        lambda: jax.jit(f).lower(i32_scalar, i32_scalar).compile()(x_f, y_f))

    lowered_with_x = jax.jit(f, static_argnums=0).lower(7, 8)
    out["static"] = repr(lowered_with_x.compile()(5))
    out["static_hollow"] = raised(
        lambda: jax.jit(f, static_argnums=0).lower(i32_scalar, i32_scalar))
    out["static_concrete"] = repr(jax.jit(f, static_argnums=0).lower(10, i32_scalar)
                                  .compile()(5))

    def g(x):
        assert x.shape == (3, 2)
        return x @ jnp.ones(2)

    def make_z(*shape):
        return jnp.arange(np.prod(shape)).reshape(shape)

    z, zs = make_z(3, 2), make_z(4, 3, 2)
    g_jit = jax.jit(g)
    g_aot = jax.jit(g).lower(z).compile()
    out["vmap_jit"] = jax.vmap(g_jit)(zs)
    out["aot_direct"] = g_aot(z)
    out["vmap_aot"] = raised(lambda: jax.vmap(g_aot)(zs))
    out["grad_aot"] = raised(lambda: jax.grad(lambda x: g_aot(x).sum())(z * 1.0))
    out["jit_aot"] = raised(lambda: jax.jit(g_aot)(z))
    return out
