"""Warm-up that reaches numbax's steady state before a benchmark times it.

numbax compiles a kernel's threaded variant, and on a fresh install its threaded GEMM, in a
helper process while the one-thread forms run (docs/sharp_bits.md, "the first seconds"). A
row timed inside that window measures the one-thread forms: in a fresh cache the 2-core VM's
batch-2048 bfloat16 step took 74 ms there against 38 steady, the matmul chain 27 against 13.
`warm_until_settled` calls a function for a while, waits for the helper to answer, and warms
again, until a whole warm-up sends the helper nothing new; `settled` measures after it, and
measures again where the timed calls sent the helper work."""
from __future__ import annotations

import time

WAIT_S = 300.0  # the longest wait for one round's compiles
QUIET_S = 4.0  # a warm-up after a wait: long enough for the next kernel's tier to come


def warm(fn, args, seconds: float) -> None:
    """Calls fn(*args) for `seconds` (at least once)."""
    end = time.perf_counter() + seconds
    fn(*args)
    while time.perf_counter() < end:
        fn(*args)


def _requests_sent() -> int:
    """Compiles this process has sent numbax's helper so far (0 without numbax)."""
    import sys
    if "numbax" not in sys.modules:
        return 0
    from numbax._src.compiler.cpu.runtime import compile_ahead
    return compile_ahead.requests_sent()


def settled(measure, fn, args, seconds: float, tries: int = 4):
    """`measure()` after `warm_until_settled(fn, args, seconds)`, again (up to `tries` times)
    where the helper was sent work while it measured: one more kernel passed its tier in
    the timed calls, which then ran some of their time on one thread."""
    for _ in range(tries):
        warm_until_settled(fn, args, seconds)
        before = _requests_sent()
        result = measure()
        if _requests_sent() == before:
            break
    return result


def warm_until_settled(fn, args, seconds: float, limit_s: float = 120.0) -> None:
    """`warm` for `seconds`; where that sent the helper work, wait for it and warm again for
    QUIET_S at least, until a whole warm-up sent it nothing (or `limit_s` has passed). Kernels
    pass their tiers one by one as their serial work adds up, so requests come over many
    seconds (the bfloat16 step at batch 2048 on the 2-core VM: 1, 2, 3, 10 and 14 s after its
    first call)."""
    import sys
    if "numbax" not in sys.modules:
        warm(fn, args, seconds)
        return
    from numbax._src.compiler.cpu.runtime import compile_ahead
    end = time.perf_counter() + limit_s
    span = seconds
    while True:
        before = compile_ahead.requests_sent()
        warm(fn, args, span)
        if compile_ahead.requests_sent() == before and not compile_ahead.compiling():
            return
        if time.perf_counter() > end:
            return
        compile_ahead.wait(WAIT_S)
        span = max(seconds, QUIET_S)
