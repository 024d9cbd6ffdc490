"""optax (the optimiser library most JAX users train with) run unchanged on numbax: its
README's Adam loop, adam / adamw / sgd, chain(clip_by_global_norm, ...), learning-rate
schedules and an MLP trained with adamw. optax imports jax itself, so under the test it gets
numbax through numbax.install_as_jax; it is installed without its jax requirement
(`pip install --no-deps optax absl-py`)."""
from tests.compat.programs import program

NEEDS = "jax.sharding (optax annotates with jax.sharding.Sharding; branch sharding)"


@program("optax README.md (Quickstart)", rtol=1e-5, atol=1e-6, needs=NEEDS, imports=("optax",))
def optax_readme_adam():
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    rng = np.random.default_rng(0)
    num_weights = 16
    xs = jnp.asarray(rng.normal(size=(num_weights, 8)), jnp.float32)
    ys = jnp.asarray(rng.normal(size=(8,)), jnp.float32)
    learning_rate = 1e-1
    optimizer = optax.adam(learning_rate)
    params = {'w': jnp.ones((num_weights,))}
    opt_state = optimizer.init(params)
    compute_loss = lambda params, x, y: optax.l2_loss(params['w'].dot(x), y).sum()
    losses = []
    for _ in range(20):
        grads = jax.grad(compute_loss)(params, xs, ys)
        updates, opt_state = optimizer.update(grads, opt_state)
        params = optax.apply_updates(params, updates)
        losses.append(compute_loss(params, xs, ys))
    return {"losses": jnp.stack(losses), "params": params, "count": opt_state[0].count,
            "state_leaves": len(jax.tree.leaves(opt_state))}


def _quadratic_problem(jnp, np):
    rng = np.random.default_rng(1)
    A = jnp.asarray(rng.normal(size=(6, 4)), jnp.float32)
    b = jnp.asarray(rng.normal(size=(6,)), jnp.float32)
    params = {"w": jnp.zeros(4), "b": jnp.float32(0.5)}

    def loss(p):
        return jnp.mean((A @ p["w"] + p["b"] - b) ** 2) + 0.1 * jnp.sum(p["w"] ** 4)

    return params, loss


@program("optax optimizers: adam, adamw, sgd", rtol=1e-5, atol=1e-6, needs=NEEDS,
         imports=("optax",))
def optax_adam_adamw_sgd():
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    params0, loss = _quadratic_problem(jnp, np)
    optimizers = {
        "adam": optax.adam(0.05, b1=0.8, b2=0.99),
        "adamw": optax.adamw(0.05, weight_decay=0.1),
        "sgd": optax.sgd(0.1),
        "sgd_momentum": optax.sgd(0.05, momentum=0.9),
        "sgd_nesterov": optax.sgd(0.05, momentum=0.9, nesterov=True),
        "rmsprop": optax.rmsprop(0.01),
        "adagrad": optax.adagrad(0.1),
    }
    out = {}
    for name, opt in optimizers.items():
        params, state = params0, opt.init(params0)

        @jax.jit
        def step(params, state):
            value, grads = jax.value_and_grad(loss)(params)
            updates, state = opt.update(grads, state, params)
            return optax.apply_updates(params, updates), state, value

        values = []
        for _ in range(25):
            params, state, value = step(params, state)
            values.append(value)
        out[name] = {"values": jnp.stack(values), "params": params}
    return out


# A 50x-scaled loss: float32 rounding of its gradients (summation order) reaches 1e-5 here.
@program("optax combinators: chain(clip_by_global_norm, ...)", rtol=1e-4, atol=1e-5,
         needs=NEEDS, imports=("optax",))
def optax_chain_clip_by_global_norm():
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    params0, loss = _quadratic_problem(jnp, np)
    big = lambda p: 50.0 * loss(p)  # gradients far above the clipping norm
    chains = {
        "clip_adam": optax.chain(optax.clip_by_global_norm(1.0), optax.adam(0.05)),
        "clip_scale": optax.chain(optax.clip_by_global_norm(0.5), optax.scale_by_adam(),
                                  optax.scale(-0.02)),
        "clip_value_sgd": optax.chain(optax.clip(0.3), optax.sgd(0.1)),
    }
    grads0 = jax.grad(big)(params0)
    out = {"global_norm": optax.global_norm(grads0)}
    for name, opt in chains.items():
        params, state = params0, opt.init(params0)
        for _ in range(15):
            updates, state = opt.update(jax.grad(big)(params), state, params)
            params = optax.apply_updates(params, updates)
        out[name] = [params, big(params)]
    updates, _ = optax.clip_by_global_norm(1.0).update(grads0, None)
    out["clipped_norm"] = optax.global_norm(updates)
    return out


