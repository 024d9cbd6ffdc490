"""The workers' barriers on the pool's board of semaphores (parallel/barriers.py): threads of
this process meeting on a board (every member passes together, groups of any size and order,
abort and reset, a member that finished without coming is reported), and the engine on it:
collectives in a row on 3 and 4 devices against numpy, a device raising between collectives,
a killed worker while another waits at a barrier, a long run of barriers longer than
worker_timeout, workers that outlive no parent."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from functools import partial

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.parallel import barriers, pool, worker
from numbax.sharding import Mesh, NamedSharding
from numbax.sharding import PartitionSpec as P
from tests.virtual_devices import cpu_devices

N = 4
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(barriers.LIBC is None,
                                reason="no process-shared semaphores on this platform")


four_devices = cpu_devices(N)


class _Conn:
    """A worker's socket as a board member sees it: what it told the parent."""

    def __init__(self) -> None:
        self.sent: list = []

    def send(self, msg: tuple) -> None:
        self.sent.append(msg)


def _board(n: int) -> tuple[barriers.Board, np.ndarray]:
    memory = np.zeros(barriers.board_bytes(n) + 64, np.uint8)
    at = -memory.ctypes.data % 64  # the semaphores 64-byte aligned
    buf = memory[at:at + barriers.board_bytes(n)]
    board = barriers.Board(buf, buf.ctypes.data, n)
    board.reset()
    return board, memory


