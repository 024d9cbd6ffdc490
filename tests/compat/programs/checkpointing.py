"""docs/gradient-checkpointing.md and docs/debugging.md: jax.checkpoint's gradients (plain,
nested, recursive), the residuals print_saved_residuals reports under checkpoint policies
and checkpoint_name, and jax.debug.print under jit / vmap / lax.map / grad."""
import contextlib
import io
import re

from tests.compat.programs import program


def _captured(fn, *args):
    """What fn prints to stdout (jax.debug.print, print_saved_residuals), as lines."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        out = fn(*args)
        if hasattr(out, "block_until_ready"):
            out.block_until_ready()
    # source locations ("from /path/file.py:84:12 (g)") depend on the checkout: dropped
    return out, [re.sub(r" from /\S+:\d+:\d+ \(.*\)$", "", line)
                 for line in buffer.getvalue().splitlines()]


@program("docs/gradient-checkpointing.md", rtol=1e-5, atol=1e-6)
def checkpoint_gradients():
    import jax
    import jax.numpy as jnp

    def g(W, x):
        y = jnp.dot(W, x)
        return jnp.sin(y)

    def f(W1, W2, W3, x):
        x = g(W1, x)
        x = g(W2, x)
        x = g(W3, x)
        return x

    def f2(W1, W2, W3, x):
        x = jax.checkpoint(g)(W1, x)
        x = jax.checkpoint(g)(W2, x)
        x = jax.checkpoint(g)(W3, x)
        return x

    W1 = jnp.ones((5, 4)) * 0.1
    W2 = jnp.ones((6, 5)) * 0.2
    W3 = jnp.ones((7, 6)) * 0.3
    x = jnp.ones(4)
    total = lambda f: (lambda *a: jnp.sum(f(*a)))
    out = {"plain": jax.grad(total(f), argnums=(0, 1, 2, 3))(W1, W2, W3, x),
           "checkpointed": jax.grad(total(f2), argnums=(0, 1, 2, 3))(W1, W2, W3, x),
           "jit": jax.jit(jax.grad(total(jax.checkpoint(f))))(W1, W2, W3, x)}

    def net(params, x):
        for W, b in params:
            x = jnp.maximum(jnp.dot(x, W) + b, 0.)
        return x

    params = [(jnp.array([[0.5, 0.5], [1., 1.]]), jnp.array([0.5, 0.5])),
              (jnp.array([[0.5, 0.5], [1., 1.]]), jnp.array([0.5, 0.5]))]
    out["net"] = jax.grad(lambda p, x: jnp.sum(jax.checkpoint(net)(p, x)))(
        params, jnp.array([1., -2.]))
    return out


@program("docs/gradient-checkpointing.md", rtol=1e-5, atol=1e-6)
def checkpoint_recursive():
    import jax
    import jax.numpy as jnp

    def recursive_checkpoint(funs):
        if len(funs) == 1:
            return funs[0]
        elif len(funs) == 2:
            f1, f2 = funs
            return lambda x: f1(f2(x))
        else:
            f1 = recursive_checkpoint(funs[:len(funs)//2])
            f2 = recursive_checkpoint(funs[len(funs)//2:])
            return lambda x: f1(jax.checkpoint(f2)(x))

    return {"recursive": [jax.grad(recursive_checkpoint([jnp.sin] * 8))(3.),
                          jax.grad(recursive_checkpoint([jnp.sin] * 16))(3.)]}


@program("docs/gradient-checkpointing.md",
         needs="jax.ad_checkpoint.print_saved_residuals (branch compat-api)")
def checkpoint_saved_residuals():
    import jax
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name, print_saved_residuals

    def g(W, x):
        y = jnp.dot(W, x)
        return jnp.sin(y)

    def f(W1, W2, W3, x):
        x = g(W1, x)
        x = g(W2, x)
        x = g(W3, x)
        return x

    def f2(W1, W2, W3, x):
        x = jax.checkpoint(g)(W1, x)
        x = jax.checkpoint(g)(W2, x)
        x = jax.checkpoint(g)(W3, x)
        return x

    W1 = jnp.ones((5, 4))
    W2 = jnp.ones((6, 5))
    W3 = jnp.ones((7, 6))
    x = jnp.ones(4)
    f3 = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)

    def f4(W1, W2, W3, x):
        x = checkpoint_name(g(W1, x), name='a')
        x = checkpoint_name(g(W2, x), name='b')
        x = checkpoint_name(g(W3, x), name='c')
        return x

    f4 = jax.checkpoint(f4, policy=jax.checkpoint_policies.save_only_these_names('a'))
    return {name: _captured(print_saved_residuals, fn, W1, W2, W3, x)[1]
            for name, fn in {"plain": f, "per_layer": f2, "dots": f3, "names": f4}.items()}


@program("docs/debugging.md", needs="jax.debug.print (branch compat-api)")
def debug_print_under_transforms():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def f(x):
        jax.debug.print("jax.debug.print(x) -> {x}", x=x)
        y = jnp.sin(x)
        jax.debug.print("jax.debug.print(y) -> {y}", y=y)
        return y

    def g(x):
        jax.debug.print("jax.debug.print(x) -> {}", x)
        y = jnp.sin(x)
        jax.debug.print("jax.debug.print(y) -> {}", y)
        return y

    def h(x):
        jax.debug.print("jax.debug.print(x) -> {}", x)
        return x ** 2

    @jax.jit
    def ordered(x, y):
        jax.debug.print("jax.debug.print(x) -> {}", x, ordered=True)
        jax.debug.print("jax.debug.print(y) -> {}", y, ordered=True)
        return x + y

    xs = jnp.arange(3.)
    out = {}
    for name, (fn, args) in {"jit": (f, (2.,)), "vmap": (jax.vmap(g), (xs,)),
                             "lax_map": (lambda xs: jax.lax.map(g, xs), (xs,)),
                             "grad": (jax.grad(h), (1.,)),
                             "ordered": (ordered, (1, 2))}.items():
        value, lines = _captured(fn, *args)
        lines = lines if name == "ordered" else sorted(lines)  # unordered prints: any order
        # the printed numbers compared as numbers (float32 sin may differ by an ulp)
        out[name] = [value, [[text, float(number)] for text, number in
                             (line.split(" -> ") for line in lines)]]
    return out
