"""Generated modules by source hash: shared in this process (sys.modules), kept on disk for new
processes in a private directory, verified before use, safe under threads and concurrent
processes, and bounded in size (cache_security.py: trust; cache_bounds.py: size).

Disk layout under config.cache_dir (0700): `numbax_gen_<hash>.py` (0600) per module, `hmac.key`
(0600, the per-user secret), `.lock`, and `__pycache__/` (0700) holding Numba's compiled code
as `<module>.<function>-<line>.pyXY.<key hash>.nbc`, each sealed with an HMAC (and, while a
signature compiles, an empty `<module>.<function>-<line>.pyXY.<signature hash>.lock`:
compile_lock.py, processes take turns). A module is compiled from the source string numbax
generated (compared with the file, never read back as bytecode), so neither a planted .py nor
a planted .pyc runs; Numba's own index/data pickles are never read (`_SignedStore` stands in
for them; with compile_lock's wrapper of Dispatcher.compile, where numbax touches Numba's
internals)."""
from __future__ import annotations

import hashlib
import pickle
import sys
import threading
import types
from pathlib import Path
from typing import Any

import llvmlite
import numba
from numba.core import caching, serialize, sigutils
from numba.core.ccallback import CFunc

from numbax._src.compiler import cache_bounds as bounds
from numbax._src.compiler import cache_security as security
from numbax._src.compiler import compile_lock
from numbax._src.config import config
from numbax._src.version import __version__

MODULE_PREFIX = "numbax_gen_"
# Counters for tests and diagnostics: modules written to disk, read back, exec'd without a file
# (the disk cache off or failing), and plain modules (drivers: never cached, load_plain).
STATS = {"written": 0, "from_disk": 0, "in_memory": 0, "plain": 0}
_dev_hash: list[str] = []
# Loads are quick (Numba compiles later, at a kernel's first call), so one lock serialises
# them: a module is published in sys.modules only once it has finished executing.
_load_lock = threading.RLock()
_sweep_lock = threading.Lock()
_written_since_sweep: dict[str, int] = {}


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


class _CompilerStamp:
    """Keys a cached function by the compiler's sources (`_compiler_hash`) instead of its own
    file's mtime and size. Numba's key missed edits in callees in other files: gemm.py's cached
    dense-layer epilogue kept an old fastmath.tanh_f32 inlined after fastmath.py changed (its
    gelu then differed by an ulp from the unfused program's)."""

    def get_source_stamp(self) -> str:
        return _compiler_hash()


class _KeyNamedCacheFile(caching.IndexDataCacheFile):
    """Numba's index-and-data cache file with each overload's data file named by a hash of its
    key, where Numba takes the first number its index leaves free. Two processes saving
    different signatures at once both loaded the same index, took the same number and wrote
    the same file, and the index the last one wrote could point one signature at the other's
    code: under pytest-xdist a runtime function then failed with "can't unbox array" (a cached
    loop_block of float64 operands called with float32 ones). Named by its key, a data file
    only ever holds its own signature's code; a lost index entry is a miss."""

    def __init__(self, cache_path: str, filename_base: str, source_stamp: Any) -> None:
        super().__init__(cache_path, filename_base, source_stamp)
        self._filename_base = filename_base

    def save(self, key: Any, data: Any) -> None:
        """Writes the overload's data file, then its index entry. A failed write (a full disk,
        a file-size limit: Numba writes a temporary file and renames it, so nothing is left
        half-written) is one warning, not an error in the user's call: a fresh install's first
        jit under `ulimit -f` raised EFBIG from the runtime's helpers."""
        digest = hashlib.sha256(pickle.dumps(key, protocol=4)).hexdigest()[:24]
        name = f"{self._filename_base}.{digest}.nbc"
        try:
            self._save_data(name, data)  # (first: an index entry never names a file not written)
            overloads = self._load_index()
            if overloads.get(key) != name:
                overloads[key] = name
                self._save_index(overloads)
        except OSError as err:
            warn_unsaved(self._cache_path, err)


