"""cuda_launch.launcher against a fake numba-cuda dispatcher: the first two launches go
through `dispatcher[grid, block](*args)` (the second recording how it calls the overload's
`launch`), later ones call that `launch` directly with the recorded arguments, unless the
argument types differ, several overloads have them, the direct call is rejected, or FAST is
off."""
from __future__ import annotations

import ctypes
import sys
import types

import pytest

from numbax._src.compiler.cuda.runtime import launch as cuda_launch

STREAM = object()  # what the fake "ordinary path" passes as the stream


class _Kernel:
    def __init__(self, types) -> None:
        self.argument_types = types
        self.calls = []
        self.reject_direct = False
        self.in_ordinary = False

    def launch(self, args, griddim, blockdim, stream, sharedmem):
        if self.reject_direct and not self.in_ordinary:
            raise TypeError("Stream expected")  # rejected before anything launches
        self.calls.append((args, griddim, blockdim, stream, sharedmem))


class _Dispatcher:
    def __init__(self, n_overloads: int = 1, types=("f32[:]", "f32[:]"),
                 other_types=None) -> None:
        self.overloads = {}
        self.kernels = [_Kernel(types) for _ in range(n_overloads)]
        if other_types is not None:
            self.kernels.append(_Kernel(other_types))
        self.slow = 0

    def typeof_pyval(self, value):
        return "f32[:]" if isinstance(value, float) else "i64[:]"

    def __getitem__(self, config):
        def run(*args):  # compiles on the first call, then launches like numba-cuda's call
            self.slow += 1
            for q, k in enumerate(self.kernels):
                self.overloads[q] = k
            wanted = tuple(self.typeof_pyval(a) for a in args)
            k = next((k for k in self.kernels if tuple(k.argument_types) == wanted),
                     self.kernels[0])
            k.in_ordinary = True
            k.launch(args, ("grid", config[0]), ("block", config[1]), STREAM, 0)
            k.in_ordinary = False
        return run


@pytest.fixture(autouse=True)
def _one_gpu(monkeypatch):
    monkeypatch.setattr(cuda_launch.cuda_runtime, "gpu_count", lambda: 1)


def test_ordinary_twice_then_direct_with_recorded_arguments():
    d = _Dispatcher()
    go = cuda_launch.launcher(d, (4, 2), 32)
    for q in range(5):
        go(float(q), 2.0)
    assert d.slow == 2
    assert [c[0] for c in d.kernels[0].calls] == [(float(q), 2.0) for q in range(5)]
    assert all(c[1:] == (("grid", (4, 2)), ("block", 32), STREAM, 0)
               for c in d.kernels[0].calls)
    assert "launch" not in vars(d.kernels[0])  # the recorder is gone


def test_mismatched_types_or_several_overloads_stay_ordinary():
    d = _Dispatcher()
    go = cuda_launch.launcher(d, 1, 32)
    for _ in range(4):
        go(1, 2)  # typed i64[:], the overload takes f32[:]
    assert d.slow == 4
    d2 = _Dispatcher(n_overloads=2)
    go2 = cuda_launch.launcher(d2, 1, 32)
    for _ in range(4):
        go2(1.0, 2.0)
    assert d2.slow == 4


def test_overloads_of_other_types_do_not_keep_a_launcher_ordinary():
    # one kernel serving float32 and int64 buffers (graphs.py's copies): each launcher goes
    # direct through the overload of its own argument types
    d = _Dispatcher(other_types=("i64[:]", "i64[:]"))
    floats = cuda_launch.launcher(d, 1, 32)
    ints = cuda_launch.launcher(d, 1, 32)
    for q in range(4):
        floats(float(q), 2.0)
        ints(q, 2)
    assert d.slow == 4  # two ordinary launches each, then direct ones
    assert [c[0] for c in d.kernels[0].calls] == [(float(q), 2.0) for q in range(4)]
    assert [c[0] for c in d.kernels[1].calls] == [(q, 2) for q in range(4)]


def test_rejected_direct_call_falls_back_once_and_for_good():
    d = _Dispatcher()
    go = cuda_launch.launcher(d, 1, 32)
    go(1.0, 2.0)
    go(1.0, 2.0)
    d.kernels[0].reject_direct = True  # e.g. a numba-cuda whose launch wants another stream
    go(3.0, 4.0)  # direct call rejected -> the ordinary path launches it
    go(5.0, 6.0)
    assert d.slow == 4
    assert [c[0] for c in d.kernels[0].calls] == [(1.0, 2.0), (1.0, 2.0), (3.0, 4.0),
                                                  (5.0, 6.0)]


def test_fast_switch_off_uses_ordinary_path(monkeypatch):
    d = _Dispatcher()
    go = cuda_launch.launcher(d, 1, 32)
    go(1.0, 2.0)
    go(1.0, 2.0)
    monkeypatch.setattr(cuda_launch, "FAST", False)
    go(1.0, 2.0)
    assert d.slow == 3


