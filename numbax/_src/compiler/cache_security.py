"""The disk cache's trust rules: private directories (0700), private files (0600), and the
per-user HMAC key that authenticates every pickle numbax lets Numba read back."""
from __future__ import annotations

import errno
import hashlib
import hmac
import os
import secrets
import stat
import tempfile
import threading
import warnings
from pathlib import Path

KEY_NAME = "hmac.key"
KEY_BYTES = 32
_MAGIC = b"numbax-sealed-1\n"
_warned: set[tuple] = set()
_warn_lock = threading.Lock()


class CacheWarning(RuntimeWarning):
    """numbax's disk cache could not be used as configured: it compiles in memory instead."""


def warn_once(kind: str, subject: str, message: str) -> None:
    """One warning per (kind, subject) per process: a bad cache never floods the user."""
    with _warn_lock:
        if (kind, subject) in _warned:
            return
        _warned.add((kind, subject))
    warnings.warn(message, CacheWarning, stacklevel=3)


def _uid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else 0  # st_uid is 0 where there are none


def _open_to_others(mode: int) -> bool:
    return bool(stat.S_IMODE(mode) & 0o077)


def private_dir(path: Path) -> Path | None:
    """`path` as a directory only this user can use, or None (after one warning).

    Missing directories (parents included) are created 0700 whatever the umask; an existing one
    of ours that others could read or write is repaired to 0700 with a warning; one owned by
    another user, or not a directory, is refused with a warning."""
    missing = []
    p = path
    while not os.path.lexists(p) and p != p.parent:
        missing.append(p)
        p = p.parent
    for q in reversed(missing):
        try:
            os.mkdir(q, 0o700)
            os.chmod(q, 0o700)  # the umask may have removed the owner's bits
        except FileExistsError:
            pass
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(path))
    if st.st_uid != _uid():
        warn_once("foreign", str(path), (
            f"numbax: the cache directory {str(path)!r} belongs to user id {st.st_uid}, not to "
            "you, so numbax does not use it and compiles in memory. Point NUMBAX_CACHE_DIR "
            "(or numbax.config 'cache_dir') at a directory of your own."))
        return None
    if stat.S_IMODE(st.st_mode) != 0o700:
        if _open_to_others(st.st_mode):
            warn_once("repaired", str(path), (
                f"numbax: the cache directory {str(path)!r} had mode "
                f"{oct(stat.S_IMODE(st.st_mode))}, open to other users; numbax set it to 0o700 "
                "and trusts no file in it that it cannot verify."))
        os.chmod(path, 0o700)
    return path


def read_private(path: Path) -> bytes | None:
    """The bytes of `path` if it is a regular file of ours that no one else can write (never
    through a symlink), else None: a missing, foreign or loose file is as good as absent."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (not stat.S_ISREG(st.st_mode) or st.st_uid != _uid()
                or stat.S_IMODE(st.st_mode) & 0o022):
            return None
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """os.write until done (a full disk raises OSError here)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_private(path: Path, data: bytes) -> None:
    """Writes `path` atomically with mode 0600 whatever the umask: readers see the old file or
    the whole new one, never a part. Raises OSError (full disk...) with nothing left behind."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        try:
            os.fchmod(fd, 0o600)
            write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load_key(root: Path) -> bytes:
    """The per-user secret of the cache at `root` (`hmac.key`, 0600), created on first use by
    exactly one process (a hard link never replaces an existing key); a damaged, loose or
    foreign key file is replaced."""
    path = root / KEY_NAME
    for _ in range(3):
        key = read_private(path)
        if key is not None and len(key) == KEY_BYTES and not _loose(path):
            return key
        if os.path.lexists(path):
            if key is not None:
                break  # damaged or loose: replaced below
            continue  # foreign, or linked by another process just now: look again
        fresh = _publish_key(root, path, replace=False)
        if fresh is not None:
            return fresh
    return _publish_key(root, path, replace=True)


def _publish_key(root: Path, path: Path, replace: bool) -> bytes | None:
    """Writes a new key and links it to `path` (None if another process linked one first) or,
    with `replace`, puts it in place of whatever is there."""
    fresh = secrets.token_bytes(KEY_BYTES)
    fd, tmp = tempfile.mkstemp(dir=root, prefix=".tmp-")
    try:
        try:
            os.fchmod(fd, 0o600)
            write_all(fd, fresh)
        finally:
            os.close(fd)
        if replace:
            os.replace(tmp, path)
            return fresh
        try:
            os.link(tmp, path)
        except FileExistsError:
            return None
        return fresh
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _loose(path: Path) -> bool:
    """Whether others could read the key file (then it is no secret)."""
    try:
        return _open_to_others(os.lstat(path).st_mode)
    except OSError:
        return True


def seal(key: bytes, name: str, payload: bytes) -> bytes:
    """`payload` with an HMAC-SHA256 over the file's name and contents."""
    mac = hmac.new(key, name.encode() + b"\0" + payload, hashlib.sha256).digest()
    return _MAGIC + mac + payload


def unseal(key: bytes, name: str, blob: bytes) -> bytes | None:
    """The payload of a sealed file if its HMAC verifies under `key`, else None (empty,
    truncated, garbage, renamed or planted files all fail here, before anything unpickles)."""
    head = len(_MAGIC) + hashlib.sha256().digest_size
    if len(blob) < head or not blob.startswith(_MAGIC):
        return None
    mac, payload = blob[len(_MAGIC):head], blob[head:]
    want = hmac.new(key, name.encode() + b"\0" + payload, hashlib.sha256).digest()
    return payload if hmac.compare_digest(mac, want) else None
