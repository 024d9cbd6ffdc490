"""numbax.example_libraries.optimizers: JAX's minimal optimizers as (init_fun, update_fun,
get_params) triples over pytrees, with step-size schedules. Mirrors jax.example_libraries."""
from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable
from functools import partial  # noqa: F401  (JAX's module exports it)
from typing import Any, NamedTuple

import numpy as np

import numbax.numpy as jnp
from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.errors import NumbaxTypeError, NumbaxValueError

__all__ = [
    "Array", "InitFn", "JoinPoint", "Optimizer", "OptimizerState", "Params", "ParamsFn",
    "Schedule", "State", "Step", "UpdateFn", "Updates", "adagrad", "adam", "adamax",
    "clip_grads", "constant", "exponential_decay", "inverse_time_decay", "l2_norm",
    "make_schedule", "map", "momentum", "nesterov", "optimizer", "pack_optimizer_state",
    "partial", "piecewise_constant", "polynomial_decay", "rmsprop", "rmsprop_momentum",
    "safe_map", "safe_zip", "sgd", "sm3", "unpack_optimizer_state", "unzip2", "zip",
]

_builtin_map, _builtin_zip = map, zip


def safe_map(f: Callable, *args: Any) -> list:
    """list(map(f, *args)) for sequences of one length (ValueError otherwise, as JAX's).

    >>> safe_map(lambda a, b: a + b, [1, 2], [3, 4])
    [4, 6]
    """
    seqs = [list(a) for a in args]
    _check_lengths("safe_map", seqs)
    return list(_builtin_map(f, *seqs))


def safe_zip(*args: Any) -> list:
    """list(zip(*args)) for sequences of one length (ValueError otherwise, as JAX's).

    >>> safe_zip([1, 2], "ab")
    [(1, 'a'), (2, 'b')]
    """
    seqs = [list(a) for a in args]
    _check_lengths("safe_zip", seqs)
    return list(_builtin_zip(*seqs))


def _check_lengths(api: str, seqs: list) -> None:
    lengths = tuple(len(s) for s in seqs)
    if len(set(lengths)) > 1:
        raise NumbaxValueError(
            f"optimizers.{api}: arguments have lengths {lengths}, expected equal lengths.")


def unzip2(xys: Any) -> tuple[tuple, tuple]:
    """A sequence of pairs as a pair of tuples.

    >>> unzip2([(1, "a"), (2, "b")])
    ((1, 2), ('a', 'b'))
    """
    xs, ys = [], []
    for x, y in xys:
        xs.append(x)
        ys.append(y)
    return tuple(xs), tuple(ys)


map = safe_map  # noqa: A001  (JAX's module rebinds map and zip to the safe versions)
zip = safe_zip  # noqa: A001

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
tu.register_pytree_node(
    OptimizerState,
    lambda xs: ((xs.packed_state,), (xs.tree_def, xs.subtree_defs)),
    lambda data, xs: OptimizerState(xs[0], data[0], data[1]))

Array = Any
Params = Any  # arbitrary pytrees of arrays
State = Any  # an optimizer's per-leaf state
Updates = Params  # gradients: the structure of the parameters
InitFn = Callable[[Params], OptimizerState]
Step = int
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]
Schedule = Callable[[Step], float]


class Optimizer(NamedTuple):
    """The (init_fn, update_fn, params_fn) triple an optimizer constructor returns."""

    init_fn: Callable
    update_fn: Callable
    params_fn: Callable


