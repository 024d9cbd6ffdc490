"""JAX's examples/advi.py, and kernel_lsq.py and gaussian_process_regression.py (examples/
before JAX removed them in c856560f0e): variational inference on the funnel density with
example_libraries.optimizers, kernel least squares with momentum, GP regression with
jax.scipy.linalg. Iteration counts are cut down; plotting is left out."""
from tests.compat.programs import program


# 30 float32 steps of a noisy objective
@program("examples/advi.py", rtol=5e-4, atol=5e-4, heavy=True)
def example_advi():
    from functools import partial

    import jax.numpy as jnp
    import jax.scipy.stats.norm as norm
    from jax import grad, jit, random, vmap
    from jax.example_libraries import optimizers

    def diag_gaussian_sample(rng, mean, log_std):
        return mean + jnp.exp(log_std) * random.normal(rng, mean.shape)

    def diag_gaussian_logpdf(x, mean, log_std):
        return jnp.sum(vmap(norm.logpdf)(x, mean, jnp.exp(log_std)))

    def elbo(logprob, rng, mean, log_std):
        sample = diag_gaussian_sample(rng, mean, log_std)
        return logprob(sample) - diag_gaussian_logpdf(sample, mean, log_std)

    def batch_elbo(logprob, rng, params, num_samples):
        rngs = random.split(rng, num_samples)
        vectorized_elbo = vmap(partial(elbo, logprob), in_axes=(0, None, None))
        return jnp.mean(vectorized_elbo(rngs, *params))

    @jit(static_argnums=(0, 1, 2, 4))
    def _mesh_eval(func, x_limits, y_limits, params, num_ticks):
        x = jnp.linspace(*x_limits, num=num_ticks)
        y = jnp.linspace(*y_limits, num=num_ticks)
        X, Y = jnp.meshgrid(x, y)
        xy_vec = jnp.stack([X.ravel(), Y.ravel()]).T
        zs = vmap(func, in_axes=(0, None))(xy_vec, params)
        return X, Y, zs.reshape(X.shape)

    def mesh_eval(func, x_limits, y_limits, params, num_ticks=101):
        return _mesh_eval(func, x_limits, y_limits, params, num_ticks)

    def funnel_log_density(params):
        return norm.logpdf(params[0], 0, jnp.exp(params[1])) + \
            norm.logpdf(params[1], 0, 1.35)

    num_samples = 40

    @jit
    def objective(params, t):
        rng = random.key(t)
        return -batch_elbo(funnel_log_density, rng, params, num_samples)

    x_limits = (-2, 2)
    y_limits = (-4, 2)
    target_dist = lambda x, _: jnp.exp(funnel_log_density(x))
    approx_dist = lambda x, params: jnp.exp(diag_gaussian_logpdf(x, *params))
    D = 2
    init_params = (jnp.zeros(D), jnp.zeros(D))
    opt_init, opt_update, get_params = optimizers.momentum(step_size=0.1, mass=0.9)
    opt_state = opt_init(init_params)

    @jit
    def update(i, opt_state):
        params = get_params(opt_state)
        gradient = grad(objective)(params, i)
        return opt_update(i, gradient, opt_state)

    bounds = []
    for t in range(30):
        opt_state = update(t, opt_state)
        params = get_params(opt_state)
        bounds.append(objective(params, t))
    _, _, Z_target = mesh_eval(target_dist, x_limits, y_limits, 1, num_ticks=11)
    X, Y, Z = mesh_eval(approx_dist, x_limits, y_limits, params, num_ticks=11)
    rngs = random.split(random.key(29), num_samples)
    samples = vmap(diag_gaussian_sample, in_axes=(0, None, None))(rngs, *params)
    return {"bounds": jnp.stack(bounds), "params": params, "target": Z_target,
            "approx": Z, "grid": [X[0], Y[:, 0]], "samples": samples}


@program("examples/kernel_lsq.py (c856560f0e^)", rtol=1e-4, atol=1e-4)
def example_kernel_least_squares():
    from functools import partial

    import jax.numpy as jnp
    import numpy.random as npr
    from jax import grad, jit, lax, make_jaxpr, vmap
    from jax.example_libraries import optimizers

    def gram(kernel, xs):
        return vmap(lambda x: vmap(lambda y: kernel(x, y))(xs))(xs)

    def minimize(f, x, num_steps=10000, step_size=0.000001, mass=0.9):
        opt_init, opt_update, get_params = optimizers.momentum(step_size, mass)

        @jit
        def update(i, opt_state):
            x = get_params(opt_state)
            return opt_update(i, grad(f)(x), opt_state)

        opt_state = opt_init(x)
        for i in range(num_steps):
            opt_state = update(i, opt_state)
        return get_params(opt_state)

    def train(kernel, xs, ys, regularization=0.01):
        gram_ = jit(partial(gram, kernel))
        gram_mat = gram_(xs)
        n = xs.shape[0]

        def objective(v):
            risk = .5 * jnp.sum((jnp.dot(gram_mat, v) - ys) ** 2.0)
            reg = regularization * jnp.sum(v ** 2.0)
            return risk + reg

        v = minimize(objective, jnp.zeros(n), num_steps=200, step_size=1e-3)

        def predict(x):
            prods = vmap(lambda x_: kernel(x, x_))(xs)
            return jnp.sum(v * prods)

        return jit(vmap(predict))

    npr.seed(0)
    n = 30
    d = 5
    linear_kernel = lambda x, y: jnp.dot(x, y, precision=lax.Precision.HIGH)
    truth = npr.randn(d)
    xs = npr.randn(n, d)
    ys = jnp.dot(xs, truth)
    predict = train(linear_kernel, xs, ys)
    rbf_kernel = lambda x, y: jnp.exp(-jnp.sum((x - y) ** 2))
    jaxpr = make_jaxpr(partial(gram, rbf_kernel))(xs)
    return {"mse": jnp.sum((predict(xs) - ys) ** 2.), "predictions": predict(xs[:5]),
            "rbf_gram": jit(partial(gram, rbf_kernel))(xs[:4]),
            "rbf_jaxpr_primitives": [str(e.primitive) for e in jaxpr.jaxpr.eqns]}