def _run_threads(n: int, device) -> list:
    errors: list = []

    def guarded(me: int) -> None:
        try:
            device(me)
        except BaseException as err:  # noqa: BLE001 - re-raised in the test
            errors.append(err)

    threads = [threading.Thread(target=guarded, args=(me,)) for me in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a member is still waiting"
    return errors


@pytest.mark.parametrize("spin_s", [0.0, worker.SPIN_S])
@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_no_member_leaves_a_barrier_before_all_arrived(n, spin_s):
    """Each member writes its step before the barrier and, after it, reads every member's:
    none may be behind. Groups alternate between everyone, the even and the odd members, and
    pairs, with members sleeping now and then so the others wait (longer than a waiter
    polls, when it polls first)."""
    board, _memory = _board(n)
    board.spin_s = spin_s
    board.start()
    steps = np.zeros(n, np.int64)
    groups = [tuple(range(n)), tuple(range(0, n, 2)), tuple(range(1, n, 2)),
              tuple(range(0, n - n % 2))]
    conn = _Conn()

    def device(me: int) -> None:
        rng = np.random.default_rng(me)
        for step in range(1, 120):
            if rng.random() < 0.1:
                time.sleep(0.002)
            steps[me] = step
            members = tuple(m for m in groups[step % len(groups)]) if me in \
                groups[step % len(groups)] else (me,)
            board.barrier(me, members, conn)
            behind = [m for m in members if steps[m] < step]
            assert not behind, f"member {me} passed step {step} before {behind}"
            board.barrier(me, members, conn)  # nobody writes the next step before all read

    assert not _run_threads(n, device)
    assert not conn.sent
    assert not board.blocked(range(n))


@pytest.mark.parametrize("spin_s", [0.0, worker.SPIN_S])
def test_abort_releases_the_waiters_and_reset_makes_the_board_whole_again(spin_s):
    board, _memory = _board(3)
    board.spin_s = spin_s
    board.start()

    def waiter(me: int) -> None:
        if me < 2:  # member 2 never comes
            board.barrier(me, (0, 1, 2), _Conn())

    errors: list = []
    threads = [threading.Thread(target=lambda m=m: _catch(errors, waiter, m)) for m in range(3)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while len(board.blocked(range(3))) < 2 and time.monotonic() < deadline:
        time.sleep(0.001)
    board.abort()
    for t in threads:
        t.join(timeout=10)
    assert sorted(type(e).__name__ for e in errors) == ["BrokenBarrierError"] * 2
    board.reset()
    board.start()
    assert not _run_threads(3, lambda me: board.barrier(me, (0, 1, 2), _Conn()))


def test_a_worker_polls_for_its_next_message_only_where_a_core_is_left_for_the_parent(
        monkeypatch):
    """worker.Spin: with a core for every worker and the parent, a message there is seen,
    and none makes it give up after SPIN_S; with a
    worker for every core, or another process's load on half of them, it does not poll."""
    import socket

    from numbax._src.compiler.cpu.runtime import threads

    ours, theirs = socket.socketpair()
    try:
        monkeypatch.setattr(threads, "CORES", 4)
        monkeypatch.setattr(threads, "busy", lambda: False)
        spin = worker.Spin(ours, host_workers=3)
        assert (spin.for_messages, spin.barrier_s()) == (True, worker.SPIN_S)
        start = time.perf_counter()
        assert not spin.until_message()
        assert time.perf_counter() - start >= worker.SPIN_S
        theirs.send(b"x")
        assert spin.until_message()
        assert ours.recv(1) == b"x"
        assert not worker.Spin(ours, host_workers=4).for_messages
        assert worker.Spin(ours, host_workers=4).barrier_s() == worker.SPIN_S
        assert worker.Spin(ours, host_workers=5).barrier_s() == 0.0
        monkeypatch.setattr(threads, "busy", lambda: True)
        assert spin.barrier_s() == 0.0
        start = time.perf_counter()
        assert not spin.until_message()
        assert time.perf_counter() - start < worker.SPIN_S
    finally:
        ours.close()
        theirs.close()


def _catch(errors: list, fn, *args) -> None:
    try:
        fn(*args)
    except BaseException as err:  # noqa: BLE001 - inspected by the test
        errors.append(err)


def test_a_member_waiting_for_one_that_finished_tells_the_parent():
    board, _memory = _board(2)
    board.start()
    board.finish(1)  # member 1 finished the call without coming
    conn = _Conn()
    thread = threading.Thread(target=_catch, args=([], board.barrier, 0, (0, 1), conn))
    thread.start()
    deadline = time.monotonic() + 5
    while not conn.sent and time.monotonic() < deadline:
        time.sleep(0.005)
    assert conn.sent == [("stranded", 1)]
    board.abort()
    thread.join(timeout=5)
    assert not thread.is_alive()


# ----------------------------------------------------------------------------- the engine


@pytest.mark.parametrize("n", [3, 4])
def test_collectives_in_a_row_on_three_and_four_devices(n):
    """psum, ppermute around the ring and all_gather, ten times in a loop (each a barrier on
    the board; three devices: a dissemination barrier whose rounds wrap around)."""
    mesh = Mesh(np.array(numbax.devices()[:n]), ("i",))
    ring = [(k, (k + 1) % n) for k in range(n)]

    def step(_, acc):
        total = lax.psum(acc, "i")
        moved = lax.ppermute(acc, "i", ring)
        gathered = lax.all_gather(acc, "i", tiled=True)
        return total * 0.5 + moved + gathered[:acc.shape[0]]

    body = numbax.jit(partial(numbax.shard_map, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(
        lambda v: lax.fori_loop(0, 10, step, v)))
    x = np.arange(n * 4, dtype=np.float64)
    blocks = np.split(x, n)
    for _ in range(10):
        total = sum(blocks)
        blocks = [total * 0.5 + blocks[(k - 1) % n] + blocks[0] for k in range(n)]
    got = body(numbax.device_put(x, NamedSharding(mesh, P("i"))))
    np.testing.assert_allclose(np.asarray(got), np.concatenate(blocks), rtol=1e-12)


def _fail_on_device_one(value, position):
    if int(position) == 1:
        raise ValueError("device one fails here")
    return value


def test_a_device_raising_between_collectives_releases_the_others():
    """Device 1 raises after the first psum; the others wait at the second one's barrier
    and are released. The error is device 1's, and the next call, on the same workers, is
    right."""
    def body(v):
        a = lax.psum(v, "i")
        b = numbax.pure_callback(_fail_on_device_one, numbax.ShapeDtypeStruct(a.shape, a.dtype),
                                 a, lax.axis_index("i"))
        return lax.psum(b, "i")

    f = numbax.pmap(body, axis_name="i")
    g = numbax.pmap(lambda v: lax.psum(lax.psum(v, "i"), "i"), axis_name="i")
    np.testing.assert_allclose(g(np.ones((N, 2))), np.full((N, 2), N * N))
    workers = [w.proc.pid for w in pool._POOL.workers]
    with pytest.raises(numbax.errors.JaxRuntimeError,
                       match=r"CpuDevice\(id=1\) raised .*ValueError: device one fails"):
        f(np.ones((N, 2)))
    assert [w.proc.pid for w in pool._POOL.workers] == workers  # the same workers go on
    np.testing.assert_allclose(g(np.arange(2.0 * N).reshape(N, 2)),
                               np.broadcast_to(N * np.arange(2.0 * N).reshape(N, 2).sum(0),
                                               (N, 2)))


def test_a_killed_worker_while_another_waits_at_a_barrier_raises():
    f = numbax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")
    x = np.ones((N, 3))
    np.testing.assert_allclose(f(x), np.full((N, 3), N))
    stopped = pool._POOL.worker(3).proc
    os.kill(stopped.pid, signal.SIGSTOP)  # the others wait for it at the psum's barrier
    try:
        done: list = []
        caller = threading.Thread(target=_catch, args=(done, f, x))
        caller.start()
        deadline = time.monotonic() + 10
        while len(pool._POOL.board.blocked(range(N))) < N - 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert pool._POOL.board.blocked(range(N)) == {0, 1, 2}
        os.kill(stopped.pid, signal.SIGKILL)
        caller.join(timeout=10)
        assert not caller.is_alive()
        assert len(done) == 1 and isinstance(done[0], RuntimeError)
        assert "CpuDevice(id=3) died" in str(done[0])
    finally:
        if stopped.poll() is None:
            os.kill(stopped.pid, signal.SIGKILL)
    np.testing.assert_allclose(f(x), np.full((N, 3), N))


def test_a_long_run_of_barriers_is_progress_not_silence():
    """Eager psums in a loop for three times worker_timeout: each barrier passed counts as
    progress, although no worker replies before the end."""
    def body(v):
        return lax.fori_loop(0, 3000, lambda _, acc: lax.psum(acc, "i") / N, v)

    f = numbax.pmap(body, axis_name="i")
    with numbax.disable_jit():
        f(np.ones((N, 1)))  # warm: workers, traces
        start = time.monotonic()
        f(np.ones((N, 1)))  # how long the loop takes
        took = time.monotonic() - start
        with numbax.config.override("worker_timeout", took / 3):
            np.testing.assert_allclose(f(np.full((N, 1), 3.0)), np.full((N, 1), 3.0))


def test_workers_waiting_at_a_barrier_leave_when_the_parent_is_killed(tmp_path):
    """The parent is killed while three workers wait at a barrier for the fourth (stopped):
    the three leave by themselves within a second or so."""
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        import os, signal, sys, threading, time
        sys.path.insert(0, {ROOT!r})
        import numpy as np
        import numbax
        from numbax import lax
        from numbax._src.config import config
        from numbax._src.parallel import pool
        config.update("num_cpu_devices", {N})
        f = numbax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")
        f(np.ones(({N}, 1)))
        procs = [w.proc for w in pool._POOL.workers]
        os.kill(procs[-1].pid, signal.SIGSTOP)
        threading.Thread(target=f, args=(np.ones(({N}, 1)),), daemon=True).start()
        while len(pool._POOL.board.blocked(range({N}))) < {N - 1}:
            time.sleep(0.005)
        print(" ".join(str(p.pid) for p in procs), flush=True)
        time.sleep(60)
    """))
    pids = _kill_parent(script, N)
    _assert_gone(pids[:-1], pids)


def test_busy_workers_leave_when_the_parent_is_killed(tmp_path):
    """The parent is killed while its workers are deep in a long eager loop: they read no
    message until it ends, and leave anyway (worker_main's watch on the parent), instead of
    spinning on with no one to answer."""
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys, threading, time
        sys.path.insert(0, {ROOT!r})
        import numpy as np
        import numbax
        from numbax import lax
        from numbax._src.config import config
        from numbax._src.parallel import pool
        config.update("num_cpu_devices", 2)

        def slow(x):  # eager in the workers (the parent's jit is disabled), never ends
            return lax.while_loop(lambda c: c[1] > -1.0, lambda c: (c[0] + 1, c[1] + 1.0),
                                  (0, x))[1]

        numbax.pmap(lambda v: v + 1)(np.ones(2))  # the workers are up
        procs = [w.proc for w in pool._POOL.workers]

        def cpu_s(pid):
            with open(f"/proc/{{pid}}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        def call():
            with numbax.disable_jit():  # (per thread)
                numbax.pmap(slow)(np.ones(2))

        start = [cpu_s(p.pid) for p in procs]
        threading.Thread(target=call, daemon=True).start()
        while any(cpu_s(p.pid) - s < 1.0 for p, s in zip(procs, start)):
            time.sleep(0.05)  # both inside the loop
        print(" ".join(str(p.pid) for p in procs), flush=True)
        time.sleep(60)
    """))
    pids = _kill_parent(script, 2)
    _assert_gone(pids, pids)


def test_workers_in_compiled_code_leave_when_the_parent_is_killed(tmp_path):
    """As above, but the workers run a jitted loop that never ends: compiled code holds the
    GIL, so their watch thread never runs, and Linux kills them with the parent's main thread
    (worker_main._die_with_parent). Workers a short-lived thread started are not asked to:
    the thread's end would kill them (checked by starting a second pool from a thread)."""
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys, threading, time
        sys.path.insert(0, {ROOT!r})
        import numpy as np
        import numbax
        from numbax import lax
        from numbax._src.config import config
        from numbax._src.parallel import pool
        config.update("num_cpu_devices", 2)

        def endless(x):  # compiled in the workers, never ends
            return lax.while_loop(lambda c: c[1] > -1.0, lambda c: (c[0] + 1, c[1] + 1.0),
                                  (0, x))[1]

        numbax.pmap(lambda v: v + 1)(np.ones(2))  # the workers are up, from the main thread
        procs = [w.proc for w in pool._POOL.workers]
        for p in procs:
            with open(f"/proc/{{p.pid}}/environ") as f:
                assert "NUMBAX_WORKER_DIES_WITH_PARENT=1" in f.read().split("\\0")

        def cpu_s(pid):
            with open(f"/proc/{{pid}}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        start = [cpu_s(p.pid) for p in procs]
        threading.Thread(target=lambda: numbax.pmap(endless)(np.ones(2)), daemon=True).start()
        while any(cpu_s(p.pid) - s < 1.0 for p, s in zip(procs, start)):
            time.sleep(0.05)  # both inside the compiled loop
        print(" ".join(str(p.pid) for p in procs), flush=True)
        time.sleep(60)
    """))
    pids = _kill_parent(script, 2)
    _assert_gone(pids, pids)


def test_workers_started_from_a_thread_outlive_it():
    """A pool a worker thread starts is not tied to that thread: its workers answer after the
    thread has ended (they keep only the watch on the parent process)."""
    code = textwrap.dedent(f"""
        import sys, threading, time
        sys.path.insert(0, {ROOT!r})
        import numpy as np
        import numbax
        from numbax._src.config import config
        from numbax._src.parallel import pool
        config.update("num_cpu_devices", 2)
        t = threading.Thread(target=lambda: numbax.pmap(lambda v: v + 1)(np.ones(2)))
        t.start(); t.join()
        for p in [w.proc for w in pool._POOL.workers]:
            with open(f"/proc/{{p.pid}}/environ") as f:
                assert "NUMBAX_WORKER_DIES_WITH_PARENT=0" in f.read().split("\\0")
        time.sleep(0.5)
        print(numbax.pmap(lambda v: v * 3)(np.arange(2.0)).tolist())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[0.0, 3.0]"


def _kill_parent(script, count: int) -> list[int]:
    """Runs `script` (which prints its `count` workers' pids when they are where the test
    wants them) and kills it with SIGKILL; the workers' pids."""
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in parent.stdout.readline().split()]
    finally:
        parent.kill()
        parent.wait(timeout=10)
    assert len(pids) == count
    return pids


def _assert_gone(leaving: list[int], every: list[int]) -> None:
    """Waits up to 10 s for the `leaving` workers to end, asserts they did, and kills any of
    `every` still there (a stopped worker, or one that failed the test)."""
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(p) for p in leaving):
            time.sleep(0.05)
        assert not any(_alive(p) for p in leaving)
    finally:
        for pid in every:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (not gone, not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_pool_unlinks_its_board_when_it_stops():
    numbax.pmap(lambda v: v + 1)(jnp.zeros((N, 1)))
    names = pool._POOL.board_names()
    assert names and all(os.path.exists(f"/dev/shm/{n}") for n in names)
    pool.shutdown_pool()
    assert not any(os.path.exists(f"/dev/shm/{n}") for n in names)


class _QueuedConn:
    """A worker's socket as the parent reads it: replies already sent, in order."""

    def __init__(self, *replies) -> None:
        self.replies, self.sent = list(replies), []

    def poll(self, timeout: float) -> bool:
        return bool(self.replies)

    def recv(self):
        return self.replies.pop(0)

    def send(self, msg) -> None:
        self.sent.append(msg)


class _Workers:
    """The parent's view of three workers whose sockets hold the given replies."""

    def __init__(self, *conns) -> None:
        self._workers = [type("W", (), {"conn": c, "send": c.send, "index": k})()
                         for k, c in enumerate(conns)]
        self.board, self.shut = None, []

    def shutdown(self, graceful: bool) -> None:
        self.shut.append(graceful)


@pytest.mark.parametrize("poster_reply,blamed", [
    (("error", b"", "ValueError: device one fails", False), None),
    (("ok", None), "different collectives"),
])
def test_a_stranded_report_waits_for_the_finished_workers_reply(poster_reply, blamed):
    """Worker 2 reports it waits for worker 1, which finished the call. On a busy machine that
    report reached the parent before worker 1's own error (CI): the error is the call's and the
    others are aborted; only a worker 1 that finished normally ran different collectives."""
    workers = _Workers(_QueuedConn(), _QueuedConn(poster_reply), _QueuedConn())
    exchange = pool._Exchange(workers, {0: ("run",), 1: ("run",), 2: ("run",)}, "pmap", None)
    if blamed is None:
        exchange._handle(2, ("stranded", 1))
        assert exchange.aborted and exchange.replies[1] == poster_reply and not workers.shut
    else:
        with pytest.raises(RuntimeError, match=r"CpuDevice\(id=2\) waits in a collective that "
                           r"CpuDevice\(id=1\) finished without entering"):
            exchange._handle(2, ("stranded", 1))
        assert workers.shut == [False]
