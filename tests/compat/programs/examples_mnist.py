"""JAX's examples/mnist_classifier_fromscratch.py, mnist_classifier.py, mnist_vae.py and
differentially_private_sgd.py, with `datasets.mnist()` replaced by `synthetic_mnist` (seeded
images whose class a linear teacher decides), smaller layers and a few batches an epoch."""
import numpy as np

from tests.compat.programs import program


def synthetic_mnist(side=8, n_train=256, n_test=64, seed=0):
    """(train_images, train_labels, test_images, test_labels) as examples/datasets.mnist()
    gives them: flat float32 images in [0, 1) and one-hot float32 labels."""
    rng = np.random.RandomState(seed)
    teacher = rng.randn(side * side, 10)
    images = rng.rand(n_train + n_test, side * side).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[np.argmax((images - 0.5) @ teacher, axis=1)]
    return images[:n_train], labels[:n_train], images[n_train:], labels[n_train:]


@program("examples/mnist_classifier_fromscratch.py", rtol=1e-4, atol=1e-5, heavy=True)
def example_mnist_from_scratch():
    import jax.numpy as jnp
    import numpy.random as npr
    from jax import grad, jit
    from jax.scipy.special import logsumexp

    def init_random_params(scale, layer_sizes, rng=npr.RandomState(0)):
        return [(scale * rng.randn(m, n), scale * rng.randn(n))
                for m, n, in zip(layer_sizes[:-1], layer_sizes[1:])]

    def predict(params, inputs):
        activations = inputs
        for w, b in params[:-1]:
            outputs = jnp.dot(activations, w) + b
            activations = jnp.tanh(outputs)
        final_w, final_b = params[-1]
        logits = jnp.dot(activations, final_w) + final_b
        return logits - logsumexp(logits, axis=1, keepdims=True)

    def loss(params, batch):
        inputs, targets = batch
        preds = predict(params, inputs)
        return -jnp.mean(jnp.sum(preds * targets, axis=1))

    def accuracy(params, batch):
        inputs, targets = batch
        target_class = jnp.argmax(targets, axis=1)
        predicted_class = jnp.argmax(predict(params, inputs), axis=1)
        return jnp.mean(predicted_class == target_class)

    layer_sizes = [64, 32, 32, 10]
    param_scale = 0.1
    step_size = 0.1
    num_epochs = 3
    batch_size = 64
    train_images, train_labels, test_images, test_labels = synthetic_mnist()
    num_train = train_images.shape[0]
    num_complete_batches, leftover = divmod(num_train, batch_size)
    num_batches = num_complete_batches + bool(leftover)

    def data_stream():
        rng = npr.RandomState(0)
        while True:
            perm = rng.permutation(num_train)
            for i in range(num_batches):
                batch_idx = perm[i * batch_size:(i + 1) * batch_size]
                yield train_images[batch_idx], train_labels[batch_idx]

    batches = data_stream()

    @jit
    def update(params, batch):
        grads = grad(loss)(params, batch)
        return [(w - step_size * dw, b - step_size * db)
                for (w, b), (dw, db) in zip(params, grads)]

    params = init_random_params(param_scale, layer_sizes)
    history = []
    for epoch in range(num_epochs):
        for _ in range(num_batches):
            params = update(params, next(batches))
        history.append([accuracy(params, (train_images, train_labels)),
                        accuracy(params, (test_images, test_labels)),
                        loss(params, (test_images, test_labels))])
    return {"history": history, "last_layer": params[-1]}


@program("examples/mnist_classifier.py", rtol=1e-4, atol=1e-5, heavy=True)
def example_mnist_stax_classifier():
    import itertools

    import jax.numpy as jnp
    import numpy.random as npr
    from jax import grad, jit, random
    from jax.example_libraries import optimizers, stax
    from jax.example_libraries.stax import Dense, LogSoftmax, Relu

    def loss(params, batch):
        inputs, targets = batch
        preds = predict(params, inputs)
        return -jnp.mean(jnp.sum(preds * targets, axis=1))

    def accuracy(params, batch):
        inputs, targets = batch
        target_class = jnp.argmax(targets, axis=1)
        predicted_class = jnp.argmax(predict(params, inputs), axis=1)
        return jnp.mean(predicted_class == target_class)

    init_random_params, predict = stax.serial(
        Dense(32), Relu,
        Dense(32), Relu,
        Dense(10), LogSoftmax)
    rng = random.key(0)
    step_size = 0.05
    batch_size = 64
    train_images, train_labels, test_images, test_labels = synthetic_mnist()
    num_train = train_images.shape[0]
    num_batches = num_train // batch_size

    def data_stream():
        rng = npr.RandomState(0)
        while True:
            perm = rng.permutation(num_train)
            for i in range(num_batches):
                batch_idx = perm[i * batch_size:(i + 1) * batch_size]
                yield train_images[batch_idx], train_labels[batch_idx]

    batches = data_stream()
    opt_init, opt_update, get_params = optimizers.momentum(step_size, mass=0.9)

    @jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        return opt_update(i, grad(loss)(params, batch), opt_state)

    _, init_params = init_random_params(rng, (-1, 8 * 8))
    opt_state = opt_init(init_params)
    itercount = itertools.count()
    history = []
    for epoch in range(3):
        for _ in range(num_batches):
            opt_state = update(next(itercount), opt_state, next(batches))
        params = get_params(opt_state)
        history.append([accuracy(params, (train_images, train_labels)),
                        accuracy(params, (test_images, test_labels))])
    return {"history": history, "init_first_layer": init_params[0],
            "final_last_layer": get_params(opt_state)[-2]}


