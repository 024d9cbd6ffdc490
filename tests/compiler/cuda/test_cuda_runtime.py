"""cuda_runtime's device bookkeeping without a GPU: a fake numba.cuda with two GPUs stands in
for the driver (per-device pools and constants, device scopes, the out-of-memory path), plus
JAX's committed-device rule on CPU Arrays. numba.cuda itself is never imported here."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax._src.array import Array, committed_device
from numbax._src.compiler.cuda.runtime import memory as rt
from numbax._src.devices import CpuDevice, CudaDevice


class FakeBuf:
    """A flat device buffer: its size, dtype, the device it was allocated on, host contents."""

    def __init__(self, size, dtype, device):
        self.size, self.dtype, self.device = size, np.dtype(dtype), device
        self.data = np.zeros(size, dtype)

    def copy_to_device(self, value):
        self.data[...] = np.asarray(value.data if isinstance(value, FakeBuf) else value)


class FakeDeallocations:
    def __init__(self):
        self.cleared = 0

    def clear(self):
        self.cleared += 1


class FakeCuda:
    """numba.cuda's surface that cuda_runtime uses; `fail` holds exceptions to raise from the
    next device_array calls, in order."""

    def __init__(self):
        self.fail: list[BaseException] = []
        self.allocs: list[tuple[int, int]] = []  # (device, size) of each attempt
        self.deallocations = FakeDeallocations()
        self.entered: list[int] = []

    def device_array(self, size, dtype):
        self.allocs.append((rt.current_device_id(), size))
        if self.fail:
            raise self.fail.pop(0)
        return FakeBuf(size, dtype, rt.current_device_id())

    def current_context(self):
        return self

    def gpu_context(self, device_id):
        cuda = self

        class Ctx:
            def __enter__(self):
                cuda.entered.append(device_id)

            def __exit__(self, *exc):
                cuda.entered.append(-device_id - 1)

        return Ctx()


OOM = Exception("[CUDA_ERROR_OUT_OF_MEMORY] Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY")


@pytest.fixture
def cuda(monkeypatch):
    fake = FakeCuda()
    monkeypatch.setattr(rt, "get_cuda", lambda: fake)
    monkeypatch.setattr(rt, "gpu_count", lambda: 2)
    monkeypatch.setattr(rt, "_gpu_context", fake.gpu_context)
    monkeypatch.setattr(rt, "_POOL", {})
    monkeypatch.setattr(rt, "_CONSTS", {})
    monkeypatch.setattr(rt, "_CONST_HOST", {})
    return fake


def test_on_device_enters_the_gpu_context_and_restores_the_current_device(cuda):
    assert rt.current_device_id() == 0
    with rt.on_device(1):
        assert rt.current_device_id() == 1
        with rt.on_device(0):
            assert rt.current_device_id() == 0
        assert rt.current_device_id() == 1
    assert rt.current_device_id() == 0
    assert cuda.entered == [1, 0, -1, -2]  # pushed and popped in order


def test_on_device_with_one_gpu_is_free(cuda, monkeypatch):
    monkeypatch.setattr(rt, "gpu_count", lambda: 1)
    with rt.on_device(0):
        assert rt.current_device_id() == 0
    assert cuda.entered == []


def test_device_scope_is_restored_on_error(cuda):
    with pytest.raises(KeyError), rt.on_device(1):
        raise KeyError("boom")
    assert rt.current_device_id() == 0 and cuda.entered == [1, -2]


def test_pool_is_per_device(cuda):
    with rt.on_device(0):
        a = rt.empty(4, np.float32)
    a_id = id(a)
    del a  # only the pool holds it now: free for reuse, but on GPU 0 only
    with rt.on_device(1):
        b = rt.empty(4, np.float32)
    assert b.device == 1 and id(b) != a_id
    with rt.on_device(0):
        c = rt.empty(4, np.float32)
    assert c.device == 0 and id(c) == a_id
    with rt.on_device(0):
        d = rt.empty(4, np.float32)  # c is alive: a new buffer
    assert id(d) != id(c) and d.device == 0
    assert sorted(k[0] for k in rt._POOL) == [0, 1]
    rt.clear_pool(0)
    assert [k[0] for k in rt._POOL] == [1]
    rt.clear_pool()
    assert rt._POOL == {}


def test_out_of_memory_frees_the_pool_and_retries_once(cuda):
    with rt.on_device(1):
        rt.empty(8, np.float64)  # pooled on GPU 1, free
    with rt.on_device(0):
        kept = rt.empty(8, np.float64)  # pooled on GPU 0, alive
    cuda.fail = [OOM]
    with rt.on_device(1):
        buf = rt.empty(1000, np.float32)
    assert buf.size == 1000 and buf.device == 1
    assert cuda.allocs[-2:] == [(1, 1000), (1, 1000)]  # one failure, one retry
    assert cuda.deallocations.cleared == 1
    assert all(k[0] != 1 or k[1] == 1000 for k in rt._POOL)  # GPU 1's old buffers forgotten
    assert (0, 8, np.dtype(np.float64).str) in rt._POOL  # GPU 0's pool untouched
    assert kept.size == 8


def test_out_of_memory_twice_names_bytes_shape_dtype_and_device(cuda):
    cuda.fail = [OOM, OOM]
    with pytest.raises(MemoryError) as info, rt.on_device(1):
        rt.to_device(np.zeros((2, 3), np.float32))
    msg = str(info.value)
    assert "24 bytes" in msg and "(2, 3)" in msg and "float32" in msg, msg
    assert "CudaDevice(id=1)" in msg and "smaller batches" in msg, msg
    assert info.value.__cause__ is OOM
    assert cuda.deallocations.cleared == 1 and len(cuda.allocs) == 2


def test_out_of_memory_in_a_driver_allocation_names_the_flat_size(cuda):
    cuda.fail = [OOM, OOM]
    with pytest.raises(MemoryError, match=r"4000 bytes \(shape \(1000,\), dtype float32\)"):
        rt.empty(1000, np.float32)
    assert rt.empty(3, np.float32).size == 3  # the runtime still works afterwards


def test_simulator_host_memory_error_counts_as_out_of_memory(cuda):
    cuda.fail = [MemoryError("Unable to allocate 4.00 PiB"), MemoryError("again")]
    with pytest.raises(MemoryError, match="out of device memory on CudaDevice"):
        rt.empty(1 << 50, np.float32)


def test_other_allocation_errors_pass_through_without_retry(cuda):
    err = RuntimeError("CUDA_ERROR_INVALID_VALUE")
    cuda.fail = [err]
    with pytest.raises(RuntimeError) as info:
        rt.empty(5, np.int32)
    assert info.value is err and len(cuda.allocs) == 1 and cuda.deallocations.cleared == 0


def test_constants_are_put_on_each_device_once(cuda):
    key = rt.register_const(np.arange(3.0))
    assert rt.register_const(np.arange(3.0)) == key
    with rt.on_device(0):
        c0 = rt.const(key)
        assert rt.const(key) is c0
    with rt.on_device(1):
        c1 = rt.const(key)
    assert (c0.device, c1.device) == (0, 1)
    np.testing.assert_array_equal(c1.data, np.arange(3.0))


def test_check_device_id_names_the_visible_gpus(cuda):
    rt.check_device_id(1, "device_put")
    with pytest.raises(ValueError, match=r"CudaDevice\(id=2\), expected one of the 2 visible"):
        rt.check_device_id(2, "device_put")


# ----------------------------------------------------------------------------- committed


def _placed(device):
    return Array._from_numpy(np.ones(3, np.float32), False, device)


def test_committed_device_follows_jax_rule():
    cpu0, gpu1 = CpuDevice(0), CudaDevice(1)
    free = numbax.numpy.ones(3)
    assert committed_device([free, np.ones(3), 2.0], "f") is None
    assert committed_device([free, _placed(gpu1), np.ones(3), _placed(gpu1)], "f") == gpu1
    with pytest.raises(ValueError) as info:
        committed_device([np.ones(2), _placed(gpu1), free, _placed(cpu0)], "jit(f)")
    msg = str(info.value)
    assert msg.startswith("jit(f): argument 1 (float32[3]) is committed to CudaDevice(id=1) "
                          "and argument 3 (float32[3]) to CpuDevice(id=0)"), msg
    assert "numbax.device_put" in msg


def test_device_put_without_a_device_leaves_values_uncommitted():
    x = numbax.device_put(np.arange(3.0))
    assert x._device is None and x.device == numbax.devices()[0]
    placed = numbax.device_put(np.arange(3.0), numbax.devices()[0])
    assert placed._device == CpuDevice(0)
    assert numbax.device_put(placed) is placed  # an Array keeps its placement
    np.testing.assert_array_equal(np.asarray(numbax.device_put(placed, None)), np.arange(3.0))
