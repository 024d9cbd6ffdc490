"""docs/notebooks/Neural_Network_and_Data_Loading.md: an MLP written from scratch with
vmap'd per-example prediction, trained by jitted SGD. MNIST is replaced by seeded synthetic
images of a linear teacher's classes, and the layers are narrower."""
from tests.compat.programs import builtin_error, program


@program("docs/notebooks/Neural_Network_and_Data_Loading.md", rtol=2e-4, atol=2e-5)
def neural_network_from_scratch():
    import time

    import jax.numpy as jnp
    import numpy as np
    from jax import grad, jit, random, vmap
    from jax.scipy.special import logsumexp
    from jax.tree_util import tree_map

    def random_layer_params(m, n, key, scale=1e-2):
        w_key, b_key = random.split(key)
        return scale * random.normal(w_key, (n, m)), scale * random.normal(b_key, (n,))

    def init_network_params(sizes, key):
        keys = random.split(key, len(sizes))
        return [random_layer_params(m, n, k) for m, n, k in zip(sizes[:-1], sizes[1:], keys)]

    layer_sizes = [64, 32, 32, 10]
    step_size = 0.5
    num_epochs = 3
    batch_size = 32
    n_targets = 10
    params = init_network_params(layer_sizes, random.key(0))

    def relu(x):
        return jnp.maximum(0, x)

    def predict(params, image):
        activations = image
        for w, b in params[:-1]:
            outputs = jnp.dot(w, activations) + b
            activations = relu(outputs)
        final_w, final_b = params[-1]
        logits = jnp.dot(final_w, activations) + final_b
        return logits - logsumexp(logits)

    random_flattened_image = random.normal(random.key(1), (8 * 8,))
    out = {"single_shape": list(predict(params, random_flattened_image).shape)}
    random_flattened_images = random.normal(random.key(1), (10, 8 * 8))
    try:
        predict(params, random_flattened_images)
        out["batch_error"] = "no error"
    except TypeError as err:
        out["batch_error"] = builtin_error(err)
    batched_predict = vmap(predict, in_axes=(None, 0))
    out["batched"] = batched_predict(params, random_flattened_images)

    def one_hot(x, k, dtype=jnp.float32):
        return jnp.array(x[:, None] == jnp.arange(k), dtype)

    def accuracy(params, images, targets):
        target_class = jnp.argmax(targets, axis=1)
        predicted_class = jnp.argmax(batched_predict(params, images), axis=1)
        return jnp.mean(predicted_class == target_class)

    def loss(params, images, targets):
        preds = batched_predict(params, images)
        return -jnp.mean(preds * targets)

    @jit
    def update(params, x, y):
        grads = grad(loss)(params, x, y)
        return [(w - step_size * dw, b - step_size * db)
                for (w, b), (dw, db) in zip(params, grads)]

    # Synthetic stand-in for MNIST: images whose class a fixed linear teacher decides.
    rng = np.random.default_rng(0)
    teacher = rng.normal(size=(64, n_targets))
    train_images = rng.normal(size=(256, 64)).astype(np.float32)
    train_labels = np.argmax(train_images @ teacher, axis=1)
    test_images = rng.normal(size=(128, 64)).astype(np.float32)
    test_labels = np.argmax(test_images @ teacher, axis=1)
    train_targets = one_hot(train_labels, n_targets)
    test_targets = one_hot(test_labels, n_targets)
    batches = [tree_map(np.asarray, (train_images[i:i + batch_size],
                                     train_labels[i:i + batch_size]))
               for i in range(0, len(train_images), batch_size)]
    history = []
    for epoch in range(num_epochs):
        start_time = time.time()
        for x, y in batches:
            y = one_hot(y, n_targets)
            params = update(params, x, y)
        epoch_time = time.time() - start_time
        del epoch_time
        history.append([accuracy(params, train_images, train_targets),
                        accuracy(params, test_images, test_targets),
                        loss(params, train_images, train_targets)])
    out["history"] = history
    out["final_bias"] = params[-1][1]
    return out