def test_simulator_like_dispatcher_without_overloads():
    class Fake:
        def __init__(self) -> None:
            self.n = 0

        def __getitem__(self, config):
            def run(*args):
                self.n += 1
            return run

    f = Fake()
    go = cuda_launch.launcher(f, 1, 1)
    for _ in range(4):
        go(1.0)
    assert f.n == 4


def test_several_gpus_keep_the_ordinary_path(monkeypatch):
    monkeypatch.setattr(cuda_launch.cuda_runtime, "gpu_count", lambda: 2)
    d = _Dispatcher()
    go = cuda_launch.launcher(d, 1, 32)
    for _ in range(4):
        go(1.0, 2.0)
    assert d.slow == 4


# ----------------------------------------------------------------------------- packed stage
# A fake of numba-cuda 0.30's last step: `_Kernel.launch` prepares each array as (meminfo,
# parent, size, itemsize, pointer, *shape, *strides) and calls the `launch` its module
# imported from cuda.core with (stream, config, kernel, *those).
_CORE = types.ModuleType("numbax_test_fake_dispatcher")
_CORE.calls = []
_CORE.launch = lambda stream, config, kern, *params: _CORE.calls.append((stream, config, params))
sys.modules[_CORE.__name__] = _CORE


class _ArrayType:
    layout = "C"

    def __init__(self, ndim: int) -> None:
        self.ndim = ndim

    def __eq__(self, other) -> bool:
        return isinstance(other, _ArrayType) and other.ndim == self.ndim

    def __hash__(self) -> int:
        return self.ndim


class _DeviceArray:
    def __init__(self, ptr: int, shape: tuple) -> None:
        self.device_ctypes_pointer = ctypes.c_void_p(ptr)
        self.shape = shape


class _CoreKernel:
    def __init__(self, ndims, lie: bool = False) -> None:
        self.argument_types = [_ArrayType(n) for n in ndims]
        self.prepared = 0
        self.lie = lie  # lays out one dimension fewer than the types say

    def launch(self, args, griddim, blockdim, stream, sharedmem):
        params = []
        for a in args:
            self.prepared += 1
            dims = a.shape[:-1] if self.lie else a.shape
            params += [0, 0, 1, 4, a.device_ctypes_pointer.value, *dims, *dims]
        sys.modules[type(self).__module__].launch(stream, ("config", griddim, blockdim),
                                                  "kernel", *params)


_CoreKernel.__module__ = _CORE.__name__


class _CoreDispatcher(_Dispatcher):
    def __init__(self, kernel: _CoreKernel) -> None:
        super().__init__()
        self.kernels = [kernel]

    def typeof_pyval(self, value):
        return _ArrayType(len(value.shape))

    def __getitem__(self, config):
        def run(*args):
            self.slow += 1
            self.overloads[0] = self.kernels[0]
            self.kernels[0].launch(args, config[0], config[1], STREAM, 0)
        return run


def test_packed_launch_replaces_only_the_data_pointers():
    _CORE.calls.clear()
    kern = _CoreKernel((1, 2))
    d = _CoreDispatcher(kern)
    go = cuda_launch.launcher(d, 8, 64)
    for q in range(6):
        go(_DeviceArray(1000 + q, (5,)), _DeviceArray(2000 + q, (2, 3)))
    # 2 ordinary, 1 direct, 1 direct while recording, then 2 without numba's preparation
    assert d.slow == 2 and kern.prepared == 2 * 4
    assert len(_CORE.calls) == 6
    for q, (stream, config, params) in enumerate(_CORE.calls):
        assert stream is STREAM and config == ("config", 8, 64)
        assert params == (0, 0, 1, 4, 1000 + q, 5, 5, 0, 0, 1, 4, 2000 + q, 2, 3, 2, 3)
    assert _CORE.launch.__name__ == "<lambda>"  # the recorder is gone


def test_packed_launch_not_used_when_the_layout_differs():
    _CORE.calls.clear()
    kern = _CoreKernel((2,), lie=True)  # 7 entries where a 2-d array takes 9
    d = _CoreDispatcher(kern)
    go = cuda_launch.launcher(d, 1, 32)
    for q in range(6):
        go(_DeviceArray(10 + q, (4, 1)))
    assert d.slow == 2 and kern.prepared == 6  # direct launches, each prepared by numba
    assert [p[4] for _, _, p in _CORE.calls] == [10 + q for q in range(6)]


def test_packed_launch_needs_array_arguments():
    kern = _CoreKernel((1,))
    kern.argument_types = ["int64"]  # a scalar: numba prepares it per call
    d = _CoreDispatcher(kern)
    d.typeof_pyval = lambda value: "int64"
    _CORE.calls.clear()
    go = cuda_launch.launcher(d, 1, 32)
    for q in range(5):
        go(_DeviceArray(q, (3,)))
    assert kern.prepared == 5 and len(_CORE.calls) == 5