def optimizer(opt_maker: Callable) -> Callable[..., Optimizer]:
    """Lifts an optimizer written for single arrays to pytrees of parameters.

    `opt_maker(*args)` returns (init, update, get_params) for one array; the decorated
    constructor returns an Optimizer whose state is an OptimizerState pytree.

    >>> opt_init, opt_update, get_params = sgd(0.1)
    >>> get_params(opt_update(0, {"w": 1.0}, opt_init({"w": 2.0})))["w"]
    1.9
    """

    @functools.wraps(opt_maker)
    def tree_opt_maker(*args: Any, **kwargs: Any) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            x0_flat, tree = tu.tree_flatten(x0_tree)
            initial_states = [init(x0) for x0 in x0_flat]
            flat_pairs = [tu.tree_flatten(s) for s in initial_states]
            states_flat = tuple(p[0] for p in flat_pairs)
            subtrees = tuple(p[1] for p in flat_pairs)
            return OptimizerState(states_flat, tree, subtrees)

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            states_flat, tree, subtrees = opt_state
            grad_flat, tree2 = tu.tree_flatten(grad_tree)
            if tree2 != tree:
                raise NumbaxTypeError(
                    f"optimizers.update_fun: grad_tree has structure {tree2}, expected the "
                    f"parameter structure {tree} the optimizer was initialized with. Pass "
                    "gradients with the same structure as the parameters.")
            states = [tu.tree_unflatten(s, f) for s, f in zip(subtrees, states_flat)]
            new_states = [update(i, g, s) for g, s in zip(grad_flat, states)]
            new_flat = []
            for s, subtree in zip(new_states, subtrees):
                leaves, subtree2 = tu.tree_flatten(s)
                if subtree2 != subtree:
                    raise NumbaxTypeError(
                        f"optimizers.update_fun: the update produced a state of structure "
                        f"{subtree2}, expected its input structure {subtree}.")
                new_flat.append(leaves)
            return OptimizerState(tuple(new_flat), tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            states_flat, tree, subtrees = opt_state
            states = [tu.tree_unflatten(s, f) for s, f in zip(subtrees, states_flat)]
            return tu.tree_unflatten(tree, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


@optimizer
def sgd(step_size: Any) -> tuple[Callable, Callable, Callable]:
    """Stochastic gradient descent: x <- x - step_size(i) * g.

    Args:
      step_size: a positive scalar or a schedule i -> step size.

    Returns:
      An (init_fun, update_fun, get_params) triple.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0

    def update(i, g, x):
        return x - step_size(i) * g

    def get_params(x):
        return x

    return init, update, get_params


@optimizer
def momentum(step_size: Any, mass: float) -> tuple[Callable, Callable, Callable]:
    """SGD with momentum: v <- mass * v + g; x <- x - step_size(i) * v."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def nesterov(step_size: Any, mass: float) -> tuple[Callable, Callable, Callable]:
    """SGD with Nesterov momentum: v <- mass * v + g; x <- x - step_size(i) * (mass * v + g)."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def adagrad(step_size: Any, momentum: float = 0.9) -> tuple[Callable, Callable, Callable]:
    """Adagrad (Duchi et al. 2011) with momentum on the normalised gradient."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        safe = jnp.where(g_sq > 0, g_sq, 1.0)
        g_sq_inv_sqrt = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(safe), 0.0)
        m = (1.0 - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def rmsprop(step_size: Any, gamma: float = 0.9,
            eps: float = 1e-8) -> tuple[Callable, Callable, Callable]:
    """RMSProp: a <- gamma * a + (1 - gamma) g^2; x <- x - step_size(i) * g / sqrt(a + eps)."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def rmsprop_momentum(step_size: Any, gamma: float = 0.9, eps: float = 1e-8,
                     momentum: float = 0.9) -> tuple[Callable, Callable, Callable]:
    """RMSProp with momentum on the scaled step."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def adam(step_size: Any, b1: float = 0.9, b2: float = 0.999,
         eps: float = 1e-8) -> tuple[Callable, Callable, Callable]:
    """Adam (Kingma & Ba 2015) with bias-corrected moments.

    Args:
      step_size: a positive scalar or a schedule i -> step size.
      b1, b2: decay rates of the first and second moment estimates.
      eps: added to sqrt(vhat) for stability.

    Returns:
      An (init_fun, update_fun, get_params) triple.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        dtype = core.get_aval(m).dtype
        mhat = m / (1 - jnp.asarray(b1, dtype) ** (i + 1))
        vhat = v / (1 - jnp.asarray(b2, dtype) ** (i + 1))
        return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def adamax(step_size: Any, b1: float = 0.9, b2: float = 0.999,
           eps: float = 1e-8) -> tuple[Callable, Callable, Callable]:
    """AdaMax: Adam with the infinity norm, u <- max(b2 * u, |g|)."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        dtype = core.get_aval(m).dtype
        x = x - (step_size(i) / (1 - jnp.asarray(b1, dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def sm3(step_size: Any, momentum: float = 0.9) -> tuple[Callable, Callable, Callable]:
    """SM3 (Anil et al. 2019): Adagrad whose accumulator is the min over one vector per axis.

    Each axis j keeps v_j = max over the other axes of the accumulator; the accumulator is
    min_j v_j + g^2 and the step is momentum-averaged g / sqrt(accumulator).

    Args:
      step_size: a positive scalar or a schedule i -> step size.
      momentum: the momentum coefficient.

    Returns:
      An (init_fun, update_fun, get_params) triple.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        x_shape = tuple(core.get_aval(jnp.asarray(x0)).shape)
        x0 = jnp.atleast_1d(x0)
        vs = [jnp.zeros(size, dtype=core.get_aval(x0).dtype) for size in x_shape or (1,)]
        return x0, jnp.zeros_like(x0), vs, x_shape

    def update(i, g, state):
        x, m, vs, x_shape = state
        g = jnp.reshape(g, core.get_aval(x).shape)
        ndim = len(vs)
        expanded = [jnp.expand_dims(v, tuple(a for a in range(ndim) if a != j))
                    for j, v in enumerate(vs)]
        accum = functools.reduce(jnp.minimum, expanded) + jnp.square(g)
        accum_inv_sqrt = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
        m = (1.0 - momentum) * (g * accum_inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        vs = [jnp.max(accum, axis=tuple(a for a in range(ndim) if a != j))
              for j in range(ndim)]
        return x, m, vs, x_shape

    def get_params(state):
        x, _, _, x_shape = state
        return jnp.reshape(x, x_shape)

    return init, update, get_params


# ----------------------------------------------------------------------------- schedules


def constant(step_size: Any) -> Schedule:
    """The schedule i -> step_size."""

    def schedule(i):
        return step_size

    return schedule


def exponential_decay(step_size: Any, decay_steps: Any, decay_rate: Any) -> Schedule:
    """The schedule i -> step_size * decay_rate ** (i / decay_steps)."""

    def schedule(i):
        return step_size * decay_rate ** (i / decay_steps)

    return schedule


def inverse_time_decay(step_size: Any, decay_steps: Any, decay_rate: Any,
                       staircase: bool = False) -> Schedule:
    """The schedule i -> step_size / (1 + decay_rate * i / decay_steps) (floored if staircase)."""
    if staircase:
        def schedule(i):
            return step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    else:
        def schedule(i):
            return step_size / (1 + decay_rate * i / decay_steps)
    return schedule


def polynomial_decay(step_size: Any, decay_steps: Any, final_step_size: Any,
                     power: float = 1.0) -> Schedule:
    """Decays from step_size to final_step_size over decay_steps as (1 - t)^power."""

    def schedule(step_num):
        step_num = jnp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size

    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
    """values[k] for i in (boundaries[k-1], boundaries[k]]; len(values) = len(boundaries) + 1.

    >>> float(piecewise_constant([2, 4], [1.0, 0.5, 0.1])(3))
    0.5
    """
    boundaries = jnp.array(boundaries)
    values = jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise NumbaxValueError(
            f"optimizers.piecewise_constant: boundaries has shape {boundaries.shape} and values "
            f"{values.shape}, expected 1-d sequences.")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise NumbaxValueError(
            f"optimizers.piecewise_constant: boundaries has length {boundaries.shape[0]} and "
            f"values {values.shape[0]}, expected len(values) == len(boundaries) + 1.")

    def schedule(i):
        return values[jnp.sum(i > boundaries)]

    return schedule


def make_schedule(scalar_or_schedule: Any) -> Schedule:
    """A callable schedule as given, or a constant schedule for a scalar; else an error."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if isinstance(scalar_or_schedule, (int, float, np.number)) or (
            core.is_array_like(scalar_or_schedule) and jnp.ndim(scalar_or_schedule) == 0):
        if isinstance(scalar_or_schedule, bool):
            pass
        else:
            return constant(scalar_or_schedule)
    raise NumbaxTypeError(
        f"optimizers: step_size has type {type(scalar_or_schedule).__name__}, expected a "
        "scalar or a callable schedule i -> step size. Pass e.g. 1e-3 or "
        "exponential_decay(1e-3, 100, 0.5).")


# ----------------------------------------------------------------------------- utilities


def l2_norm(tree: Any) -> Any:
    """sqrt of the sum of squares of every leaf of a pytree.

    >>> float(l2_norm({"a": np.array([3.0]), "b": 4.0}))
    5.0
    """
    leaves = tu.tree_leaves(tree)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree: Any, max_norm: Any) -> Any:
    """Scales a gradient pytree so its l2 norm is at most max_norm."""
    norm = l2_norm(grad_tree)

    def normalize(g):
        return jnp.where(norm < max_norm, g, g * (max_norm / norm))

    return tu.tree_map(normalize, grad_tree)


class JoinPoint:
    """Marks the boundary between two joined (nested) pytrees."""

    def __init__(self, subtree: Any) -> None:
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def unpack_optimizer_state(opt_state: OptimizerState) -> Any:
    """An OptimizerState as the parameter pytree with JoinPoint leaves holding each state."""
    states_flat, tree_def, subtree_defs = opt_state
    subtrees = [tu.tree_unflatten(d, f) for d, f in zip(subtree_defs, states_flat)]
    return tu.tree_unflatten(tree_def, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree: Any) -> OptimizerState:
    """The inverse of unpack_optimizer_state."""
    sentinels, tree_def = tu.tree_flatten(marked_pytree)
    if not all(isinstance(s, JoinPoint) for s in sentinels):
        raise NumbaxTypeError(
            "optimizers.pack_optimizer_state: marked_pytree has leaves that are not "
            "JoinPoints, expected the output of unpack_optimizer_state.")
    pairs = [tu.tree_flatten(s.subtree) for s in sentinels]
    return OptimizerState(tuple(p[0] for p in pairs), tree_def, tuple(p[1] for p in pairs))