@program("optax schedules", rtol=1e-5, atol=1e-7, needs=NEEDS, imports=("optax",))
def optax_learning_rate_schedules():
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    steps = jnp.arange(0, 40, 3)
    schedules = {
        "exponential": optax.exponential_decay(0.1, transition_steps=5, decay_rate=0.5),
        "staircase": optax.exponential_decay(0.1, 5, 0.5, staircase=True),
        "warmup_cosine": optax.warmup_cosine_decay_schedule(0.0, 0.2, warmup_steps=5,
                                                            decay_steps=30, end_value=0.01),
        "piecewise": optax.piecewise_constant_schedule(0.1, {10: 0.5, 20: 0.1}),
        "linear": optax.linear_schedule(0.1, 0.0, transition_steps=25),
        "cosine": optax.cosine_decay_schedule(0.1, decay_steps=30, alpha=0.1),
    }
    out = {name: jax.vmap(s)(steps) for name, s in schedules.items()}
    out["python_int_step"] = schedules["warmup_cosine"](7)
    params0, loss = _quadratic_problem(jnp, np)
    opt = optax.adam(schedules["warmup_cosine"])
    params, state = params0, opt.init(params0)
    for _ in range(12):
        updates, state = opt.update(jax.grad(loss)(params), state)
        params = optax.apply_updates(params, updates)
    out["adam_scheduled"] = params
    injected = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)
    state = injected.init(params0)
    state.hyperparams["learning_rate"] = jnp.float32(0.02)
    updates, state = injected.update(jax.grad(loss)(params0), state)
    out["inject_hyperparams"] = updates
    return out


@program("optax: an MLP classifier trained with adamw", rtol=1e-4, atol=1e-5, needs=NEEDS,
         imports=("optax",))
def optax_mlp_classifier():
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    rng = np.random.default_rng(2)
    x = jnp.asarray(rng.normal(size=(64, 5)), jnp.float32)
    labels = jnp.asarray(np.argmax(np.asarray(x) @ rng.normal(size=(5, 3)), axis=1))
    k1, k2 = jax.random.split(jax.random.key(0))
    params = {"hidden": {"w": jax.random.normal(k1, (5, 16)) * 0.3, "b": jnp.zeros(16)},
              "out": {"w": jax.random.normal(k2, (16, 3)) * 0.3, "b": jnp.zeros(3)}}

    def loss_fn(params, x, labels):
        h = jax.nn.relu(x @ params["hidden"]["w"] + params["hidden"]["b"])
        logits = h @ params["out"]["w"] + params["out"]["b"]
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    optimizer = optax.chain(optax.clip_by_global_norm(1.0),
                            optax.adamw(optax.exponential_decay(0.05, 10, 0.8),
                                        weight_decay=1e-3))
    opt_state = optimizer.init(params)

    @jax.jit
    def train_step(params, opt_state, x, labels):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, labels)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    losses = []
    for _ in range(30):
        params, opt_state, loss = train_step(params, opt_state, x, labels)
        losses.append(loss)
    one_hot = jax.nn.one_hot(labels, 3)
    return {"losses": jnp.stack(losses), "out_bias": params["out"]["b"],
            "ce_matches": jnp.allclose(
                optax.softmax_cross_entropy(x[:, :3], one_hot),
                optax.softmax_cross_entropy_with_integer_labels(x[:, :3], labels))}


@program("optax on bfloat16 parameters (mixed precision: bfloat16 weights and data, float32 "
         "loss)", rtol=2e-2, atol=2e-3, needs=NEEDS, imports=("optax",))
def optax_bfloat16_parameters():
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    rng = np.random.default_rng(4)
    params = {"w": jnp.asarray(rng.normal(size=(16, 4)), jnp.bfloat16),
              "b": jnp.zeros(4, jnp.bfloat16)}
    x = jnp.asarray(rng.normal(size=(32, 16)), jnp.bfloat16)
    y = jnp.asarray(rng.normal(size=(32, 4)), jnp.float32)

    def loss(p):
        return jnp.mean(((x @ p["w"] + p["b"]).astype(jnp.float32) - y) ** 2)

    out = {}
    for name, opt in (("adam", optax.adam(1e-2)), ("sgd", optax.sgd(1e-2, momentum=0.9))):
        state = opt.init(params)

        @jax.jit
        def step(p, s, opt=opt):
            value, grads = jax.value_and_grad(loss)(p)
            updates, s = opt.update(grads, s, p)
            return optax.apply_updates(p, updates), s, value

        p, losses = params, []
        for _ in range(10):
            p, state, value = step(p, state)
            losses.append(value)
        out[name] = {"losses": jnp.stack(losses), "w": p["w"],
                     "state_dtypes": [str(leaf.dtype) for leaf in jax.tree.leaves(state)]}
    return out
