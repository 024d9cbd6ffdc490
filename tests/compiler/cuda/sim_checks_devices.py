"""Device checks under the CUDA simulator: JAX's committed-device rule in jit and eager ops,
device_put/get round trips, out of memory, and several GPUs (the simulator has one, so a second
is faked by patching cuda_runtime's device count and context: the bookkeeping is what runs)."""
from __future__ import annotations

import contextlib

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax._src.array import Array, GpuArray
from numbax._src.compiler.cuda.runtime import memory as cuda_runtime
from numbax._src.devices import CpuDevice, CudaDevice
from tests.compiler.cuda.sim_checks import check, close, gjit


def _raises(fn, *needles, kind=ValueError) -> str:
    try:
        fn()
    except kind as e:
        for n in needles:
            assert n in str(e), (n, str(e))
        return str(e)
    raise AssertionError(f"no {kind.__name__} raised")


@check
def devices_mixing_in_jit():
    gpu, cpu = numbax.devices("gpu")[0], numbax.devices("cpu")[0]
    x = np.arange(3.0)
    d = numbax.device_put(x, gpu)
    c = numbax.device_put(x + 1, cpu)
    f = numbax.jit(lambda a, b: a * b)
    msg = _raises(lambda: f(d, c), "jit(<lambda>): argument leaf 0 (float64[3]) is committed to "
                  "CudaDevice(id=0) and argument leaf 1 (float64[3]) to CpuDevice(id=0)",
                  "numbax.device_put")
    _raises(lambda: f(c, d), "argument leaf 0", "CpuDevice(id=0)", "argument leaf 1",
            "CudaDevice(id=0)")
    _raises(lambda: gjit(lambda a, b: a * b)(d, c), "CpuDevice(id=0)")  # backend="gpu" too
    _raises(lambda: f({"p": [d]}, c), "argument leaf 0", "argument leaf 1")  # pytrees
    assert "Move them" in msg
    # nothing half-done: the arguments are intact, and uncommitted values move to the GPU
    np.testing.assert_array_equal(np.asarray(c), x + 1)
    for other in (x + 1, jnp.asarray(x + 1), 2.0, numbax.device_put(x + 1)):
        y = f(d, other)
        close(y, x * np.asarray(other), rtol=0)
        assert y.device == gpu
    close(f(d, numbax.device_put(c, gpu)), x * (x + 1), rtol=0)
    # committed CPU arguments alone stay on the CPU; backend="gpu" moves them
    assert not isinstance(f(c, c), GpuArray)
    close(gjit(lambda a: a + 1.0)(c), x + 2, rtol=0)


@check
def devices_mixing_in_eager_ops():
    gpu, cpu = numbax.devices("gpu")[0], numbax.devices("cpu")[0]
    x = np.arange(4.0).reshape(2, 2)
    d = numbax.device_put(x, gpu)
    c = numbax.device_put(x, cpu)
    _raises(lambda: d + c, "add: operand 0 (float64[2, 2]) is committed to CudaDevice(id=0) "
            "and operand 1 (float64[2, 2]) to CpuDevice(id=0)")
    _raises(lambda: jnp.dot(c, d), "CpuDevice(id=0)", "CudaDevice(id=0)")
    np.testing.assert_array_equal(np.asarray(c), x)
    for other in (x, jnp.asarray(x), 3.0, numbax.device_put(x), jnp.ones(2)):
        y = d + other
        close(y, x + np.asarray(other), rtol=0)
        assert y.device == gpu
    close(jnp.where(d > 1.0, d, jnp.zeros_like(x)), np.where(x > 1, x, 0.0), rtol=0)
    z = c + c  # committed CPU only: the CPU path, unchanged
    assert not isinstance(z, GpuArray)
    np.testing.assert_array_equal(np.asarray(z), 2 * x)


@check
def devices_round_trips():
    gpu, cpu = numbax.devices("gpu")[0], numbax.devices("cpu")[0]
    rng = np.random.default_rng(1)
    values = [rng.standard_normal((3, 4)).astype(np.float32), np.arange(6, dtype=np.int64),
              np.array([True, False, True]), np.zeros((0, 3)), np.float64(2.5),
              np.arange(12.0).reshape(3, 4)[:, ::2],  # non-contiguous
              np.broadcast_to(np.arange(3, dtype=np.int32), (2, 3))]  # zero strides
    for v in values:
        d = numbax.device_put(v, gpu)
        assert isinstance(d, GpuArray) and d.device == gpu
        assert (d.shape, d.dtype) == (np.shape(v), np.asarray(v).dtype), (d.shape, d.dtype)
        np.testing.assert_array_equal(numbax.device_get(d), v)
        back = numbax.device_put(d, cpu)
        assert type(back) is Array and back.device == cpu
        again = numbax.device_put(back, gpu)
        np.testing.assert_array_equal(np.asarray(again), v)
        assert numbax.device_put(d, gpu) is d and numbax.device_put(d) is d
    w = jnp.float32(1.5)  # a weak scalar keeps its weak type on the GPU
    s = numbax.device_put(2.0, gpu)
    assert s.weak_type and s.dtype == np.float64
    assert (numbax.jit(lambda a, b: a * b)(numbax.device_put(values[0], gpu), s).dtype
            == np.float32)
    tree = {"a": values[0], "b": [w, values[1]]}
    placed = numbax.device_put(tree, gpu)
    assert all(isinstance(leaf, GpuArray) for leaf in numbax.tree_util.tree_leaves(placed))
    got = numbax.device_get(placed)
    np.testing.assert_array_equal(got["b"][1], values[1])
    assert float(got["b"][0]) == 1.5
    x = np.ones(3)
    put = numbax.device_put(x, gpu)
    x[0] = 7.0  # the device copy does not see later writes to the numpy input
    np.testing.assert_array_equal(np.asarray(put), np.ones(3))