@program("examples/mnist_vae.py", rtol=2e-4, atol=2e-4, heavy=True)
def example_mnist_vae():
    import jax
    import jax.numpy as jnp
    from jax import grad, jit, lax, random
    from jax.example_libraries import optimizers, stax
    from jax.example_libraries.stax import Dense, FanOut, Relu, Softplus

    def gaussian_kl(mu, sigmasq):
        return -0.5 * jnp.sum(1. + jnp.log(sigmasq) - mu**2. - sigmasq)

    def gaussian_sample(rng, mu, sigmasq):
        return mu + jnp.sqrt(sigmasq) * random.normal(rng, mu.shape)

    def bernoulli_logpdf(logits, x):
        return -jnp.sum(jnp.logaddexp(0., jnp.where(x, -1., 1.) * logits))

    def elbo(rng, params, images):
        enc_params, dec_params = params
        mu_z, sigmasq_z = encode(enc_params, images)
        logits_x = decode(dec_params, gaussian_sample(rng, mu_z, sigmasq_z))
        return bernoulli_logpdf(logits_x, images) - gaussian_kl(mu_z, sigmasq_z)

    def image_sample(rng, params, nrow, ncol):
        _, dec_params = params
        code_rng, img_rng = random.split(rng)
        logits = decode(dec_params, random.normal(code_rng, (nrow * ncol, 10)))
        sampled_images = random.bernoulli(img_rng, jnp.logaddexp(0., logits))
        return image_grid(nrow, ncol, sampled_images, (8, 8))

    def image_grid(nrow, ncol, imagevecs, imshape):
        images = iter(imagevecs.reshape((-1,) + imshape))
        return jnp.vstack([jnp.hstack([next(images).T for _ in range(ncol)][::-1])
                           for _ in range(nrow)]).T

    encoder_init, encode = stax.serial(
        Dense(32), Relu,
        Dense(32), Relu,
        FanOut(2),
        stax.parallel(Dense(10), stax.serial(Dense(10), Softplus)),
    )
    decoder_init, decode = stax.serial(
        Dense(32), Relu,
        Dense(32), Relu,
        Dense(8 * 8),
    )
    step_size = 0.001
    batch_size = 32
    nrow, ncol = 3, 3
    test_rng = random.key(1)
    train_images, _, test_images, _ = synthetic_mnist()
    num_batches = train_images.shape[0] // batch_size
    enc_init_rng, dec_init_rng = random.split(random.key(2))
    _, init_encoder_params = encoder_init(enc_init_rng, (batch_size, 8 * 8))
    _, init_decoder_params = decoder_init(dec_init_rng, (batch_size, 10))
    init_params = init_encoder_params, init_decoder_params
    opt_init, opt_update, get_params = optimizers.momentum(step_size, mass=0.9)
    train_images = jax.device_put(train_images)
    test_images = jax.device_put(test_images)

    def binarize_batch(rng, i, images):
        i = i % num_batches
        batch = lax.dynamic_slice_in_dim(images, i * batch_size, batch_size)
        return random.bernoulli(rng, batch)

    @jit
    def run_epoch(rng, opt_state, images):
        def body_fun(i, opt_state):
            elbo_rng, data_rng = random.split(random.fold_in(rng, i))
            batch = binarize_batch(data_rng, i, images)
            loss = lambda params: -elbo(elbo_rng, params, batch) / batch_size
            g = grad(loss)(get_params(opt_state))
            return opt_update(i, g, opt_state)
        return lax.fori_loop(0, num_batches, body_fun, opt_state)

    @jit
    def evaluate(opt_state, images):
        params = get_params(opt_state)
        elbo_rng, data_rng, image_rng = random.split(test_rng, 3)
        binarized_test = random.bernoulli(data_rng, images)
        test_elbo = elbo(elbo_rng, params, binarized_test) / images.shape[0]
        sampled_images = image_sample(image_rng, params, nrow, ncol)
        return test_elbo, sampled_images

    opt_state = opt_init(init_params)
    elbos = []
    for epoch in range(2):
        opt_state = run_epoch(random.key(epoch), opt_state, train_images)
        test_elbo, sampled_images = evaluate(opt_state, test_images)
        elbos.append(test_elbo)
    return {"elbos": jnp.stack(elbos), "sampled_mean": sampled_images.mean(),
            "sampled_shape": list(sampled_images.shape)}


