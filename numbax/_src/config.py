"""Flags that change numbax's behaviour; the only module that reads environment variables."""
from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any


def _env_flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return raw.strip().lower() not in ("0", "false", "no", "off", "")


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    try:
        return int(raw) if raw else default
    except ValueError:
        return default


def _xla_force_device_count() -> int | None:
    for token in os.environ.get("XLA_FLAGS", "").split():
        if token.startswith("--xla_force_host_platform_device_count="):
            try:
                return int(token.split("=", 1)[1])
            except ValueError:
                return None
    return None


def _default_cache_dir() -> str:
    explicit = os.environ.get("NUMBAX_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "numbax")


_CPU_MATMUL_CHOICES = ("auto", "numbax", "blas")


class Config:
    """numbax.config: `config.update(name, value)` and attribute reads (`config.jax_enable_x64`)."""

    _defaults: dict[str, Any] = {
        "jax_enable_x64": _env_flag("NUMBAX_ENABLE_X64", True),
        "jax_disable_jit": _env_flag("NUMBAX_DISABLE_JIT", False),
        "jax_debug_nans": _env_flag("NUMBAX_DEBUG_NANS", False),
        "jax_enable_checks": _env_flag("NUMBAX_ENABLE_CHECKS", False),
        "compilation_cache": _env_flag("NUMBAX_COMPILATION_CACHE", True),
        "cache_dir": _default_cache_dir(),
        "num_cpu_devices": _env_int("NUMBAX_NUM_CPU_DEVICES", _xla_force_device_count() or 1),
        "platforms": os.environ.get("NUMBAX_PLATFORMS") or os.environ.get("JAX_PLATFORMS") or "",
        # Threads of compiled CPU code: 0 = automatic (Numba's pool for large parallel loops
        # and products, BLAS single-threaded while Numba's threads may spin); n >= 1 runs
        # both pools with n threads where work is large enough to share.
        "cpu_threads": _env_int("NUMBAX_CPU_THREADS", 0),
        # Matrix products of compiled CPU code: "auto" (numbax's AVX-512 GEMM where numpy's
        # BLAS lacks AVX-512 kernels and the host has them), "numbax" or "blas" (np.dot).
        "cpu_matmul": os.environ.get("NUMBAX_CPU_MATMUL") or "auto",
    }

    def __init__(self) -> None:
        object.__setattr__(self, "_values", dict(self._defaults))
        object.__setattr__(self, "_local", threading.local())
        object.__setattr__(self, "_n_overrides", 0)  # active overrides, all threads
        object.__setattr__(self, "_lock", threading.Lock())
        self._refresh()

    def _refresh(self) -> None:
        """`_fast_ctx`: the trace context when plain jit dispatch may skip every other check
        (no override active in any thread, jit enabled, no NaN checks), else None."""
        v = self._values
        fast = None
        if not self._n_overrides and not v["jax_disable_jit"] and not v["jax_debug_nans"]:
            fast = (v["jax_enable_x64"], v["jax_debug_nans"])
        object.__setattr__(self, "_fast_ctx", fast)

    def update(self, name: str, value: Any) -> None:
        if name not in self._values:
            known = ", ".join(sorted(self._values))
            raise AttributeError(f"numbax.config.update: unknown option {name!r}. Known: {known}.")
        if name == "cpu_threads" and (not isinstance(value, int) or isinstance(value, bool)
                                      or value < 0):
            raise ValueError(
                f"numbax.config.update: cpu_threads has value {value!r}, expected an int >= 0. "
                "Pass 0 for automatic or a thread count."
            )
        if name == "cpu_matmul" and value not in _CPU_MATMUL_CHOICES:
            raise ValueError(
                f"numbax.config.update: cpu_matmul has value {value!r}, expected one of "
                f"{', '.join(map(repr, _CPU_MATMUL_CHOICES))}.")
        self._values[name] = value
        self._refresh()

    def __getattr__(self, name: str) -> Any:
        overrides = getattr(self._local, "overrides", None)
        if overrides and name in overrides:
            return overrides[name]
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"numbax.config has no option {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self.update(name, value)

    @contextlib.contextmanager
    def override(self, name: str, value: Any) -> Iterator[None]:
        """Thread-local temporary value of one option."""
        if name not in self._values:
            raise AttributeError(f"numbax.config has no option {name!r}")
        overrides = getattr(self._local, "overrides", None)
        if overrides is None:
            overrides = self._local.overrides = {}
        missing = object()
        previous = overrides.get(name, missing)
        overrides[name] = value
        with self._lock:
            object.__setattr__(self, "_n_overrides", self._n_overrides + 1)
            self._refresh()
        try:
            yield
        finally:
            if previous is missing:
                del overrides[name]
            else:
                overrides[name] = previous
            with self._lock:
                object.__setattr__(self, "_n_overrides", self._n_overrides - 1)
                self._refresh()

    def trace_context(self) -> tuple:
        """The options that change what a trace produces: part of every jit cache key."""
        fast = self._fast_ctx
        if fast is not None:
            return fast
        return (self.jax_enable_x64, self.jax_debug_nans)


config = Config()


def disable_jit(disable: bool = True):
    """Context manager: run jitted functions eagerly, op by op (for debugging)."""
    return config.override("jax_disable_jit", disable)
