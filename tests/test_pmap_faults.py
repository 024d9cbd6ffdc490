"""pmap under faults (issue 21, items 13-16): data that cannot fit in /dev/shm, a worker that
stops responding, killed workers (the next call raises, the one after runs on a fresh pool,
every time), devices that run different collectives, and the README example run as a script
(with and without a __main__ guard, its top level run once)."""
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from functools import partial

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.parallel import pool, shm
from tests.virtual_devices import cpu_devices

N = 2
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


two_devices = cpu_devices(N, eager=True)


def _psum(x):
    return numbax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")(x)


def _shm_names() -> set:
    """This process's shared-memory segments (other test processes make their own)."""
    return {n for n in os.listdir(shm.SHM_DIR) if n.startswith(f"psm_numbax_{os.getpid()}_")}


# ----------------------------------------------------------------------------- /dev/shm room


def test_absurd_sizes_raise_before_allocating():
    huge = np.broadcast_to(np.float64(1.0), (N, 10**12 // N))  # 8 TB of arguments, 8 bytes held
    with pytest.raises(MemoryError) as info:
        numbax.pmap(lambda v: v * 2)(huge)
    text = str(info.value)
    assert "pmap:" in text and "shared memory" in text and "/dev/shm has" in text
    assert "need 14.6 TiB (16000000" in text  # arguments and results, 8 TB each
    assert "--shm-size" in text
    with pytest.raises(MemoryError, match="need .* of shared memory"):
        numbax.pmap(lambda v: jnp.zeros(10**12) + v)(np.ones(N))  # results alone: 16 TB
    np.testing.assert_allclose(_psum(np.ones((N, 3))), np.full((N, 3), N))  # still works


def test_data_larger_than_free_shm_is_a_clear_error(monkeypatch):
    # 16 MiB of arguments, 16 of results, 2 x 8 of psum slots and 8 of the psum's result
    x = np.ones((N, 2**20))
    shm.heap().trim()  # no segment kept from earlier tests (of this process) may fit it
    _psum(np.ones((N, 2)))  # numbax keeps the emptied segment of a call for the next one
    monkeypatch.setattr(shm, "shm_room", lambda: (2**20, 64 * 2**20))
    with pytest.raises(MemoryError, match=r"need 56\.0 MiB .*/dev/shm has 1\.0 MiB free \(of "
                                          r"64\.0 MiB\) and numbax holds .* unused\."):
        _psum(x)
    monkeypatch.undo()
    np.testing.assert_allclose(_psum(x), np.full(x.shape, N))


def test_a_loop_of_large_calls_reuses_its_shared_memory():
    """The segments of a call larger than KEEP_BYTES stay for the next call of the loop (a
    new segment per call cost most of a 64 MB psum), and their total stays bounded."""
    x = np.ones((N, 5 * 2**20), np.float32)  # 40 MiB of arguments, 40 of results, 40 of slots
    for _ in range(2):  # segments left by earlier calls settle into the loop's
        np.testing.assert_allclose(_psum(x), np.full(x.shape, N))
    kept = set(shm.heap().segments)
    for _ in range(3):
        np.testing.assert_allclose(_psum(x), np.full(x.shape, N))
    assert set(shm.heap().segments) == kept
    total = sum(seg.size for seg in shm.heap().segments.values())
    assert total <= 4 * 3 * x.nbytes  # the loop's blocks, within the heap's growth rule


def test_a_call_of_many_blocks_keeps_its_segments_for_the_next():
    """A call handing out ~20 blocks (a 16-device step: staged arguments, collective slots,
    a result arena, outputs) finds its emptied segments again in the next call, even when
    its large blocks came early in the call."""
    heap = shm.Heap()
    try:
        def one_call():
            blocks = [heap.alloc("test", 40 << 20, "slots"), heap.alloc("test", 30 << 20, "arena")]
            blocks += [heap.alloc("test", 64 << 10, "outputs") for _ in range(18)]
            for block in blocks:
                heap.release(block)

        one_call()
        kept = set(heap.segments)
        for _ in range(3):
            one_call()
        assert set(heap.segments) == kept
        assert not heap.unlinked
    finally:
        heap.close()


def test_full_shm_when_reserving_is_a_memory_error_not_sigbus(monkeypatch):
    def no_space(fd, offset, length):
        raise OSError(28, "No space left on device")

    before = _shm_names()
    monkeypatch.setattr(shm, "check_room", lambda *a: None)
    monkeypatch.setattr(os, "posix_fallocate", no_space)
    with pytest.raises(MemoryError, match="shared memory"):
        shm.Segment("pmap", 1 << 20, "the test's data")
    assert _shm_names() == before  # the half-made segment was unlinked


# ----------------------------------------------------------------------------- hangs


def test_stopped_worker_times_out_naming_the_device_and_the_pool_is_rebuilt():
    x = np.ones((N, 2))
    _psum(x)
    stuck = pool._POOL.worker(1).proc
    os.kill(stuck.pid, signal.SIGSTOP)
    try:
        with numbax.config.override("worker_timeout", 1.0):
            start = time.monotonic()
            with pytest.raises(TimeoutError, match=r"CpuDevice\(id=1\) did not respond within "
                                                   r"1 s.*worker_timeout"):
                _psum(x)
            assert time.monotonic() - start < 8
    finally:
        if stuck.poll() is None:
            os.kill(stuck.pid, signal.SIGCONT)
    assert stuck.poll() is not None  # reaped before the error was raised
    np.testing.assert_allclose(_psum(x), np.full((N, 2), N))


def test_a_deadlock_in_user_code_times_out():
    def spin(v):  # eager in the workers: never ends
        return lax.while_loop(lambda c: c[0] >= 0, lambda c: (c[0] + 1, c[1]), (0, v))[1]

    _psum(np.ones((N, 1)))  # both workers started: a fresh one's start can exceed 1 s here
    with numbax.config.override("worker_timeout", 1.0):
        with pytest.raises(TimeoutError, match=r"CpuDevice\(id=0\), CpuDevice\(id=1\) did not"):
            numbax.pmap(spin)(np.ones((N, 1)))
    np.testing.assert_allclose(_psum(np.ones((N, 1))), np.full((N, 1), N))


def test_devices_running_different_collectives_fail_at_once():
    def skew(v):  # device 0 skips the psum the others wait in
        return lax.cond(lax.axis_index("i") == 0, lambda u: u, lambda u: lax.psum(u, "i"), v)

    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"waits in a collective that CpuDevice\(id=0\) "
                                           "finished without entering"):
        numbax.pmap(skew, axis_name="i")(np.ones((N, 1)))
    assert time.monotonic() - start < 10  # no timeout involved
    np.testing.assert_allclose(_psum(np.ones((N, 1))), np.full((N, 1), N))


# ----------------------------------------------------------------------------- killed workers


def _kill_cycle(victim_index: int, wait_for_death: bool) -> None:
    x = np.arange(N * 3.0).reshape(N, 3)
    np.testing.assert_allclose(_psum(x), np.broadcast_to(x.sum(0), x.shape))
    victim = pool._POOL.worker(victim_index).proc
    os.kill(victim.pid, signal.SIGKILL)
    if wait_for_death:
        victim.wait(timeout=5)
    with pytest.raises(RuntimeError, match=rf"CpuDevice\(id={victim_index}\) died"):
        _psum(x)
    np.testing.assert_allclose(_psum(x), np.broadcast_to(x.sum(0), x.shape))


@pytest.mark.parametrize("rounds", [2, pytest.param(10, marks=pytest.mark.slow)])
def test_after_a_killed_worker_the_next_call_raises_and_the_one_after_runs(rounds):
    """The race of issue 21 item 15: the dead worker's pool is reaped before the error is
    raised, so the call after always starts fresh workers (killed and called at once, or
    after the victim's death is seen)."""
    before = _shm_names()
    for k in range(rounds):
        _kill_cycle(k % N, wait_for_death=bool(k % 2))
    # the dead pools' barrier boards were unlinked: only the live pool's is left
    assert _shm_names() <= before | {s for s in shm.heap().segments} | pool._POOL.board_names()


# ----------------------------------------------------------------------------- the README


def _readme_pmap_example() -> str:
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    section = text.split("## pmap on one machine", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.parametrize("guarded", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_readme_pmap_example_runs_as_a_script(tmp_path, guarded):
    body = "print('top level ran', flush=True)\n" + _readme_pmap_example() + \
        "print(step(jnp.arange(8.0).reshape(4, 2)).tolist())\n"
    if guarded:
        body = "if __name__ == '__main__':\n" + textwrap.indent(body, "    ")
    script = tmp_path / "readme_pmap.py"
    script.write_text(body)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBAX_NUM_CPU_DEVICES",
                                                            "XLA_FLAGS")}
    env["PYTHONPATH"] = ROOT
    out = subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert lines.count("top level ran") == 1
    x = np.arange(8.0).reshape(4, 2)
    np.testing.assert_allclose(eval(lines[-1]), x / x.sum(0))


def test_a_program_holding_main_functions_runs_in_the_caller(tmp_path):
    """A jaxpr holding a function of the user's __main__ (here a custom_jvp rule) cannot run in
    workers that never import __main__: pmap runs it in the calling process instead."""
    script = tmp_path / "custom_rule.py"
    script.write_text(textwrap.dedent("""
        import os
        os.environ["NUMBAX_NUM_CPU_DEVICES"] = "2"
        import numpy as np, numbax, numbax.numpy as jnp
        from numbax import lax

        @numbax.custom_jvp
        def cube(x):
            return x ** 3

        @cube.defjvp
        def cube_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return cube(x), 3 * x ** 2 * t

        f = numbax.pmap(lambda v: lax.psum(cube(v), "i"), axis_name="i")
        print(f(np.arange(4.0).reshape(2, 2)).tolist())
    """))
    out = subprocess.run([sys.executable, str(script)], env={**os.environ, "PYTHONPATH": ROOT},
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert eval(out.stdout.splitlines()[-1]) == [[8.0, 28.0], [8.0, 28.0]]


@partial(pytest.mark.parametrize, "n")([N])
def test_workers_do_not_inherit_the_callers_signals(n):
    """Ctrl-C at a terminal goes to the foreground process group: workers sit in their own
    session, so only the parent sees it (and stops them, test_pmap_interrupt.py)."""
    _psum(np.ones((n, 1)))
    for w in pool._POOL.workers:
        assert os.getsid(w.proc.pid) != os.getsid(0)
