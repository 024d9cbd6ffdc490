"""docs/automatic-vectorization.md: a 1-D convolution batched by hand, by vmap with in_axes /
out_axes, under jit, and a pairwise map of nested vmaps."""
from tests.compat.programs import program


@program("docs/automatic-vectorization.md")
def vmap_convolve():
    import jax
    import jax.numpy as jnp

    x = jnp.arange(5)
    w = jnp.array([2., 3., 4.])

    def convolve(x, w):
        output = []
        for i in range(1, len(x)-1):
            output.append(jnp.dot(x[i-1:i+2], w))
        return jnp.array(output)

    xs = jnp.stack([x, x])
    ws = jnp.stack([w, w])

    def manually_batched_convolve(xs, ws):
        output = []
        for i in range(xs.shape[0]):
            output.append(convolve(xs[i], ws[i]))
        return jnp.stack(output)

    def manually_vectorized_convolve(xs, ws):
        output = []
        for i in range(1, xs.shape[-1] - 1):
            output.append(jnp.sum(xs[:, i-1:i+2] * ws, axis=1))
        return jnp.stack(output, axis=1)

    auto_batch_convolve = jax.vmap(convolve)
    auto_batch_convolve_v2 = jax.vmap(convolve, in_axes=1, out_axes=1)
    xst = jnp.transpose(xs)
    wst = jnp.transpose(ws)
    batch_convolve_v3 = jax.vmap(convolve, in_axes=[0, None])
    jitted_batch_convolve = jax.jit(auto_batch_convolve)

    def pairwise(f, xs):
        return jax.vmap(lambda x: jax.vmap(lambda y: f(x, y))(xs))(xs)

    return {"single": convolve(x, w),
            "manual": manually_batched_convolve(xs, ws),
            "manual_vectorized": manually_vectorized_convolve(xs, ws),
            "vmap": auto_batch_convolve(xs, ws),
            "vmap_axes_1": auto_batch_convolve_v2(xst, wst),
            "vmap_none": batch_convolve_v3(xs, w),
            "jit_vmap": jitted_batch_convolve(xs, ws),
            "pairwise": pairwise(lambda a, b: jnp.sum((a - b) ** 2), ws * 1.5)}