@program("examples/gaussian_process_regression.py (c856560f0e^)", rtol=2e-4, atol=2e-4,
         heavy=True)
def example_gaussian_process_regression():
    from functools import partial

    import jax.numpy as jnp
    import jax.random as random
    import jax.scipy as scipy
    from jax import grad, jit, vmap

    numpts = 7
    key = random.key(0)
    eye = jnp.eye(numpts)

    def cov_map(cov_func, xs, xs2=None):
        if xs2 is None:
            return vmap(lambda x: vmap(lambda y: cov_func(x, y))(xs))(xs)
        else:
            return vmap(lambda x: vmap(lambda y: cov_func(x, y))(xs))(xs2).T

    def softplus(x):
        return jnp.logaddexp(x, 0.)

    def exp_quadratic(x1, x2):
        return jnp.exp(-jnp.sum((x1 - x2)**2))

    def gp(params, x, y, xtest=None, compute_marginal_likelihood=False):
        noise = softplus(params['noise'])
        amp = softplus(params['amplitude'])
        ls = softplus(params['lengthscale'])
        ymean = jnp.mean(y)
        y = y - ymean
        x = x / ls
        train_cov = amp*cov_map(exp_quadratic, x) + eye * (noise + 1e-6)
        chol = scipy.linalg.cholesky(train_cov, lower=True)
        kinvy = scipy.linalg.solve_triangular(
            chol.T, scipy.linalg.solve_triangular(chol, y, lower=True))
        if compute_marginal_likelihood:
            log2pi = jnp.log(2. * 3.1415)
            ml = jnp.sum(
                -0.5 * jnp.dot(y.T, kinvy) -
                jnp.sum(jnp.log(jnp.diag(chol))) -
                (numpts / 2.) * log2pi)
            ml -= jnp.sum(-0.5 * jnp.log(2 * 3.1415) - jnp.log(amp) - 0.5 * jnp.log(amp)**2)
            return -ml
        if xtest is not None:
            xtest = xtest / ls
        cross_cov = amp*cov_map(exp_quadratic, x, xtest)
        mu = jnp.dot(cross_cov.T, kinvy) + ymean
        v = scipy.linalg.solve_triangular(chol, cross_cov, lower=True)
        var = (amp * cov_map(exp_quadratic, xtest) - jnp.dot(v.T, v))
        return mu, var

    marginal_likelihood = partial(gp, compute_marginal_likelihood=True)
    predict = partial(gp, compute_marginal_likelihood=False)
    grad_fun = jit(grad(marginal_likelihood))
    params = {"amplitude": jnp.zeros((1, 1)),
              "noise": jnp.zeros((1, 1)) - 5.,
              "lengthscale": jnp.zeros((1, 1))}
    momentums = {k: p * 0. for k, p in params.items()}
    scales = {k: p * 0. + 1. for k, p in params.items()}
    lr = 0.01

    def train_step(params, momentums, scales, x, y):
        grads = grad_fun(params, x, y)
        for k in params:
            momentums[k] = 0.9 * momentums[k] + 0.1 * grads[k][0]
            scales[k] = 0.9 * scales[k] + 0.1 * grads[k][0]**2
            params[k] -= lr * momentums[k]/jnp.sqrt(scales[k] + 1e-5)
        return params, momentums, scales

    y_fun = lambda x: jnp.sin(x) + 0.1 * random.normal(key, shape=(x.shape[0], 1))
    x = (random.uniform(key, shape=(numpts, 1)) * 4.) + 1
    y = y_fun(x)
    xtest = jnp.linspace(0, 6., 20)[:, None]
    mls = []
    for i in range(25):
        params, momentums, scales = train_step(params, momentums, scales, x, y)
        if i % 5 == 0:
            mls.append(marginal_likelihood(params, x, y))
    mu, var = predict(params, x, y, xtest)
    std = jnp.sqrt(jnp.diag(var))
    return {"mls": jnp.stack(mls), "params": params, "mu": mu, "std": std}
