"""odeint programs shared by make_api_reference.py (run with JAX) and tests/test_ode.py (numbax):
each takes a namespace holding `jax`, `jnp`, `odeint` and returns values and gradients as
plain lists."""
import numpy as np


def _plain(x):
    if isinstance(x, (tuple, list)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return np.asarray(x).tolist()


def decay(y, t, k):
    return -k * y


def oscillator(state, t, omega, damping):
    return {"x": state["v"], "v": -omega ** 2 * state["x"] - damping * state["v"]}


def lotka_volterra(y, t, params):
    a, b, c, d = params
    prey, pred = y[0], y[1]
    return np.array([1.0, 0.0]) * (a * prey - b * prey * pred) + \
        np.array([0.0, 1.0]) * (c * prey * pred - d * pred)


TS = np.linspace(0.0, 2.0, 5)
LV_PARAMS = np.array([1.5, 1.0, 1.0, 3.0])


def exponential(m):
    jax, jnp, odeint = m.jax, m.jnp, m.odeint
    ts = jnp.asarray(TS)

    def final(y0, k, ts):
        return odeint(decay, y0, ts, k)[-1]

    return _plain([odeint(decay, 1.5, ts, 0.7),
                   jax.grad(final, argnums=(0, 1, 2))(1.5, 0.7, ts),
                   jax.grad(lambda k: jnp.sum(odeint(decay, 1.5, ts, k) ** 2))(0.7)])


def pytree_state(m):
    jax, jnp, odeint = m.jax, m.jnp, m.odeint
    ts = jnp.asarray(TS)
    y0 = {"x": jnp.asarray(1.0), "v": jnp.asarray(0.0)}

    def energy(omega, damping):
        ys = odeint(oscillator, y0, ts, omega, damping)
        return jnp.sum(ys["x"] ** 2 + ys["v"] ** 2)

    return _plain([odeint(oscillator, y0, ts, 2.0, 0.1),
                   jax.grad(energy, argnums=(0, 1))(2.0, 0.1)])


def predator_prey(m):
    jax, jnp, odeint = m.jax, m.jnp, m.odeint
    ts = jnp.asarray(TS)
    y0 = jnp.array([10.0, 5.0])

    def loss(params, y0):
        return jnp.sum(odeint(lotka_volterra, y0, ts, params)[-1])

    return _plain([odeint(lotka_volterra, y0, ts, jnp.asarray(LV_PARAMS)),
                   jax.grad(loss, argnums=(0, 1))(jnp.asarray(LV_PARAMS), y0)])


def transformations(m):
    jax, jnp, odeint = m.jax, m.jnp, m.odeint
    ts = jnp.asarray(TS)

    def closed(scale):  # the ODE function closes over a differentiated value
        return odeint(lambda y, t: -scale * jnp.sin(y) + t, 0.5, ts)[-1]

    return _plain([jax.jit(lambda k: odeint(decay, 2.0, ts, k))(1.3),
                   jax.vmap(lambda y0: odeint(decay, y0, ts, 0.4))(jnp.array([1.0, 2.0, 3.0])),
                   closed(0.8), jax.grad(closed)(0.8),
                   odeint(decay, 1.0, ts, 5.0, rtol=1e-3, atol=1e-3),
                   odeint(decay, 1.0, ts, 5.0, mxstep=3),
                   odeint(decay, 1.0, ts, 5.0, hmax=0.05)])


PROGRAMS = {f.__name__: f for f in (exponential, pytree_state, predator_prey,
                                     transformations)}
