"""One process compiles a cached function's signature at a time; the others wait and load it.

Numba checks its disk cache, and on a miss compiles and saves, with nothing between processes:
two processes that need a signature nobody has saved yet both compile it. On a cold cache that
is the rule, not the exception: pytest-xdist's two workers start on neighbouring tests and
both compiled the same runtime functions (117 s of the 290 s each worker spent compiling
numbax's runtime in tests/compiler on the 2-core VM), and a user's processes (notebooks, a
pool of workers, several scripts) do the same after an install. `install` wraps Numba's
`Dispatcher.compile`: for a function whose disk cache is numbax's (the runtime's cached
functions, cache.key_runtime_caches; generated modules' dispatchers, cache._GuardedCache) a
signature not compiled in this process is compiled under an exclusive lock on a file beside
the cache's files (removed when the compile is done). The process that waited finds the code
on disk when it gets the lock (Numba's `compile` looks there first) and loads it in
milliseconds. What it saves is CPU: the waiter's own call takes as long as compiling would
have, but the core it would have compiled on is free for the machine's other work.

The lock is taken inside Numba's process-wide compiler lock, so a thread holds file locks only
while it is the thread compiling, and the nested compiles of one function (a kernel typing the
runtime functions it calls) take the callees' locks in call order; a cycle would need two
functions that call each other. A lock not granted within WAIT_S (a process stopped while it
held one) is given up on: that process compiles without it, as before."""
from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from numba.core import dispatcher, sigutils
from numba.core.compiler_lock import global_compiler_lock

WAIT_S = 120.0  # 3x the longest compile seen (a loop kernel: ~40 s on the 2-core VM); past it a
# waiter compiles too (a duplicate, as before), so a stopped holder costs it this at most
_POLL_S = 0.02
_held = threading.local()  # lock paths this thread holds (a recursive compile takes none)


def install(place: Callable[[Any], tuple[str, str] | None]) -> None:
    """Wraps Numba's Dispatcher.compile once per process (see the module's docstring).
    `place(cache)`: the (folder, file name base) of a dispatcher's disk cache where numbax
    keeps it (cache.compile_lock_place), else None (such functions compile as before)."""
    compile_unlocked = dispatcher.Dispatcher.compile
    if getattr(compile_unlocked, "numbax_locked", False):
        return

    def compile(self: Any, sig: Any) -> Any:  # noqa: A001 - Numba's method name
        with global_compiler_lock:
            path = _lock_path(self, sig, place)
            if path is None:
                return compile_unlocked(self, sig)
            with _file_lock(path):
                return compile_unlocked(self, sig)

    compile.numbax_locked = True
    compile.__doc__ = compile_unlocked.__doc__
    dispatcher.Dispatcher.compile = compile


def _lock_path(disp: Any, sig: Any, place: Callable[[Any], tuple[str, str] | None]) \
        -> str | None:
    """The lock file of `disp`'s signature `sig` in its cache's folder; None where `disp` does
    not cache through numbax, or already has `sig` in this process."""
    folder_base = place(getattr(disp, "_cache", None))
    if folder_base is None:
        return None
    args, _ = sigutils.normalize_signature(sig)
    if tuple(args) in disp.overloads:
        return None
    folder, base = folder_base
    digest = hashlib.sha256(repr(args).encode()).hexdigest()[:20]
    return os.path.join(folder, f"{base}.{digest}.lock")


@contextlib.contextmanager
def _file_lock(path: str) -> Iterator[None]:
    """Holds an exclusive flock on `path` (created 0600, never following a link) for the
    block, and removes the file before letting go of it, so the cache keeps no lock files;
    re-entered by the same thread, or not granted within WAIT_S, or where the file cannot be
    made (a read-only folder, a full disk), the block runs without it."""
    held = _held.__dict__.setdefault("paths", set())
    fd = None if path in held else _locked_fd(path)
    if fd is None:
        yield
        return
    held.add(path)
    try:
        yield
    finally:
        held.discard(path)
        with contextlib.suppress(OSError):
            os.unlink(path)  # (before the unlock: a waiter granted this file sees it gone)
        os.close(fd)  # closing lets go of the flock


def _locked_fd(path: str) -> int | None:
    """A descriptor of `path` holding its exclusive lock, or None. A file granted after its
    holder removed it is not the lock any more: the lock is taken again on the path's file."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError:
            return None
        if not _acquire(fd, deadline):
            os.close(fd)
            return None
        try:
            now = os.stat(path, follow_symlinks=False)
            mine = os.fstat(fd)
            if (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
                return fd
        except OSError:
            pass
        os.close(fd)


def _acquire(fd: int, deadline: float) -> bool:
    """Polls for the exclusive lock until `deadline` (a blocking flock could not give up)."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as err:
            if err.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                return False
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)
