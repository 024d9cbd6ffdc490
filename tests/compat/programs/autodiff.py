"""docs/automatic-differentiation.md: grad of tanh to third order, a polynomial's derivatives,
logistic regression's gradient by argnums, pytrees and value_and_grad, finite differences."""
from tests.compat.programs import program


@program("docs/automatic-differentiation.md")
def autodiff_tanh_and_polynomial():
    import jax
    import jax.numpy as jnp
    from jax import grad

    grad_tanh = grad(jnp.tanh)
    f = lambda x: x**3 + 2*x**2 - 3*x + 1
    dfdx = jax.grad(f)
    d2fdx = jax.grad(dfdx)
    d3fdx = jax.grad(d2fdx)
    d4fdx = jax.grad(d3fdx)
    return {"grad_tanh": grad_tanh(2.0), "grad2": grad(grad(jnp.tanh))(2.0),
            "grad3": grad(grad(grad(jnp.tanh)))(2.0),
            "poly": [dfdx(1.), d2fdx(1.), d3fdx(1.), d4fdx(1.)]}


def _logistic_problem():
    import jax
    import jax.numpy as jnp

    key = jax.random.key(0)

    def sigmoid(x):
        return 0.5 * (jnp.tanh(x / 2) + 1)

    def predict(W, b, inputs):
        return sigmoid(jnp.dot(inputs, W) + b)

    inputs = jnp.array([[0.52, 1.12, 0.77],
                        [0.88, -1.08, 0.15],
                        [0.52, 0.06, -1.30],
                        [0.74, -2.49, 1.39]])
    targets = jnp.array([True, True, False, True])

    def loss(W, b):
        preds = predict(W, b, inputs)
        label_probs = preds * targets + (1 - preds) * (1 - targets)
        return -jnp.sum(jnp.log(label_probs))

    key, W_key, b_key = jax.random.split(key, 3)
    W = jax.random.normal(W_key, (3,))
    b = jax.random.normal(b_key, ())
    return key, predict, inputs, targets, loss, W, b


@program("docs/automatic-differentiation.md", rtol=2e-6)
def autodiff_logistic_regression():
    import jax
    import jax.numpy as jnp
    from jax import grad

    key, predict, inputs, targets, loss, W, b = _logistic_problem()
    out = {"W": W, "b": b}
    out["W_grad0"] = grad(loss, argnums=0)(W, b)
    out["W_grad"] = grad(loss)(W, b)
    out["b_grad"] = grad(loss, 1)(W, b)
    out["Wb_grad"] = grad(loss, (0, 1))(W, b)

    def loss2(params_dict):
        preds = predict(params_dict['W'], params_dict['b'], inputs)
        label_probs = preds * targets + (1 - preds) * (1 - targets)
        return -jnp.sum(jnp.log(label_probs))

    out["dict_grad"] = grad(loss2)({'W': W, 'b': b})
    loss_value, Wb_grad = jax.value_and_grad(loss, (0, 1))(W, b)
    out["value_and_grad"] = [loss_value, Wb_grad, loss(W, b)]
    return out


@program("docs/automatic-differentiation.md", rtol=1e-5, atol=1e-5)
def autodiff_finite_differences():
    import jax
    import jax.numpy as jnp
    from jax import grad
    from jax.test_util import check_grads

    key, predict, inputs, targets, loss, W, b = _logistic_problem()
    eps = 1e-4
    b_grad_numerical = (loss(W, b + eps / 2.) - loss(W, b - eps / 2.)) / eps
    key, subkey = jax.random.split(key)
    vec = jax.random.normal(subkey, W.shape)
    unitvec = vec / jnp.sqrt(jnp.vdot(vec, vec))
    W_grad_numerical = (loss(W + eps / 2. * unitvec, b)
                        - loss(W - eps / 2. * unitvec, b)) / eps
    check_grads(loss, (W, b), order=2)  # raises if the derivatives disagree
    return {"unitvec": unitvec,
            "b_grad_autodiff": grad(loss, 1)(W, b),
            "W_dirderiv_autodiff": jnp.vdot(grad(loss)(W, b), unitvec),
            # float32 finite differences of a sum: compared loosely, JAX's own are noisy
            "b_close": bool(abs(b_grad_numerical - grad(loss, 1)(W, b)) < 0.05),
            "W_close": bool(abs(W_grad_numerical
                                - jnp.vdot(grad(loss)(W, b), unitvec)) < 0.05)}
