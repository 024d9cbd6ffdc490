"""Checkpoint policies and print_saved_residuals, shared by make_api_reference.py (run
with JAX) and tests/test_checkpoint.py (numbax): each program takes a namespace holding `jax`,
`jnp`, `ad_checkpoint` and returns the residual lines printed plus gradients."""
import contextlib
import io
import os

import numpy as np


def _residuals(m, f, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        m.ad_checkpoint.print_saved_residuals(f, *args)
    # the source paths differ between checkouts: keep the file's name
    return out.getvalue().replace(os.path.dirname(__file__) + os.sep, "")


def _mlp(m):
    jnp, name = m.jnp, m.ad_checkpoint.checkpoint_name

    def f(W, x):
        a = jnp.sin(W @ x)
        b = name(jnp.cos(a), "cosa")
        c = name(jnp.exp(W @ b), "expb")
        return jnp.sum(c * a)
    return f


def _batched(m):
    jnp = m.jnp

    def f(A, B):
        C = jnp.einsum("bij,bjk->bik", A, B)
        return jnp.sum(jnp.sin(C @ jnp.swapaxes(B, 1, 2)))
    return f


W = np.linspace(-0.5, 0.5, 9).reshape(3, 3)
X = np.linspace(0.1, 0.6, 6).reshape(3, 2)
A = np.linspace(-1.0, 1.0, 24).reshape(2, 3, 4)
B = np.linspace(0.2, 1.2, 24).reshape(2, 4, 3)


def _policies(m):
    cp = m.jax.checkpoint_policies
    return {
        "default": None,
        "nothing": cp.nothing_saveable,
        "everything": cp.everything_saveable,
        "dots": cp.dots_saveable,
        "checkpoint_dots": cp.checkpoint_dots,
        "dots_no_batch": cp.dots_with_no_batch_dims_saveable,
        "names": cp.save_only_these_names("cosa"),
        "names_but": cp.save_any_names_but_these("cosa"),
        "anything_except": cp.save_anything_except_these_names("cosa"),
        "both": cp.save_from_both_policies(cp.dots_saveable, cp.save_only_these_names("expb")),
        "offload_dots": cp.offload_dot_with_no_batch_dims("device", "pinned_host"),
        "save_and_offload": cp.save_and_offload_only_these_names(
            names_which_can_be_saved=["cosa"], names_which_can_be_offloaded=["expb"],
            offload_src="device", offload_dst="pinned_host"),
    }


def mlp_policies(m):
    f = _mlp(m)
    out = {}
    for key, policy in _policies(m).items():
        g = m.jax.checkpoint(f, policy=policy)
        grads = m.jax.grad(g, argnums=(0, 1))(W, X)
        out[key] = {"residuals": _residuals(m, g, W, X),
                    "grads": [np.asarray(v).tolist() for v in grads]}
    return out


def batched_dot_policies(m):
    f = _batched(m)
    cp = m.jax.checkpoint_policies
    out = {}
    for key, policy in (("dots", cp.dots_saveable), ("dots_no_batch",
                                                     cp.dots_with_no_batch_dims_saveable)):
        g = m.jax.checkpoint(f, policy=policy)
        out[key] = {"residuals": _residuals(m, g, A, B),
                    "grads": np.asarray(m.jax.grad(g)(A, B)).tolist()}
    return out


def plain_and_arguments(m):
    jnp = m.jnp
    c = jnp.arange(3.0)

    def f(params, x, *rest, scale=1.0):
        return jnp.sum(jnp.sin(params["w"] * x) * rest[0]) * scale

    return {"pytree_args": _residuals(m, f, {"w": jnp.ones(2)}, jnp.ones(2), 3.0),
            "literal": _residuals(m, lambda x: jnp.sin(x) * 2.0, 1.0),
            "constant": _residuals(m, lambda x: jnp.sum(jnp.sin(x) * c), jnp.ones(3)),
            "plain_mlp": _residuals(m, _mlp(m), W, X)}


def nested_checkpoints(m):
    jnp = m.jnp
    cp = m.jax.checkpoint_policies

    def inner(x):
        return jnp.sin(jnp.sin(x))

    def outer(x):
        y = m.jax.checkpoint(inner)(x)
        return jnp.sum(jnp.cos(y) * m.jax.checkpoint(inner, policy=cp.everything_saveable)(y))

    x = np.linspace(0.1, 0.9, 4)
    return {"residuals": _residuals(m, m.jax.checkpoint(outer), x),
            "grad": np.asarray(m.jax.grad(m.jax.checkpoint(outer))(x)).tolist(),
            "jit_grad": np.asarray(m.jax.jit(m.jax.grad(outer))(x)).tolist()}


PROGRAMS = {f.__name__: f for f in (mlp_policies, batched_dot_policies, plain_and_arguments,
                                     nested_checkpoints)}
