"""Threaded forms compiled in a helper process while their one-thread forms go on running.

Why: a kernel's prange variant compiles once its serial twin has run its tier of work
(`threads.parallel_ready`). Compiled in line, each such compile stopped the program for 0.5-1.1
s: a transformer block's first 10 s on the 2-core VM stalled nine times, 7.4 s in all. A thread
of this process does not help: the compile holds the GIL for half its time, and the driver's
kernels hold it for theirs, so on that VM a background thread took over 25 s to reach the steady
state, against ~10 s in line. A process of its own runs on another core with nothing shared.

`ready` sends the kernel's module (the source numbax generated, never a file read back) and
the signature to the helper (`compile_helper.py`, started at the first request, one per
process, ending when this process closes its pipe) and answers False until the helper has
compiled it into the disk cache; the variant's next call then loads it from there in
milliseconds. Anything else (no disk cache, a module without a file, a helper that cannot
start or dies, a compile that fails there) answers True: the call compiles in line as before,
and raises a real error where the caller sees it. While the helper compiles (`compiling`),
`threads.free_cores` leaves it a core, without counting it as the load of a busy machine.
`runtime_ready` does the same for numbax's own threaded runtime functions whose code is not on
disk yet (a fresh install's threaded GEMM, ~20 s in line on the 2-core VM): the helper imports
the runtime module by name, and the caller runs a one-thread form meanwhile.

`config.cpu_compile_ahead` off compiles everything in line. So does a virtual device's worker
(parallel/pool.py sets NUMBAX_SIBLING_THREADS in each): one helper per worker would double the
processes of a pmap.
"""
from __future__ import annotations

import atexit
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from numbax._src.compiler import cache
from numbax._src.config import config

RESTARTS = 2  # helpers started per process at most: one that keeps dying is not tried again
# A request unanswered this long means a helper that hangs: it is ended (its requests then
# compile in line), rather than keep kernels serial and a core set aside for it for good.
# (The longest compile seen: a loop kernel's ~40 s on the 2-core VM, plus compile_lock's
# 120 s wait for another process's compile of the same code.)
STUCK_S = 300.0
_lock = threading.Condition()
_state: dict[str, Any] = {"helper": None, "outbox": None, "started": 0, "next": 0}
_pending: dict[int, _Request] = {}


class _Request:
    """A prange variant's compile for one signature: sent, then done (ok or not)."""

    __slots__ = ("done", "ok", "pid", "sent")

    def __init__(self) -> None:
        self.done, self.ok, self.pid = False, False, os.getpid()
        self.sent = time.monotonic()


def enabled() -> bool:
    """Whether this process sends compiles to a helper: `config.cpu_compile_ahead` on, and not
    in a virtual device's worker, nor with the disk cache off (the helper's code reaches this
    process through it), nor where this process's executable is not a Python interpreter (an
    application that embeds one)."""
    return config.hot("cpu_compile_ahead") and "NUMBAX_SIBLING_THREADS" not in os.environ \
        and config.compilation_cache \
        and Path(sys.executable or "-").name.lower().startswith("python")


def ready(kernel: Any, arguments: Callable[[], tuple]) -> bool:
    """Whether `kernel` (a generated module's Numba dispatcher, not compiled in this process)
    may be called now: False while the helper compiles it for the types of `arguments()` (the
    call's arguments, made only here), True once the helper is done or cannot do it."""
    return _asked(kernel, lambda: _message(kernel, arguments))


def runtime_ready(function: Any, arguments: Callable[[], tuple], holder: Any = None) -> bool:
    """Whether numbax's runtime function `function` (a Numba dispatcher not compiled in this
    process: the GEMM's parts, a pair or batch of products on threads) may be called now: True
    once its code for the types of `arguments()` is on disk (the call loads it), or where no
    helper takes it; False while the helper compiles it. The caller runs another form
    meanwhile: a fresh install's first threaded product compiled `gemm._gemm_threads` in line,
    12.7 s of a 24.6 s first MLP step on the 2-core VM (`_gemm_pair` another 7.6). The request
    is kept on `holder` (default `function`: one request, for the first signature asked)."""
    return _asked(function if holder is None else holder,
                  lambda: _runtime_message(function, arguments))


