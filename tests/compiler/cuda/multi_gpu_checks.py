"""Several GPUs on a real machine: where buffers live, jit and eager ops on GPU 1, transfers
between GPUs, JAX's committed-device errors, and out of memory (numpy/the CPU backend is truth).

Run `PYTHONPATH=. python tests/compiler/cuda/multi_gpu_checks.py [names...]` on a machine with
>= 2 GPUs: one JSON line per check ({"check", "ok", "error"?, "info"?}), exit status 1 when one
fails.
With fewer than 2 GPUs (or no numba-cuda) it prints one {"skipped": why} line and exits 0.
`--simulate` (with NUMBA_ENABLE_CUDASIM=1) fakes a second GPU on the simulator's one, to dry-run
the script's logic without a GPU; checks that need real device memory are skipped there."""
from __future__ import annotations

import ctypes
import json
import sys
import threading
import traceback

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax._src.array import GpuArray
from numbax._src.compiler.cuda.runtime import memory as rt

CHECKS = {}
SIM = "--simulate" in sys.argv
RNG = np.random.default_rng(0)


def check(fn):
    CHECKS[fn.__name__] = fn
    return fn


class Skip(Exception):
    pass


# ----------------------------------------------------------------------------- helpers


_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9


def pointer_device(buf) -> int | None:
    """The GPU a device buffer's memory is on, asked of the CUDA driver (cuPointerGetAttribute,
    DEVICE_ORDINAL); numba's record of the buffer's context when libcuda cannot be loaded;
    None under the simulator."""
    if SIM or buf.size == 0:  # an empty buffer has no memory
        return None
    ptr = buf.__cuda_array_interface__["data"][0]
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        ordinal = ctypes.c_int(-1)
        err = lib.cuPointerGetAttribute(ctypes.byref(ordinal),
                                        _CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ctypes.c_uint64(ptr))
        if err == 0:
            return ordinal.value
    except OSError:
        pass
    return int(buf.gpu_data.context.device.id)


def on(x, device) -> None:
    """x is a GpuArray committed to `device` whose memory really is on that GPU."""
    assert isinstance(x, GpuArray), type(x)
    assert x.device == device, (x.device, device)
    where = pointer_device(x._dbuf)
    assert where in (None, device.id), f"{device} array's memory is on GPU {where}"


def same(got, want, rtol=1e-6) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype,
                                                                 want.shape, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)


def raises(fn, *needles, kind=ValueError) -> str:
    try:
        fn()
    except kind as e:
        for n in needles:
            assert n in str(e), (n, str(e))
        return str(e)
    raise AssertionError(f"no {kind.__name__} raised")


def gpus():
    return numbax.devices("gpu")


# ----------------------------------------------------------------------------- checks


@check
def gpu_listing():
    from numba import cuda

    devs = gpus()
    n = 2 if SIM else len(cuda.gpus)
    assert [repr(d) for d in devs] == [f"CudaDevice(id={i})" for i in range(n)], devs
    assert numbax.devices("cuda") == devs and numbax.device_count("gpu") == n
    return {"gpus": n, "kinds": [d.device_kind for d in devs]}


@check
def put_and_get_on_gpu1():
    g1 = gpus()[1]
    for v in (RNG.standard_normal((64, 33)).astype(np.float32), np.arange(100, dtype=np.int64),
              np.array([True, False]), np.zeros((0, 4)), np.float64(3.5),
              np.arange(24.0).reshape(4, 6)[:, ::3]):
        d = numbax.device_put(v, g1)
        on(d, g1)
        np.testing.assert_array_equal(numbax.device_get(d), v)
        np.testing.assert_array_equal(np.asarray(d), v)
        assert d.block_until_ready() is d
        assert numbax.device_put(d, g1) is d


@check
def transfer_between_gpus():
    g0, g1 = gpus()[:2]
    x = RNG.standard_normal((300, 7))
    d0 = numbax.device_put(x, g0)
    d1 = numbax.device_put(d0, g1)
    on(d0, g0)
    on(d1, g1)
    back = numbax.device_put(d1, g0)
    on(back, g0)
    for a in (d1, back):
        np.testing.assert_array_equal(np.asarray(a), x)
    c = numbax.device_put(d1, numbax.devices("cpu")[0])
    assert not isinstance(c, GpuArray)
    np.testing.assert_array_equal(np.asarray(c), x)
    cp = d1.copy()
    on(cp, g1)
    np.testing.assert_array_equal(np.asarray(cp), x)


def _model(w, b, x):
    h = jnp.tanh(x @ w + b)
    return jnp.sum(jax_softmax(h) * h, axis=-1), jnp.max(h)