@program("examples/differentially_private_sgd.py", rtol=2e-4, atol=2e-5, heavy=True)
def example_differentially_private_sgd():
    import itertools

    import jax.numpy as jnp
    import numpy.random as npr
    from jax import grad, jit, random, vmap
    from jax.example_libraries import optimizers, stax
    from jax.tree_util import tree_flatten, tree_unflatten

    init_random_params, predict = stax.serial(
        stax.Conv(4, (3, 3), padding='SAME', strides=(2, 2)),
        stax.Relu,
        stax.MaxPool((2, 2), (1, 1)),
        stax.Flatten,
        stax.Dense(16),
        stax.Relu,
        stax.Dense(10),
    )

    def loss(params, batch):
        inputs, targets = batch
        logits = predict(params, inputs)
        logits = stax.logsoftmax(logits)
        return -jnp.mean(jnp.sum(logits * targets, axis=1))

    def accuracy(params, batch):
        inputs, targets = batch
        target_class = jnp.argmax(targets, axis=1)
        predicted_class = jnp.argmax(predict(params, inputs), axis=1)
        return jnp.mean(predicted_class == target_class)

    def clipped_grad(params, l2_norm_clip, single_example_batch):
        grads = grad(loss)(params, single_example_batch)
        nonempty_grads, tree_def = tree_flatten(grads)
        total_grad_norm = jnp.linalg.norm(
            jnp.array([jnp.linalg.norm(neg.ravel()) for neg in nonempty_grads]))
        divisor = jnp.maximum(total_grad_norm / l2_norm_clip, 1.)
        normalized_nonempty_grads = [g / divisor for g in nonempty_grads]
        return tree_unflatten(tree_def, normalized_nonempty_grads)

    def private_grad(params, batch, rng, l2_norm_clip, noise_multiplier, batch_size):
        clipped_grads = vmap(clipped_grad, (None, None, 0))(params, l2_norm_clip, batch)
        clipped_grads_flat, grads_treedef = tree_flatten(clipped_grads)
        aggregated_clipped_grads = [g.sum(0) for g in clipped_grads_flat]
        rngs = random.split(rng, len(aggregated_clipped_grads))
        noised_aggregated_clipped_grads = [
            g + l2_norm_clip * noise_multiplier * random.normal(r, g.shape)
            for r, g in zip(rngs, aggregated_clipped_grads)]
        normalized_noised_aggregated_clipped_grads = [
            g / batch_size for g in noised_aggregated_clipped_grads]
        return tree_unflatten(grads_treedef, normalized_noised_aggregated_clipped_grads)

    def shape_as_image(images, labels, dummy_dim=False):
        target_shape = (-1, 1, 8, 8, 1) if dummy_dim else (-1, 8, 8, 1)
        return jnp.reshape(images, target_shape), labels

    batch_size = 32
    train_images, train_labels, test_images, test_labels = synthetic_mnist(n_train=128)
    num_train = train_images.shape[0]
    num_batches = num_train // batch_size
    key = random.key(0)

    def data_stream():
        rng = npr.RandomState(0)
        while True:
            perm = rng.permutation(num_train)
            for i in range(num_batches):
                batch_idx = perm[i * batch_size:(i + 1) * batch_size]
                yield train_images[batch_idx], train_labels[batch_idx]

    batches = data_stream()
    opt_init, opt_update, get_params = optimizers.sgd(0.15)

    @jit
    def private_update(rng, i, opt_state, batch):
        params = get_params(opt_state)
        rng = random.fold_in(rng, i)
        return opt_update(i, private_grad(params, batch, rng, 1.0, 1.1, batch_size),
                          opt_state)

    _, init_params = init_random_params(key, (-1, 8, 8, 1))
    opt_state = opt_init(init_params)
    itercount = itertools.count()
    history = []
    for epoch in range(2):
        for _ in range(num_batches):
            opt_state = private_update(key, next(itercount), opt_state,
                                       shape_as_image(*next(batches), dummy_dim=True))
        params = get_params(opt_state)
        history.append([loss(params, shape_as_image(test_images, test_labels)),
                        accuracy(params, shape_as_image(test_images, test_labels))])
    return {"history": history, "dense_bias": get_params(opt_state)[-1][1]}