def warn_unsaved(folder: str, err: Exception) -> None:
    """One warning per process for compiled code that could not be saved (a full disk saves
    nothing anywhere: the runtime's helpers and the program's kernels fail together)."""
    security.warn_once("save", "compiled code", (
        f"numbax: could not save compiled code to {folder!r} ({type(err).__name__}: {err}); "
        "it stays in this process's memory."))


def key_runtime_caches() -> None:
    """Makes Numba's disk cache of the CPU runtime's functions (compiler/cpu/runtime/*.py,
    cache=True) follow the compiler's sources: each of Numba's file-backed locators gets a
    twin, tried first, for those files; and names every cached overload's data file by its
    key (`_KeyNamedCacheFile`, safe when processes save at once). Call before any of them is
    decorated. Also makes processes take turns compiling a signature (compile_lock.py)."""
    compile_lock.install(compile_lock_place)
    caching.IndexDataCacheFile = _KeyNamedCacheFile  # (Numba's Cache looks it up per function)
    classes = caching.CacheImpl._locator_classes
    if any(issubclass(c, _CompilerStamp) for c in classes):
        return
    runtime = str(Path(__file__).parent / "cpu" / "runtime")

    def twin(base: type) -> type:
        class Locator(_CompilerStamp, base):
            @classmethod
            def from_function(cls, py_func: Any, py_file: str) -> Any:
                if str(Path(py_file).parent) != runtime:
                    return None
                return super().from_function(py_func, py_file)
        return Locator

    classes[0:0] = [twin(base) for base in (caching.UserProvidedCacheLocator,
                                            caching.InTreeCacheLocator,
                                            caching.UserWideCacheLocator)]


def compile_lock_place(dispatcher_cache: Any) -> tuple[str, str] | None:
    """(folder, file name base) of a dispatcher's disk cache where numbax keys it: a runtime
    function's Numba cache (a `_CompilerStamp` locator) or a generated module's guarded store;
    None for any other (compile_lock.py locks only these)."""
    if isinstance(dispatcher_cache, _GuardedCache):
        impl = getattr(dispatcher_cache._inner, "_impl", None)
        folder = str(dispatcher_cache._folder)
    elif isinstance(dispatcher_cache, caching.Cache):
        impl = getattr(dispatcher_cache, "_impl", None)
        if not isinstance(getattr(impl, "locator", None), _CompilerStamp):
            return None
        folder = dispatcher_cache.cache_path
    else:
        return None
    base = getattr(impl, "filename_base", None)
    return (folder, base) if base and folder else None


