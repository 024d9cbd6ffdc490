"""Large kernel outputs reuse the driver's previous buffer only once nothing refers to it."""
import threading

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax._src.compiler.cpu import loops
from numbax._src.compiler.cpu.runtime import kernels

N = loops.POOL_MIN_BYTES // 8  # float64 elements: just large enough to be pooled
RNG = np.random.default_rng(0)


def _scale(x):
    return jnp.tanh(x) * 2.0 + 1.0


def _truth(x):
    return np.tanh(x) * 2.0 + 1.0


F = numbax.jit(_scale)


def _address(a) -> int:
    return np.asarray(a).__array_interface__["data"][0]


def test_driver_source_pools_only_large_outputs():
    big = F.lower(np.zeros(N)).as_text().split("# driver")[1]
    assert "kc.take(_pool_t0)" in big and "_pool_t0.append(t0)" in big
    small = F.lower(np.zeros(N // 2)).as_text().split("# driver")[1]
    assert "take" not in small and "np.empty((" in small


def test_buffer_is_reused_only_after_the_result_is_dropped():
    x1, x2, x3 = (RNG.normal(size=N) for _ in range(3))
    y1 = F(x1)
    y2 = F(x2)  # y1 still held: a fresh buffer
    assert _address(y1) != _address(y2)
    np.testing.assert_allclose(np.asarray(y1), _truth(x1), rtol=1e-13, atol=1e-15)
    addr2 = _address(y2)
    del y2
    y3 = F(x3)  # y2 dropped: its buffer is written again
    assert _address(y3) == addr2
    np.testing.assert_allclose(np.asarray(y3), _truth(x3), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(np.asarray(y1), _truth(x1), rtol=1e-13, atol=1e-15)  # untouched
    assert not np.asarray(y3).flags.writeable  # results stay read-only for the caller


def test_a_live_view_keeps_the_buffer_out_of_the_pool():
    x1, x2 = RNG.normal(size=N), RNG.normal(size=N)
    y1 = F(x1)
    view = np.asarray(y1)[::3]
    kept = view.copy()
    del y1
    y2 = F(x2)
    np.testing.assert_array_equal(view, kept)  # the view's memory was not reused
    np.testing.assert_allclose(np.asarray(y2), _truth(x2), rtol=1e-13, atol=1e-15)


def test_take_from_an_empty_or_referenced_pool():
    assert kernels.take([]) is None
    held = np.zeros(4)
    assert kernels.take([held]) is None  # `held` refers to it
    pool = [np.zeros(4)]
    got = kernels.take(pool)
    assert got is not None and got.flags.writeable and pool == []


def test_concurrent_calls_never_share_a_buffer():
    xs = [RNG.normal(size=N) for _ in range(4)]
    errors = []

    def work(x):
        for _ in range(5):
            y = F(x)
            if not np.allclose(np.asarray(y), _truth(x), rtol=1e-13, atol=1e-15):
                errors.append("mismatch")
            del y

    threads = [threading.Thread(target=work, args=(x,)) for x in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
