"""Convolution (forward, input and kernel gradients), max pooling (forward and backward) and FFT
under jit, numbax against jax.jit: issue 18's shapes with NUMBAX_ASV_FULL=1, small ones else."""
import numpy as np

from .common import modules, put, ready, require, sizes, steady

DN = ("NHWC", "HWIO", "NHWC")


def _lax(impl):
    if impl == "numbax":
        from numbax import lax
    else:
        from jax import lax
    return lax


def _image(n, hw, c, seed=0):
    return np.random.default_rng(seed).normal(size=(n, hw, hw, c)).astype(np.float32)


class Conv2D:
    params = (["numbax", "jax"], sizes([(4, 14, 16)], [(32, 56, 64)]))
    param_names = ["impl", "shape"]
    timeout = 300

    def setup(self, impl, shape):
        require(impl, ("numbax", "jax"))
        n, hw, c = shape
        lax, (jnp, jit, grad, _) = _lax(impl), modules(impl)
        w = (np.random.default_rng(1).normal(size=(3, 3, c, c)) / np.sqrt(9 * c)).astype(
            np.float32)
        self.args = put(impl, (_image(n, hw, c), w))

        def fwd(x, w):
            return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DN)

        self.fwd = jit(fwd)
        self.grads = jit(grad(lambda x, w: jnp.sum(fwd(x, w) ** 2), argnums=(0, 1)))
        steady(impl, lambda: ready(self.fwd(*self.args)))
        steady(impl, lambda: ready(self.grads(*self.args)))

    def time_forward(self, impl, shape):
        ready(self.fwd(*self.args))

    def time_input_and_kernel_gradients(self, impl, shape):
        ready(self.grads(*self.args))


class MaxPool:
    params = (["numbax", "jax"], sizes([(4, 14, 16)], [(32, 56, 64)]))
    param_names = ["impl", "shape"]
    timeout = 300

    def setup(self, impl, shape):
        require(impl, ("numbax", "jax"))
        lax, (jnp, jit, grad, _) = _lax(impl), modules(impl)
        self.args = put(impl, (_image(*shape),))

        def pool(x):
            return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

        self.fwd = jit(pool)
        self.bwd = jit(grad(lambda x: jnp.sum(pool(x) ** 2)))
        steady(impl, lambda: ready(self.fwd(*self.args)))
        steady(impl, lambda: ready(self.bwd(*self.args)))

    def time_forward(self, impl, shape):
        ready(self.fwd(*self.args))

    def time_forward_and_backward(self, impl, shape):
        ready(self.bwd(*self.args))


class FFT:
    params = (["numbax", "jax"], sizes([14], [20]))
    param_names = ["impl", "log2n"]
    timeout = 300

    def setup(self, impl, log2n):
        require(impl, ("numbax", "jax"))
        jnp, jit = modules(impl)[:2]
        rng = np.random.default_rng(0)
        n, side = 1 << log2n, 1 << (log2n // 2)
        z = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(np.complex64)
        self.z, self.img = put(impl, (z, rng.normal(size=(side, side)).astype(np.float32)))
        self.fft, self.rfft2 = jit(jnp.fft.fft), jit(jnp.fft.rfft2)
        steady(impl, lambda: ready(self.fft(self.z)))
        steady(impl, lambda: ready(self.rfft2(self.img)))

    def time_fft_complex64(self, impl, log2n):
        ready(self.fft(self.z))

    def time_rfft2_float32(self, impl, log2n):
        ready(self.rfft2(self.img))