def source_key(source: str, backend: str, codegen_config: tuple) -> str:
    """The disk-cache key of a generated module: its source, the numbax, Numba and llvmlite
    versions, the backend, its codegen knobs, and (in a checkout) the compiler's sources."""
    h = hashlib.sha256()
    for part in (source, __version__, numba.__version__, llvmlite.__version__,
                 backend, repr(codegen_config), _compiler_hash()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def cache_root() -> tuple[Path, bytes] | None:
    """The disk cache's directory and HMAC key, or None (disabled, or unusable: then one
    warning says why, and numbax compiles in memory)."""
    if not config.compilation_cache or config.compilation_cache_max_size == 0:
        return None
    raw = config.cache_dir
    if "\0" in raw:
        security.warn_once("unusable", raw, (
            f"numbax: the cache directory {raw!r} contains a NUL byte, so numbax compiles in "
            "memory (nothing is cached on disk). Set NUMBAX_CACHE_DIR (or numbax.config "
            "'cache_dir') to a valid path."))
        return None
    root = Path(raw)
    try:
        if security.private_dir(root) is None:
            return None
        if security.private_dir(root / bounds.STORE_DIR) is None:
            return None
        return root, security.load_key(root)
    except OSError as err:
        security.warn_once("unusable", raw, (
            f"numbax: the cache directory {raw!r} cannot be used ({err}), so numbax compiles "
            "in memory (nothing is cached on disk). Point NUMBAX_CACHE_DIR (or numbax.config "
            "'cache_dir') at a writable directory of your own, or turn the cache off with "
            "numbax.config.update('compilation_cache', False)."))
        return None


def load_module(source: str, backend: str, codegen_config: tuple) -> types.ModuleType:
    """The module for `source`: shared in this process, read from disk, or written then read.
    Thread-safe: concurrent first calls get the same, fully executed module."""
    # (kept in sys.modules: Numba reloads cached parfors by module name)
    return load_named(MODULE_PREFIX + source_key(source, backend, codegen_config)[:32], source)


def load_named(name: str, source: str) -> types.ModuleType:
    """`load_module` for a module whose name the caller already has (the compile helper's
    parent sends it with the source it generated)."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    with _load_lock:
        module = sys.modules.get(name)
        if module is None:
            module = _load(name, source)
            sys.modules[name] = module
    return module


def load_plain(source: str) -> types.ModuleType:
    """A module of plain Python (a driver: no Numba function in it), executed from memory: not
    written to disk nor kept in sys.modules. Drivers are rendered per shape, so caching them
    would add a file and a module per shape while saving nothing (their source is executed
    either way); each lives as long as the executable holding its functions."""
    module = types.ModuleType(MODULE_PREFIX + "driver")
    exec(compile(source, f"<{module.__name__}>", "exec"), module.__dict__)  # noqa: S102
    STATS["plain"] += 1
    return module


def _load(name: str, source: str) -> types.ModuleType:
    """Executes `source` as module `name`, backed by its cache file when the disk cache works;
    any failure of the disk (full, unwritable, vanished files) falls back to memory."""
    found = cache_root()
    if found is None:
        return _exec(name, source)
    root, key = found
    path = root / f"{name}.py"
    data = source.encode()
    try:
        with bounds.dir_lock(root, exclusive=False):
            written = _ensure_file(path, data)
            module = _exec(name, source, path, key)
    except Exception as err:  # noqa: BLE001 - a disk problem must never reach the user's call
        failure = err
    else:
        if written:
            note_written(root, len(data))
        return module
    module = _exec(name, source)  # a real error in the source raises again here
    security.warn_once("unusable", str(root), (
        f"numbax: could not use the cache directory {str(root)!r} "
        f"({type(failure).__name__}: {failure}), so numbax compiles in memory. If this "
        "repeats, free space or point NUMBAX_CACHE_DIR (or numbax.config 'cache_dir') at a "
        "writable directory of your own."))
    return module


def _ensure_file(path: Path, data: bytes) -> bool:
    """Makes `path` hold exactly `data` (a missing, damaged, foreign or stale file is replaced
    atomically); marks it used. Returns whether it was written."""
    if security.read_private(path) == data:
        bounds.touch(path)
        STATS["from_disk"] += 1
        return False
    security.write_private(path, data)
    STATS["written"] += 1
    return True


def _exec(name: str, source: str, path: Path | None = None,
          key: bytes | None = None) -> types.ModuleType:
    """Executes numbax's own `source` string (never bytes read back from disk, never bytecode)
    as module `name`. With `path`, the module has a `__file__` (so its kernels cache) and every
    Numba dispatcher it defines gets an authenticated store under the cache directory."""
    module = types.ModuleType(name)
    module.__numbax_source__ = source  # (what the compile helper is sent: compile_ahead.py)
    filename = f"<{name}>"
    if path is not None:
        filename = module.__file__ = str(path)
    exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102
    if path is None:
        STATS["in_memory"] += 1
    else:
        _authenticate_dispatchers(module, path.parent / bounds.STORE_DIR, key)
    return module


def note_written(root: Path, nbytes: int) -> None:
    """Counts bytes this process wrote under `root`; once they reach 1/16 of the cap (and at
    the first write), evicts least-recently-used entries down to the cap."""
    cap = config.compilation_cache_max_size
    if cap < 0:
        return
    with _sweep_lock:
        first = str(root) not in _written_since_sweep
        total = _written_since_sweep.get(str(root), 0) + nbytes
        due = first or total >= cap // 16
        _written_since_sweep[str(root)] = 0 if due else total
    if due:
        bounds.evict(root, MODULE_PREFIX, cap)


def clear() -> None:
    """Forgets this process's generated modules (numbax.clear_caches): the next compile
    executes them again (loading compiled code from disk). Live executables keep theirs."""
    with _load_lock:
        for name in [n for n in sys.modules if n.startswith(MODULE_PREFIX)]:
            del sys.modules[name]


# ----------------------------------------------------------------------------- Numba's cache


class _SignedStore:
    """A Numba function's compiled overloads, one file per index key, each sealed with the
    cache's HMAC key. Stands in for Numba's IndexDataCacheFile (same load/save/flush), whose
    .nbi/.nbc pickles Numba loads unchecked: nothing here unpickles a byte before its HMAC
    verifies, and each file holds its own key, so no index can point a signature at another
    signature's code when processes save at once."""

    def __init__(self, folder: Path, base: str, key: bytes) -> None:
        self._folder, self._base, self._key = folder, base, key

    def _name(self, key: Any) -> str:
        return f"{self._base}.{hashlib.sha256(repr(key).encode()).hexdigest()[:24]}.nbc"

    def load(self, key: Any) -> Any:
        name = self._name(key)
        blob = security.read_private(self._folder / name)
        if blob is None:
            return None
        payload = security.unseal(self._key, name, blob)
        if payload is None:
            security.warn_once("unauthenticated", str(self._folder), (
                f"numbax: compiled code in {str(self._folder)!r} failed authentication "
                "(damaged, truncated, or not written by numbax for you); numbax ignores such "
                "files and compiles again."))
            return None
        stored, data = pickle.loads(payload)  # noqa: S301 - authenticated above
        return data if stored == key else None

    def save(self, key: Any, data: Any) -> None:
        name = self._name(key)
        blob = security.seal(self._key, name, serialize.dumps((key, data)))
        security.write_private(self._folder / name, blob)
        note_written(self._folder.parent, len(blob))

    def flush(self) -> None:
        for path in self._folder.glob(f"{self._base}.*.nbc"):
            path.unlink(missing_ok=True)

    def any_saved(self) -> bool:
        return next(self._folder.glob(f"{self._base}.*.nbc"), None) is not None


class _GuardedCache(caching._Cache):
    """A dispatcher's disk cache that never raises into the user's call: a failure to load is
    a miss (Numba compiles), a failure to save (a full disk...) one warning."""

    def __init__(self, inner: caching.Cache, folder: Path) -> None:
        self._inner, self._folder = inner, folder

    @property
    def cache_path(self) -> str:
        return str(self._folder)

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        try:
            return self._inner.load_overload(sig, target_context)
        except Exception as err:  # noqa: BLE001
            security.warn_once("load", str(self._folder), (
                f"numbax: could not load compiled code from {str(self._folder)!r} "
                f"({type(err).__name__}: {err}); compiling again."))
            return None

    def save_overload(self, sig: Any, data: Any) -> None:
        try:
            self._inner.save_overload(sig, data)
        except Exception as err:  # noqa: BLE001
            warn_unsaved(str(self._folder), err)

    def enable(self) -> None:
        self._inner.enable()

    def disable(self) -> None:
        self._inner.disable()

    def flush(self) -> None:
        try:
            self._inner.flush()
        except OSError:
            pass


def _authenticate_dispatchers(module: types.ModuleType, folder: Path, key: bytes) -> None:
    """Gives each caching Numba dispatcher defined by `module` a `_SignedStore` in `folder`,
    behind a `_GuardedCache` (with key_runtime_caches, a touch of Numba's internals; tests/compiler/
    test_cache_security.py checks it). A dispatcher whose cache does not look as expected
    caches nothing rather than read unauthenticated pickles. Generated modules define their
    @njit / @cuda.jit functions at top level (loops.py, rows.py, control_flow.py, cuda/), so
    every one is in the module's namespace."""
    namespace = vars(module)
    for value in list(namespace.values()):
        inner = getattr(value, "_cache", None)
        py_func = getattr(value, "py_func", None)
        if not isinstance(inner, caching.Cache) or \
                getattr(py_func, "__globals__", None) is not namespace:
            continue
        value._cache = _signed(inner, folder, key)


def _signed(inner: caching.Cache, folder: Path, key: bytes) -> caching._Cache:
    """Numba's cache `inner` reading and writing through a `_SignedStore` in `folder`, behind a
    `_GuardedCache`; a NullCache (nothing cached) where `inner` does not look as expected."""
    impl = getattr(inner, "_impl", None)
    if not hasattr(inner, "_cache_file") or not hasattr(impl, "filename_base"):
        return caching.NullCache()
    inner._cache_file = _SignedStore(folder, impl.filename_base, key)
    return _GuardedCache(inner, folder)


def signed_cfunc(fn: Any, sig: Any, **options: Any) -> Any:
    """`numba.cfunc(sig, **options)(fn)` for a function of a generated module (a fused
    kernel's native-pool task), its compiled code kept in the module's authenticated store as
    `_authenticate_dispatchers` keeps the dispatchers'; compiled in memory where the module
    has no file in the cache directory. Why not `cfunc(..., cache=True)`: Numba's own cfunc
    cache writes .nbi/.nbc pickles beside the module and unpickles them unchecked, so a
    planted index ran code at a busy machine's first pooled call
    (tests/compiler/test_cache_security.py)."""
    compiled = CFunc(fn, sigutils.normalize_signature(sig), {}, options)
    store = _module_store(fn)
    if store is not None:
        compiled.enable_caching()
        compiled._cache = _signed(compiled._cache, *store)
    compiled.compile()
    return compiled


def _module_store(fn: Any) -> tuple[Path, bytes] | None:
    """(signed store folder, HMAC key) of the generated module defining `fn`; None where that
    module has no file in the cache directory (compiled in memory)."""
    path = fn.__globals__.get("__file__")
    found = cache_root() if path else None
    if found is None or Path(path).parent != found[0]:
        return None
    return found[0] / bounds.STORE_DIR, found[1]


def has_saved_code(dispatcher: Any) -> bool:
    """Whether the disk cache holds compiled code of `dispatcher` (a generated module's Numba
    function), for any signature."""
    guarded = getattr(dispatcher, "_cache", None)
    store = getattr(getattr(guarded, "_inner", None), "_cache_file", None)
    if not isinstance(guarded, _GuardedCache) or not isinstance(store, _SignedStore):
        return False
    return store.any_saved()


def has_saved_signature(dispatcher: Any, signature: tuple) -> bool:
    """Whether Numba's disk cache indexes `dispatcher`'s code (one of numbax's runtime
    functions) for `signature`: its call then loads it in milliseconds."""
    impl = getattr(dispatcher, "_cache", None)
    store = getattr(impl, "_cache_file", None)
    if store is None:
        return False
    try:
        return impl._index_key(signature, dispatcher.targetctx.codegen()) in store._load_index()
    except Exception:  # noqa: BLE001 - an unreadable index is a miss
        return False


def has_saved_task(fn: Any) -> bool:
    """Whether the disk cache holds compiled code of `fn`, a generated module's function that
    `signed_cfunc` compiles (a pool task): its first use then loads in milliseconds."""
    store = _module_store(fn)
    if store is None:
        return False
    base = getattr(getattr(caching.FunctionCache(fn), "_impl", None), "filename_base", None)
    folder, key = store
    return base is not None and _SignedStore(folder, base, key).any_saved()


def numba_compile_stats() -> dict[str, int]:
    """Numba's cache hits and misses (real compiles) over every loaded kernel."""
    hits = misses = 0
    for name, module in list(sys.modules.items()):
        if not name.startswith(MODULE_PREFIX) or module is None:
            continue
        for fn in [n for n in vars(module) if n.startswith("kernel")]:  # a nest's variants
            stats = getattr(getattr(module, fn, None), "stats", None)
            if stats is not None:
                hits += sum(stats.cache_hits.values())
                misses += sum(stats.cache_misses.values())
    return {"cache_hits": hits, "cache_misses": misses}
