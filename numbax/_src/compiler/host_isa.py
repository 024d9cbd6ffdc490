"""Numba's CPU target: keep the host's AVX2/AVX-512 when Numba's own choice would drop it.

Numba builds one LLVM target machine per process, when the first ``@njit`` function is
decorated, from ``numba.core.config.CPU_NAME``/``CPU_FEATURES`` (the ``NUMBA_CPU_NAME`` /
``NUMBA_CPU_FEATURES`` variables) or else LLVM's host CPU name and features, with every
``avx*`` feature stripped when ``config.ENABLE_AVX`` is off (Numba turns it off for CPU names
it distrusts, such as ``nocona`` reported by some virtual machines, or when
``/proc/cpuinfo`` does not list ``avx``). Without AVX the vectorised exp/log/tanh of
``fastmath.py`` run on 128-bit SSE lanes: ``NUMBA_CPU_NAME=generic`` makes the exp pass of
logsumexp ~4-5x slower than the host's AVX-512 code (docs/performance.md).

`apply` runs before numbax decorates its first Numba function. When the user has not chosen
a target (no ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES``/``NUMBA_ENABLE_AVX``), LLVM reports
AVX2 on this host (which LLVM only does when the OS saves the AVX state), and Numba's target
would lack AVX2 or name no known CPU, it sets ``config.CPU_NAME``/``CPU_FEATURES`` to the
host's features and a CPU name LLVM knows (the host's, or the ``x86-64-v3``/``x86-64-v4``
level the features reach).
This changes Numba's target for the whole process, as the environment variables would; Numba's
caches key on the target, so cached code for another target is not reused.
"""
from __future__ import annotations

# Names LLVM falls back to, or that Numba strips AVX for: no tuning to keep.
_UNTRUSTED_NAMES = frozenset({"", "generic", "x86-64", "nocona", "host"})
_AVX512 = ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
# (reason, CPU name) once applied; None while Numba's own choice stands.
APPLIED: tuple[str, str] | None = None


def choose(host_name: str, host_features: dict, numba_features: str,
           user_set: bool) -> tuple[str, str] | None:
    """(reason, CPU name) to give Numba instead of its own choice, or None to keep it."""
    if user_set or not host_features.get("avx2"):
        return None
    numba_has_avx2 = "+avx2" in numba_features.split(",")
    if numba_has_avx2 and host_name not in _UNTRUSTED_NAMES:
        return None
    level = "x86-64-v4" if all(host_features.get(f) for f in _AVX512) else "x86-64-v3"
    name = level if host_name in _UNTRUSTED_NAMES else host_name
    reason = "numba target lacked avx2" if not numba_has_avx2 else f"host cpu {host_name!r}"
    return reason, name


def apply() -> tuple[str, str] | None:
    """Set Numba's CPU name/features as `choose` says, if its target machine is not built yet."""
    global APPLIED
    import llvmlite.binding as ll
    from numba.core import codegen, config
    from numba.core.registry import cpu_target

    if "_toplevel_target_context" in vars(cpu_target):
        return APPLIED  # Numba's target machine exists already: too late to choose
    try:
        host = ll.get_host_cpu_features()
    except RuntimeError:
        return None
    seen = getattr(getattr(config, "_env_reloader", None), "old_environ", None) or {}
    user_set = (config.CPU_NAME is not None or config.CPU_FEATURES is not None
                or "NUMBA_ENABLE_AVX" in seen)
    pick = choose(ll.get_host_cpu_name(), dict(host), codegen.get_host_cpu_features(), user_set)
    if pick is not None:
        config.CPU_NAME = pick[1]
        config.CPU_FEATURES = host.flatten()
        APPLIED = pick
    return APPLIED
