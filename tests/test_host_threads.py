"""host_threads.py: numpy work shared among Python threads (node_reduce's copies, LU's layout
copies) — every element once, errors raised after every share has ended."""
import threading
import time

import numpy as np
import pytest

from numbax._src import host_threads
from numbax._src.lax import linalg_blas


@pytest.mark.parametrize("threads", [1, 2, 3, 7, 40])
def test_each_job_range_is_covered_once(threads):
    counts = [np.zeros(n, np.int64) for n in (0, 1, 5, 1000)]
    jobs = []
    for c in counts:
        def bump(a, b, c=c):
            c[a:b] += 1
        jobs.append((bump, 0, c.size))
    host_threads.run(threads, jobs)
    for c in counts:
        np.testing.assert_array_equal(c, 1)


def test_a_failing_share_raises_after_the_others_end():
    """The caller's share raises at once; the call still waits for the pool's shares, so
    nothing writes into the caller's arrays after it returns."""
    done = []
    names = []

    def work(a, b):
        names.append(threading.current_thread().name)
        if a == 0:
            raise ValueError("share zero")
        time.sleep(0.05)
        done.append((a, b))

    with pytest.raises(ValueError, match="share zero"):
        host_threads.run(3, [(work, 0, 3)])
    assert sorted(done) == [(1, 2), (2, 3)]
    assert threading.current_thread().name in names  # the caller took a share


def test_share_count_bounds():
    assert host_threads.share_count(8, 10 << 20, 1 << 20) == 8
    assert host_threads.share_count(8, 3 << 20, 1 << 20) == 3
    assert host_threads.share_count(8, 100, 1 << 20) == 1
    assert host_threads.cores() >= 1


@pytest.mark.parametrize("shape", [(1, 1), (63, 200), (64, 64), (200, 63), (1000, 129)])
@pytest.mark.parametrize("dtype", [np.float32, np.complex128, np.int8])
def test_relaid_on_threads_equals_numpys_copy(shape, dtype, monkeypatch):
    """`relaid` with its blocks split over threads (more threads than blocks included) gives
    numpy's copy in the asked order."""
    monkeypatch.setattr(linalg_blas, "COPY_THREAD_BYTES", 1)
    monkeypatch.setattr(linalg_blas, "COPY_THREADS_MAX", 5)
    x = (np.random.default_rng(3).normal(size=shape) * 50).astype(dtype)
    for order, src in (("F", x), ("C", np.asfortranarray(x))):
        got = linalg_blas.relaid(src, order)
        assert got.flags[f"{order}_CONTIGUOUS"]
        np.testing.assert_array_equal(got, x)
    with linalg_blas.copy_threads_within(1):
        assert linalg_blas.copy_threads(1 << 30) == 1
        with linalg_blas.copy_threads_within(None):
            assert linalg_blas.copy_threads(1 << 30) == min(5, host_threads.cores())
        assert linalg_blas.copy_threads(1 << 30) == 1
