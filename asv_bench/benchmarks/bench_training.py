"""Training workloads: an MLP SGD train step (784-512-512-10, batch 128, one jitted step) and
per-example gradients jit(vmap(grad(loss), in_axes=(None, 0, 0))) of logistic regression
(569 x 30, breast-cancer shaped) and of a small MLP (64-32-10, batch 32)."""
from .common import DTYPES, impls, modules, put, ready, require, sizes, steady
from .models import classification_data, cross_entropy, init_mlp, mlp_logits

IMPLS = impls("numbax", "jax")


def make_train_step(impl, lr=0.01):
    m, jit, grad, _ = modules(impl)

    def loss(params, x, y):
        return cross_entropy(m, mlp_logits(m, params, x), y)

    def step(params, x, y):
        grads = grad(loss)(params, x, y)
        return [(w - lr * gw, b - lr * gb) for (w, b), (gw, gb) in zip(params, grads)]

    return jit(step)


class MLPTrainStep:
    params = (IMPLS, DTYPES, sizes([128], [512]))
    param_names = ["impl", "dtype", "batch"]
    timeout = 300

    def setup(self, impl, dtype, batch):
        require(impl)
        x, y = classification_data(batch, 784, 10, dtype)
        self.args = put(impl, (init_mlp([784, 512, 512, 10], dtype), x, y))
        self.fn = make_train_step(impl)
        steady(impl, lambda: ready(self.fn(*self.args)))

    def time_step(self, impl, dtype, batch):
        ready(self.fn(*self.args))


def _logreg_loss(m):
    def loss(params, x, y):  # one example: x (features,), y scalar in {0, 1}
        w, b = params
        z = x @ w + b
        return m.logaddexp(0.0, z) - y * z

    return loss


def _mlp_loss(m):
    def loss(params, x, y):  # one example: x (features,), y one-hot (classes,)
        return cross_entropy(m, mlp_logits(m, params, x), y)

    return loss


class PerExampleGrads:
    params = (IMPLS, ["logreg_569x30", "mlp_32x64"], DTYPES)
    param_names = ["impl", "model", "dtype"]
    timeout = 300

    def setup(self, impl, model, dtype):
        require(impl)
        m, jit, grad, vmap = modules(impl)
        if model == "logreg_569x30":
            x, onehot = classification_data(569, 30, 2, dtype)
            params = init_mlp([30, 1], dtype)[0]
            params = (params[0][:, 0], params[1][0])
            y = onehot[:, 1]
            loss = _logreg_loss(m)
        else:
            x, y = classification_data(32, 64, 10, dtype)
            params = init_mlp([64, 32, 10], dtype)
            loss = _mlp_loss(m)
        self.args = put(impl, (params, x, y))
        self.fn = jit(vmap(grad(loss), in_axes=(None, 0, 0)))
        steady(impl, lambda: ready(self.fn(*self.args)))

    def time_per_example_grads(self, impl, model, dtype):
        ready(self.fn(*self.args))