@check
def devices_simulator_gpus():
    from numba import cuda

    gpus = numbax.devices("gpu")
    assert gpus == [CudaDevice(i) for i in range(len(cuda.gpus))] == numbax.devices("cuda")
    assert numbax.device_count("gpu") == len(cuda.gpus)
    assert gpus[0].platform == "gpu" and gpus[0] != CpuDevice(0)
    _raises(lambda: numbax.device_put(np.ones(2), CudaDevice(len(cuda.gpus))),
            f"CudaDevice(id={len(cuda.gpus)}), expected one of the {len(cuda.gpus)} visible")


@check
def devices_out_of_memory():
    gpu = numbax.devices("gpu")[0]
    n = 1 << 48  # 2**50 bytes of float32: more than any device (and the simulator's host) has
    huge = np.broadcast_to(np.float32(0), (n,))
    _raises(lambda: numbax.device_put(huge, gpu), f"{4 * n} bytes", f"({n},)", "float32",
            "CudaDevice(id=0)", kind=MemoryError)
    _raises(lambda: gjit(lambda: jnp.zeros((n,), jnp.float32))(), f"{4 * n} bytes",
            "CudaDevice(id=0)", kind=MemoryError)
    # the backend still works afterwards, pooled buffers included
    close(gjit(lambda a: a * 2.0 + 1.0)(np.arange(5.0)), np.arange(5.0) * 2 + 1, rtol=0)
    close(numbax.device_put(np.arange(3.0), gpu) + 1.0, np.arange(3.0) + 1, rtol=0)


@contextlib.contextmanager
def _two_gpus():
    """The simulator's one GPU seen as two: device counting and context entry are patched,
    every other line (pools, consts, caches, dispatch, errors) is the real code."""
    entered = []

    class Ctx:
        def __init__(self, i):
            self.i = i

        def __enter__(self):
            entered.append(self.i)

        def __exit__(self, *exc):
            pass

    saved = cuda_runtime.gpu_count, cuda_runtime._gpu_context
    cuda_runtime.gpu_count = lambda: 2
    cuda_runtime._gpu_context = Ctx
    try:
        yield entered
    finally:
        cuda_runtime.gpu_count, cuda_runtime._gpu_context = saved
        cuda_runtime.clear_pool(1)


@check
def devices_second_gpu_bookkeeping():
    x = np.arange(6.0).reshape(2, 3)
    with _two_gpus() as entered:
        g0, g1 = numbax.devices("gpu")
        assert (g0, g1) == (CudaDevice(0), CudaDevice(1))
        d1 = numbax.device_put(x, g1)
        assert d1.device == g1 and entered == [1]
        f = numbax.jit(lambda a: jnp.sin(a) * 2.0 + a.sum())
        want = np.sin(x) * 2 + x.sum()
        y = f(d1)
        close(y, want, rtol=1e-12)
        assert y.device == g1
        assert any(k[0] == 1 for k in cuda_runtime._POOL), "no buffer pooled for GPU 1"
        del entered[:]
        close(f(d1), want, rtol=1e-12)  # the fast path enters GPU 1 too
        assert entered and set(entered) <= {1}, entered
        d0 = numbax.device_put(x, g0)
        y0 = f(d0)
        assert y0.device == g0
        assert {key[-1] for key in f._cache} == {g0, g1}  # one executable per device
        _raises(lambda: numbax.jit(lambda a, b: a + b)(d0, d1), "CudaDevice(id=0)",
                "CudaDevice(id=1)")
        _raises(lambda: d1 - d0, "sub: operand 0", "CudaDevice(id=1)", "CudaDevice(id=0)")
        e = jnp.exp(d1) + x  # eager ops and uncommitted numpy operands stay on GPU 1
        assert e.device == g1
        close(e, np.exp(x) + x, rtol=1e-12)
        moved = numbax.device_put(d0, g1)  # another GPU: a fresh buffer there
        assert moved.device == g1 and moved._dbuf is not d0._dbuf
        np.testing.assert_array_equal(np.asarray(moved), x)
        # a host-driven loop: a sub-jaxpr constant is put on each device it runs on
        k = np.array([1.0, 2.0, 3.0])

        def loop(a):
            return numbax.lax.fori_loop(0, 3, lambda i, c: c + jnp.asarray(k), a)

        close(numbax.jit(loop)(numbax.device_put(np.zeros(3), g1)), 3 * k, rtol=0)
        close(numbax.jit(loop)(numbax.device_put(np.zeros(3), g0)), 3 * k, rtol=0)
        compiled = f.lower(d1).compile()  # lower/compile: runs where it was compiled
        close(compiled(d1), want, rtol=1e-12)
        assert compiled(x).device == g1
        _raises(lambda: compiled(d0), "compiled for CudaDevice(id=1)")
        close(gjit(lambda a: a + 1.0)(x), x + 1, rtol=0)  # backend="gpu": GPU 0
        assert gjit(lambda a: a + 1.0)(x).device == g0