def threaded_ready(function: Any, arguments: Callable[[], tuple]) -> bool:
    """Whether a library kernel's threaded form `function` (a parallel Numba dispatcher with a
    one-thread twin: convolutions', pooling's) may run this call: compiled in this process
    already, or `runtime_ready`. Its caller runs the twin meanwhile: a fresh install's first
    CNN step compiled the convolution's and the pooling's threaded forms in line, 12 s of its
    17.6 s first call on the 2-core VM."""
    return bool(function.overloads) or runtime_ready(function, arguments)


_imports: dict[str, Any] = {}  # runtime module -> what `_asked` keeps its import's request on


def module_ready(name: str) -> bool:
    """Whether numbax's runtime module `name`, whose import compiles C tasks (Numba cfuncs,
    cached on disk), may be imported now: once it is imported here, once the helper has
    imported it (its tasks are on disk then: the import here loads them), or where no helper
    takes it; False while the helper imports it. A fresh install's first busy product imported
    gemm_tasks in line, 18.8 s beside two busy loops on the 2-core VM."""
    if name in sys.modules:
        return True
    return _asked(_imports.setdefault(name, types.SimpleNamespace()), lambda: {"import": name})


def _asked(dispatcher: Any, message: Callable[[], dict | None]) -> bool:
    """Whether `dispatcher`'s compile is done, sending the helper `message()` at the first ask
    (in this process); done at once where there is nothing to send or no helper takes it."""
    request = getattr(dispatcher, "_numbax_ahead", None)
    if request is None or request.pid != os.getpid():  # (a forked child sends its own)
        request = dispatcher._numbax_ahead = _Request()
        sent = message() if enabled() else None
        if sent is None or not _send(request, sent):
            request.done = True
    return request.done


def _signature(dispatcher: Any, arguments: Callable[[], tuple]) -> tuple | None:
    """The Numba types of `arguments()`; None where one does not type (the call raises it)."""
    try:
        return tuple(dispatcher.typeof_pyval(a) for a in arguments())
    except Exception:  # noqa: BLE001
        return None


def _runtime_message(function: Any, arguments: Callable[[], tuple]) -> dict | None:
    """The helper's request for a runtime function (its module imported there by name); None
    where its code is on disk already or the arguments do not type."""
    signature = _signature(function, arguments)
    if signature is None or cache.has_saved_signature(function, signature):
        return None
    return {"runtime": function.py_func.__module__, "function": function.py_func.__name__,
            "signature": signature}


def compiling() -> int:
    """Whether the helper has this process's requests to compile now (1) or not (0); ends a
    helper that has left one unanswered for STUCK_S."""
    if not _pending:
        return 0
    helper = _state["helper"]
    oldest = min((r.sent for r in list(_pending.values())), default=time.monotonic())
    if helper is not None and time.monotonic() - oldest > STUCK_S:
        helper.kill()  # (its reader then hands its requests back)
    return 1


SETTLE_QUIET_S = 4.0  # a round of calls after a wait: long enough for the next tier to come


def settle(call: Callable[[], Any], seconds: float, limit_s: float = 120.0) -> None:
    """Runs `call()` until this process's compiles are settled, for benchmarks that must time
    the steady state a training loop reaches (benchmarks/settle.py, the asv suite): `seconds`
    of calls; where those sent the helper work, a wait for it and SETTLE_QUIET_S of calls
    more, until a whole round sent it nothing (or `limit_s` has passed). Kernels pass their
    tiers one by one as their serial work adds up, so requests come over many seconds (the
    batch-2048 bfloat16 MLP step on the 2-core VM: 1, 2, 3, 10 and 14 s after its first call),
    and each helper window runs the program's kernels on one thread fewer."""
    end = time.perf_counter() + limit_s
    span = seconds
    while True:
        before = requests_sent()
        stop = time.perf_counter() + span
        call()
        while time.perf_counter() < stop:
            call()
        if (requests_sent() == before and not compiling()) or time.perf_counter() > end:
            return
        wait(STUCK_S)
        span = max(seconds, SETTLE_QUIET_S)


def requests_sent() -> int:
    """Compiles this process has sent a helper so far (a benchmark warms up until a whole
    warm-up adds none: benchmarks/settle.py)."""
    return _state["next"]


