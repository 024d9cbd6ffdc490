"""Bounds on what compiling keeps: an LRU mapping for in-memory executables, and the disk
cache's size cap with least-recently-used eviction that is safe while other processes read."""
from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # not POSIX: no cross-process lock; only the grace period protects loaders
    fcntl = None

LOCK_NAME = ".lock"
STORE_DIR = "__pycache__"
GRACE_S = 120.0  # an entry used this recently is never evicted: another process may be loading it
STALE_TMP_S = 3600.0  # a temporary file this old was left by a killed process
LOW_WATER = 0.9  # eviction frees down to this fraction of the cap, so it runs rarely


class LRUCache(MutableMapping):
    """A thread-safe mapping that keeps the `maxsize` most recently used entries (a drop-in
    for the dicts of jit's executables and fast paths).

    `maxsize` is an int or a callable read at each insertion (so a config option can change
    it); `get` is lock-free, which keeps it cheap on jit's dispatch path."""

    def __init__(self, maxsize: int | Callable[[], int]) -> None:
        self._maxsize = maxsize
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    @property
    def maxsize(self) -> int:
        size = self._maxsize() if callable(self._maxsize) else self._maxsize
        return max(int(size), 1)

    def get(self, key: Hashable, default: Any = None) -> Any:
        value = self._data.get(key, _MISSING)
        if value is _MISSING:
            return default
        try:
            self._data.move_to_end(key)
        except KeyError:  # evicted by another thread meanwhile: the value is still valid
            pass
        return value

    def __getitem__(self, key: Hashable) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: Hashable, value: Any) -> None:
        limit = self.maxsize
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > limit:
                self._data.popitem(last=False)

    def __delitem__(self, key: Hashable) -> None:
        with self._lock:
            del self._data[key]

    def pop(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            return self._data.pop(key, default)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __bool__(self) -> bool:
        return bool(self._data)

    def __iter__(self) -> Iterator:
        return iter(list(self._data))

    def items(self) -> list:  # snapshots: neither reorder entries nor race with eviction
        return list(self._data.items())

    def values(self) -> list:
        return list(self._data.values())

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __repr__(self) -> str:
        return f"LRUCache({len(self._data)}/{self.maxsize} entries)"


_MISSING = object()


# ----------------------------------------------------------------------------- the directory lock


@contextlib.contextmanager
def dir_lock(root: Path, exclusive: bool) -> Iterator[bool]:
    """A lock over the cache directory shared by every process: loaders hold it shared while
    they write and import a module, eviction holds it exclusive (and gives up at once rather
    than wait). Yields whether it is held (always, without fcntl: not POSIX)."""
    if fcntl is None:
        yield True
        return
    try:
        fd = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0),
                     0o600)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB if exclusive else fcntl.LOCK_SH)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# ----------------------------------------------------------------------------- eviction


def touch(path: Path) -> None:
    """Marks an entry used now (its .py file's mtime is its last-use stamp; atime is not
    reliable under noatime/relatime mounts)."""
    with contextlib.suppress(OSError):
        os.utime(path)


def _entries(root: Path, prefix: str) -> tuple[dict[str, list], list[Path]]:
    """Every cache entry (the module's .py and the Numba files named after it) as
    {module: [last use, bytes, paths (str)]}, and the stale temporary files. An entry's last use is
    its .py file's mtime, or its newest file's when the .py is gone."""
    entries: dict[str, list] = {}
    stamps: dict[str, float] = {}
    stale = []
    now = time.time()
    # os.scandir and plain strings: a full cache (~50,000 files at the default cap) took 0.5 s
    # with listdir, Path joins and lstat, at the first compile of every process
    for folder in (root, root / STORE_DIR):
        try:
            listing = os.scandir(folder)
        except OSError:
            continue
        with listing:
            for item in listing:
                name = item.name
                is_tmp = name.startswith(".tmp-")
                if not is_tmp and not name.startswith(prefix):
                    continue
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                if is_tmp:
                    if now - st.st_mtime > STALE_TMP_S:
                        stale.append(Path(item.path))
                    continue
                module = name.split(".", 1)[0]
                entry = entries.setdefault(module, [st.st_mtime, 0, []])
                if st.st_mtime > entry[0]:
                    entry[0] = st.st_mtime
                entry[1] += st.st_size
                entry[2].append(item.path)
                if folder == root and name == module + ".py":
                    stamps[module] = st.st_mtime
    for module, stamp in stamps.items():
        entries[module][0] = stamp
    return entries, stale


def disk_usage(root: Path, prefix: str) -> int:
    """Bytes held by the cache entries under `root`."""
    entries, _ = _entries(root, prefix)
    return sum(size for _, size, _ in entries.values())


def evict(root: Path, prefix: str, max_bytes: int, grace_s: float = GRACE_S) -> int:
    """Deletes least-recently-used entries until the cache holds at most LOW_WATER * max_bytes
    (entries used within `grace_s` seconds are kept even over the cap). Runs only when no other
    process is loading from the directory (the exclusive lock). Returns the bytes freed.

    The directory is first scanned without the lock (reading only): the common sweep, of a
    cache under its cap with no stale temporary files, never holds it, since other processes'
    loads wait for it (a full cache takes ~0.3 s to scan)."""
    entries, stale = _entries(root, prefix)
    total = sum(size for _, size, _ in entries.values())
    if total <= max_bytes and not stale:
        return 0
    with dir_lock(root, exclusive=True) as held:
        if not held:
            return 0
        entries, stale = _entries(root, prefix)  # again: it may have changed meanwhile
        for path in stale:
            with contextlib.suppress(OSError):
                os.unlink(path)
        total = sum(size for _, size, _ in entries.values())
        if total <= max_bytes:
            return 0
        target = int(max_bytes * LOW_WATER)
        recent = time.time() - grace_s
        freed = 0
        for _, (stamp, size, paths) in sorted(entries.items(), key=lambda kv: kv[1][0]):
            if total - freed <= target or stamp > recent:
                break
            # the .py first: a process that finds it gone writes it again, never half of it
            for path in sorted(paths, key=lambda p: not p.endswith(".py")):
                with contextlib.suppress(OSError):
                    os.unlink(path)
            freed += size
        return freed
