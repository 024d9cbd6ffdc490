"""Generated modules by source hash: in memory (sys.modules), then on disk for Numba's cache."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import types
from pathlib import Path

import llvmlite
import numba

from numbax._src.config import config
from numbax._src.version import __version__

MODULE_PREFIX = "numbax_gen_"
# Counters for tests and diagnostics: modules written to disk, read back, exec'd without a file.
STATS = {"written": 0, "from_disk": 0, "in_memory": 0}
_dev_hash: list[str] = []


def _compiler_hash() -> str:
    """A hash of the compiler's own sources: Numba misses edits in callees of cached kernels."""
    if not _dev_hash:
        h = hashlib.sha256()
        folder = Path(__file__).parent
        for path in sorted(folder.rglob("*.py")):
            h.update(str(path.relative_to(folder)).encode())
            h.update(path.read_bytes())
        _dev_hash.append(h.hexdigest())
    return _dev_hash[0]


def source_key(source: str, backend: str, codegen_config: tuple) -> str:
    """The disk-cache key of a generated module: its source, the numbax, Numba and llvmlite
    versions, the backend, its codegen knobs, and (in a checkout) the compiler's sources."""
    h = hashlib.sha256()
    for part in (source, __version__, numba.__version__, llvmlite.__version__,
                 backend, repr(codegen_config), _compiler_hash()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _usable_dir() -> Path | None:
    """The cache directory (created 0700), or None when disabled or not safely ours."""
    if not config.compilation_cache:
        return None
    path = Path(config.cache_dir)
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
    except OSError:
        return None
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        return None
    return path


def _trusted_file(path: Path, source: str) -> bool:
    """Whether an existing entry is ours, not writable by others, and holds exactly `source`."""
    try:
        st = path.stat()
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            return False
        return path.read_text(encoding="utf-8") == source
    except (OSError, UnicodeDecodeError):
        return False


def _write_atomic(path: Path, source: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".py")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(source)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_module(source: str, backend: str, codegen_config: tuple) -> types.ModuleType:
    """The module for `source`: shared in this process, read from disk, or written then read."""
    name = MODULE_PREFIX + source_key(source, backend, codegen_config)[:32]
    module = sys.modules.get(name)
    if module is not None:
        return module
    folder = _usable_dir()
    if folder is None:
        return _exec_module(name, source)
    path = folder / f"{name}.py"
    if _trusted_file(path, source):
        STATS["from_disk"] += 1
    else:
        try:
            if path.exists():
                path.unlink()  # corrupt, foreign or stale: never trusted, rebuilt
            _write_atomic(path, source)
        except OSError:
            return _exec_module(name, source)
        STATS["written"] += 1
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Numba reloads cached parfors by module name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _exec_module(name: str, source: str) -> types.ModuleType:
    """A module with no file (disk cache off): Numba compiles it without caching."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)  # noqa: S102
    STATS["in_memory"] += 1
    return module


def numba_compile_stats() -> dict[str, int]:
    """Numba's cache hits and misses (real compiles) over every loaded kernel."""
    hits = misses = 0
    for name, module in list(sys.modules.items()):
        if not name.startswith(MODULE_PREFIX) or module is None:
            continue
        for fn in ("kernel", "kernel_serial"):  # a loop nest's variants
            stats = getattr(getattr(module, fn, None), "stats", None)
            if stats is not None:
                hits += sum(stats.cache_hits.values())
                misses += sum(stats.cache_misses.values())
    return {"cache_hits": hits, "cache_misses": misses}
