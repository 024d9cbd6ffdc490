"""Numba's CPU target: keep the host's wide vectors when Numba's own choice would not use them.

Numba builds one LLVM target machine per process, when the first ``@njit`` function is
decorated, from ``numba.core.config.CPU_NAME``/``CPU_FEATURES`` (the ``NUMBA_CPU_NAME`` /
``NUMBA_CPU_FEATURES`` variables) or else LLVM's host CPU name and features, with every
``avx*`` feature stripped when ``config.ENABLE_AVX`` is off (Numba turns it off for CPU names
it distrusts, such as ``nocona`` reported by some virtual machines, or when
``/proc/cpuinfo`` does not list ``avx``). The vectorised exp/log/tanh of ``fastmath.py`` then
run on narrower lanes than the host has:

* without AVX, on 128-bit SSE: ``NUMBA_CPU_NAME=generic`` makes the exp pass of logsumexp
  5x slower on the AVX-512 dev VM and 2x slower on the Emerald Rapids GPU host;
* on Sapphire/Emerald Rapids, LLVM's tuning for the host name prefers 256-bit vectors
  (``prefer-256-bit``), so the AVX-512 host runs ymm code: measured there (2026-11-26,
  ``benchmarks/cpu_isa_probe.py``, one thread, 1e7 elements) the float64 exp pass took
  20.6-26.6 ms with ymm and 16.3 ms with zmm, the float32 exp loop 8.4-11.2 vs 7.4 ms.

`apply` runs when this module is imported, first thing in ``numbax/__init__.py``, before
numbax decorates its first Numba function. When the user has not chosen
a target (no ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES``/``NUMBA_ENABLE_AVX``) and LLVM reports
AVX2 on this host (which LLVM only does when the OS saves the AVX state), it sets
``config.CPU_NAME``/``CPU_FEATURES`` to the host's features and a CPU name LLVM knows (the
host's, or the ``x86-64-v3``/``x86-64-v4`` level its features reach) if Numba's target would
lack AVX2 or name no known CPU; and it adds ``-prefer-256-bit`` on the AVX-512 CPUs in
`_PREFER_512` (measured: Emerald Rapids; Sapphire Rapids has the same cores). This changes
Numba's target for the whole process, as the environment variables would; Numba's caches key
on the target, so cached code for another target is not reused. Not measured: many threads
running zmm code at once (AVX-512 frequency licences are mild on these CPUs).
"""
from __future__ import annotations

# Names LLVM falls back to, or that Numba strips AVX for: no tuning to keep.
_UNTRUSTED_NAMES = frozenset({"", "generic", "x86-64", "nocona", "host"})
_AVX512 = ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
# AVX-512 CPUs whose LLVM tuning prefers 256-bit vectors, where 512-bit measured faster.
_PREFER_512 = frozenset({"sapphirerapids", "emeraldrapids"})
_NO_PREFER_256 = "-prefer-256-bit"
# (reason, CPU name, extra features) once applied; None while Numba's own choice stands.
APPLIED: tuple[str, str, str] | None = None


def choose(host_name: str, host_features: dict, numba_features: str,
           user_set: bool) -> tuple[str, str, str] | None:
    """(reason, CPU name, features to add to the host's) to give Numba instead of its own
    choice, or None to keep it."""
    if user_set or not host_features.get("avx2"):
        return None
    numba_has_avx2 = "+avx2" in numba_features.split(",")
    avx512 = all(host_features.get(f) for f in _AVX512)
    if numba_has_avx2 and host_name not in _UNTRUSTED_NAMES:
        if avx512 and host_name in _PREFER_512:
            return "prefer 512-bit vectors", host_name, _NO_PREFER_256
        return None
    level = "x86-64-v4" if avx512 else "x86-64-v3"
    name = level if host_name in _UNTRUSTED_NAMES else host_name
    reason = "numba target lacked avx2" if not numba_has_avx2 else f"host cpu {host_name!r}"
    return reason, name, _NO_PREFER_256 if avx512 else ""


def numba_target_has(feature: str) -> bool:
    """Whether Numba's CPU target enables `feature` (e.g. "avx512f"): the features it is, or
    will be, built with (``NUMBA_CPU_FEATURES``, `apply`'s choice, else the host's less what
    Numba strips). Code written for wider vectors than this runs split into narrower ones."""
    from numba.core import codegen, config

    try:
        features = config.CPU_FEATURES if config.CPU_FEATURES is not None \
            else codegen.get_host_cpu_features()
    except RuntimeError:
        return False
    return f"+{feature}" in features.split(",")


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
        config.CPU_FEATURES = host.flatten() + ("," + pick[2] if pick[2] else "")
        APPLIED = pick
    return APPLIED


apply()
