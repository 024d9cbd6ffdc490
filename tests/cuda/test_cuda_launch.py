"""cuda_launch.launcher against a fake numba-cuda dispatcher: the first launch goes through
`dispatcher[grid, block](*args)`, later ones call the resolved overload's `launch` directly,
unless its argument types differ, there are several overloads, or FAST is off."""
from __future__ import annotations

from numbax._src.compiler import cuda_launch


class _Kernel:
    def __init__(self, types) -> None:
        self.argument_types = types
        self.calls = []

    def launch(self, args, griddim, blockdim, stream=0, sharedmem=0):
        self.calls.append((args, griddim, blockdim, stream, sharedmem))


class _Dispatcher:
    def __init__(self, n_overloads: int = 1, types=("f32[:]", "f32[:]")) -> None:
        self.overloads = {}
        self.kernels = [_Kernel(types) for _ in range(n_overloads)]
        self.slow = []

    def typeof_pyval(self, value):
        return "f32[:]" if isinstance(value, float) else "i64[:]"

    def __getitem__(self, config):
        def run(*args):
            self.slow.append((config, args))
            for q, k in enumerate(self.kernels):  # "compiles" on the first call
                self.overloads[q] = k
        return run


def test_first_launch_ordinary_then_direct():
    d = _Dispatcher()
    go = cuda_launch.launcher(d, (4, 2), 32)
    go(1.0, 2.0)
    go(3.0, 4.0)
    go(5.0, 6.0)
    assert d.slow == [(((4, 2), 32), (1.0, 2.0))]
    assert d.kernels[0].calls == [((3.0, 4.0), (4, 2, 1), (32, 1, 1), 0, 0),
                                  ((5.0, 6.0), (4, 2, 1), (32, 1, 1), 0, 0)]


def test_mismatched_types_or_several_overloads_stay_ordinary():
    d = _Dispatcher()
    go = cuda_launch.launcher(d, 1, 32)
    go(1, 2)  # typed i64[:], the overload takes f32[:]
    go(1, 2)
    assert len(d.slow) == 2 and not d.kernels[0].calls
    d2 = _Dispatcher(n_overloads=2)
    go2 = cuda_launch.launcher(d2, 1, 32)
    go2(1.0, 2.0)
    go2(1.0, 2.0)
    assert len(d2.slow) == 2


def test_fast_switch_off_uses_ordinary_path(monkeypatch):
    d = _Dispatcher()
    go = cuda_launch.launcher(d, 1, 32)
    go(1.0, 2.0)
    monkeypatch.setattr(cuda_launch, "FAST", False)
    go(1.0, 2.0)
    assert len(d.slow) == 2 and not d.kernels[0].calls


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
    for _ in range(3):
        go(1.0)
    assert f.n == 3