def jax_softmax(h):
    e = jnp.exp(h - jnp.max(h, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


@check
def jit_on_gpu1():
    g0, g1 = gpus()[:2]
    w = RNG.standard_normal((16, 8)).astype(np.float32)
    b = RNG.standard_normal(8).astype(np.float32)
    x = RNG.standard_normal((32, 16)).astype(np.float32)
    want = numbax.jit(_model, backend="cpu")(w, b, x)
    f = numbax.jit(_model)
    for _ in range(3):  # the first call compiles; later ones take the fast path
        for g in (g1, g0, g1):  # interleaved: kernels load into each GPU's context
            outs = f(*numbax.device_put((w, b, x), g))
            for o, ref in zip(outs, want, strict=True):
                on(o, g)
                same(o, ref, rtol=1e-4)
    y = f(*numbax.device_put((w, b), g1), x)  # a numpy argument moves to GPU 1
    on(y[0], g1)
    same(y[0], want[0], rtol=1e-4)


@check
def control_flow_on_gpu1():
    g1 = gpus()[1]
    k = np.linspace(0.5, 1.5, 5)

    def f(a):
        c = numbax.lax.fori_loop(0, 4, lambda i, c: c * 0.5 + jnp.asarray(k), a)
        return numbax.lax.cond(jnp.sum(c) > 0, lambda v: v + 1.0, lambda v: v - 1.0, c)

    a = RNG.standard_normal(5)
    want = numbax.jit(f, backend="cpu")(a)
    for g in (g1, gpus()[0], g1):
        r = numbax.jit(f)(numbax.device_put(a, g))
        on(r, g)
        same(r, want, rtol=1e-12)


@check
def eager_ops_on_gpu1():
    g1 = gpus()[1]
    x = RNG.standard_normal((6, 5))
    d = numbax.device_put(x, g1)
    for y, ref in ((jnp.sin(d) * 2.0 + 1.0, np.sin(x) * 2 + 1), (d @ d.T, x @ x.T),
                   (jnp.sum(d, axis=0), x.sum(axis=0)), (d + x, 2 * x),
                   (jnp.sort(d, axis=1), np.sort(x, axis=1)), (d[1:4, ::2], x[1:4, ::2])):
        on(y, g1)
        same(y, ref, rtol=1e-12)
    g = numbax.grad(lambda v: jnp.sum(jnp.tanh(v) ** 2))(d)
    same(g, 2 * np.tanh(x) / np.cosh(x) ** 2, rtol=1e-10)


@check
def pool_is_per_device():
    g0, g1 = gpus()[:2]
    f = numbax.jit(lambda a: jnp.exp(a) * 2.0 + a)
    x = np.arange(257.0)
    for g in (g0, g1, g0, g1):
        same(f(numbax.device_put(x, g)), np.exp(x) * 2 + x, rtol=1e-12)
    devices_in_pool = {key[0] for key in rt._POOL if rt._POOL[key]}
    assert {0, 1} <= devices_in_pool, devices_in_pool
    if not SIM:
        for key, bufs in rt._POOL.items():
            for buf in bufs:
                assert pointer_device(buf) in (None, key[0]), (key, pointer_device(buf))


@check
def mixing_devices_errors():
    g0, g1 = gpus()[:2]
    cpu = numbax.devices("cpu")[0]
    x = np.arange(4.0)
    d0, d1, c = numbax.device_put(x, g0), numbax.device_put(x, g1), numbax.device_put(x, cpu)
    add = numbax.jit(lambda a, b: a + b)
    raises(lambda: add(d0, d1), "argument leaf 0", "CudaDevice(id=0)", "argument leaf 1",
           "CudaDevice(id=1)", "numbax.device_put")
    raises(lambda: add(d1, c), "CudaDevice(id=1)", "CpuDevice(id=0)")
    raises(lambda: d1 * d0, "mul: operand 0", "CudaDevice(id=1)", "CudaDevice(id=0)")
    raises(lambda: c - d1, "CpuDevice(id=0)", "CudaDevice(id=1)")
    for a in (d0, d1, c):  # nothing half-done
        np.testing.assert_array_equal(np.asarray(a), x)
    for other in (x, jnp.asarray(x), 1.5):  # uncommitted values move to GPU 1
        r = add(d1, other)
        on(r, g1)
        same(r, x + np.asarray(other))
        e = d1 * other
        on(e, g1)
        same(e, x * np.asarray(other))


@check
def out_of_memory():
    g0, g1 = gpus()[:2]
    n = 1 << 48  # float32: 2**50 bytes, more than any GPU has
    info = {}
    info["jit"] = raises(lambda: numbax.jit(lambda: jnp.zeros((n,), jnp.float32),
                                            backend="gpu")(),
                         f"{4 * n} bytes", "float32", "CudaDevice(id=0)", kind=MemoryError)
    huge = np.broadcast_to(np.float32(1), (n,))
    info["device_put"] = raises(lambda: numbax.device_put(huge, g1), f"{4 * n} bytes",
                                f"({n},)", "CudaDevice(id=1)", kind=MemoryError)
    x = np.arange(1000.0)
    for g in (g0, g1):  # both GPUs still work afterwards
        r = numbax.jit(lambda a: a * 2.0 + 1.0)(numbax.device_put(x, g))
        on(r, g)
        same(r, x * 2 + 1)
    return info


@check
def out_of_memory_retry_frees_the_pool():
    """Free pooled buffers fill GPU 1; an allocation that fits only once they are gone
    succeeds (the pool is dropped and the allocation retried)."""
    if SIM:
        raise Skip("needs real device memory")
    cuda = rt.get_cuda()
    with rt.on_device(1):
        free, total = cuda.current_context().get_memory_info()
        chunk = int(free * 0.11)
        held = [rt.empty(chunk, np.uint8) for _ in range(8)]  # 8 distinct pooled buffers
        del held  # free for reuse, still allocated
        free_after, _ = cuda.current_context().get_memory_info()
        big = rt.empty(int(free * 0.5), np.uint8)
        ok = big.size == int(free * 0.5) and pointer_device(big) == 1
        still_pooled = [k for k in rt._POOL if k[0] == 1 and k[1] == chunk and rt._POOL[k]]
        del big
        rt.clear_pool(1)
    assert ok and not still_pooled, (ok, still_pooled)
    return {"free_gb": round(free / 1e9, 1), "free_with_pool_gb": round(free_after / 1e9, 1),
            "asked_gb": round(free * 0.5 / 1e9, 1)}


@check
def threads_drive_two_gpus():
    if SIM:
        raise Skip("the simulator runs one kernel at a time")
    g0, g1 = gpus()[:2]
    f = numbax.jit(lambda a: jnp.cumsum(jnp.sin(a)) + jnp.sum(a))
    x = RNG.standard_normal(999)
    want = np.asarray(numbax.jit(f.fun, backend="cpu")(x))
    for g in (g0, g1):  # compiled (and loaded into each context) before the threads start
        f(numbax.device_put(x, g))
    errors = []

    def work(g):
        try:
            d = numbax.device_put(x, g)
            for _ in range(20):
                r = f(d)
            on(r, g)
            same(r, want, rtol=1e-10)
        except Exception:  # noqa: BLE001 - reported by the main thread
            errors.append(traceback.format_exc()[-1500:])

    threads = [threading.Thread(target=work, args=(g,)) for g in (g0, g1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


@check
def cuda_array_interface_on_gpu1():
    try:
        import cupy
    except ImportError:
        raise Skip("cupy is not installed") from None
    if SIM:
        raise Skip("cupy needs a real GPU")
    g1 = gpus()[1]
    with cupy.cuda.Device(1):
        c = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)
        cupy.cuda.runtime.deviceSynchronize()
    d = numbax.device_put(c, g1)  # zero-copy view of CuPy's buffer
    on(d, g1)
    same(d, np.arange(12, dtype=np.float32).reshape(3, 4))
    r = numbax.jit(lambda a: a * 3.0)(d)
    on(r, g1)
    with cupy.cuda.Device(1):
        back = cupy.asarray(r)  # numbax's buffer seen by CuPy
        assert back.device.id == 1
        same(cupy.asnumpy(back), np.arange(12, dtype=np.float32).reshape(3, 4) * 3)


# ----------------------------------------------------------------------------- main


def _fake_second_gpu() -> None:
    """--simulate: the simulator's GPU seen as two (device count and context entry patched)."""
    import contextlib

    rt.gpu_count = lambda: 2
    rt._gpu_context = lambda i: contextlib.nullcontext()


def main(names: list[str]) -> int:
    if SIM:
        _fake_second_gpu()
    try:
        n = len(gpus())
    except RuntimeError as e:
        print(json.dumps({"skipped": f"no GPU backend: {e}"}))
        return 0
    if n < 2:
        print(json.dumps({"skipped": f"needs 2 GPUs, found {n}"}))
        return 0
    failed = 0
    for name in names or list(CHECKS):
        result = {"check": name}
        try:
            info = CHECKS[name]()
            result["ok"] = True
            if info:
                result["info"] = info
        except Skip as s:
            result.update(ok=True, skipped=str(s))
        except Exception:  # noqa: BLE001 - reported, then the next check runs
            result.update(ok=False, error=traceback.format_exc()[-3000:])
            failed += 1
        print(json.dumps(result), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main([a for a in sys.argv[1:] if not a.startswith("--")]))