def wait(timeout: float | None = None) -> bool:
    """Waits until the helper has answered every request of this process; whether it has."""
    with _lock:
        return _lock.wait_for(lambda: not _pending, timeout)


def _message(kernel: Any, arguments: Callable[[], tuple]) -> dict | None:
    """What the helper needs: the module's name and generated source, the function, the
    signature, and the module's cache directory; None where it cannot share the code."""
    module = sys.modules.get(getattr(getattr(kernel, "py_func", None), "__module__", ""))
    source = getattr(module, "__numbax_source__", None)
    if source is None or not getattr(module, "__file__", None):
        return None
    signature = _signature(kernel, arguments)
    if signature is None:
        return None
    # (the folder the module loaded from: config.cache_dir may have changed since)
    return {"module": module.__name__, "source": source, "function": kernel.py_func.__name__,
            "signature": signature, "cache_dir": str(Path(module.__file__).parent)}


def _send(request: _Request, message: dict) -> bool:
    try:
        data = pickle.dumps(message)
    except (pickle.PicklingError, TypeError, AttributeError):
        return False
    with _lock:
        if _helper() is None:
            return False
        ident = _state["next"] = _state["next"] + 1
        _pending[ident] = request
        # (a thread writes it: a full pipe would otherwise stop this call until the helper
        # reads the next request, after the compile it is busy with)
        _state["outbox"].put(struct.pack("<QQ", len(data), ident) + data)
    return True


def _helper() -> subprocess.Popen | None:
    """This process's helper, started if none runs (under `_lock`)."""
    helper = _state["helper"]
    if helper is not None and helper.poll() is None:
        return helper
    if _state["started"] >= RESTARTS:
        return None
    _state["started"] += 1
    package_root = str(Path(__file__).resolve().parents[5])  # where `import numbax` resolves
    env = dict(os.environ, NUMBAX_CACHE_DIR=str(config.cache_dir),
               PYTHONPATH=os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")]))
    try:
        helper = subprocess.Popen(  # noqa: S603 - this interpreter, numbax's own module
            [sys.executable, "-m", "numbax._src.compiler.compile_helper"], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError:
        return None
    outbox: queue.SimpleQueue = queue.SimpleQueue()
    _state.update(helper=helper, outbox=outbox)
    threading.Thread(target=_write_requests, args=(helper, outbox),
                     name="numbax-compile-requests", daemon=True).start()
    threading.Thread(target=_read_answers, args=(helper,), name="numbax-compile-answers",
                     daemon=True).start()
    return helper


def _write_requests(helper: subprocess.Popen, outbox: queue.SimpleQueue) -> None:
    """Writes requests to the helper's pipe in order; a helper that cannot be written to is
    ended (its reader then hands every request back to be compiled in line)."""
    while True:
        data = outbox.get()
        try:
            helper.stdin.write(data)
            helper.stdin.flush()
        except (OSError, ValueError):
            helper.kill()
            return


def _read_answers(helper: subprocess.Popen) -> None:
    """Marks requests done as the helper answers; all of them when it ends (they compile in
    line then)."""
    stream = helper.stdout
    try:
        while True:
            head = stream.read(9)
            if len(head) < 9:
                break
            ident, ok = struct.unpack("<Q?", head)
            with _lock:
                request = _pending.pop(ident, None)
                if request is not None:
                    request.ok, request.done = ok, True
                _lock.notify_all()
    except (OSError, ValueError):
        pass
    with _lock:
        if _state["helper"] is helper:
            for request in _pending.values():
                request.done = True
            _pending.clear()
        _lock.notify_all()


@atexit.register
def _close() -> None:
    """Closes the helper's pipe: it ends after the compile in progress."""
    helper = _state["helper"]
    if helper is not None:
        try:
            helper.stdin.close()
        except (OSError, ValueError):
            pass


def _forget_parent_helper() -> None:
    """A forked child has no helper, nor the threads serving it: its requests start afresh
    (and its lock too: the parent's reader may have held it at the fork)."""
    global _lock, _pending
    _lock = threading.Condition()
    _pending = {}
    _state.update(helper=None, outbox=None, started=0)


if hasattr(os, "register_at_fork"):  # (POSIX: Windows does not fork)
    os.register_at_fork(after_in_child=_forget_parent_helper)
