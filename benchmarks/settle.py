"""Warm-up that reaches numbax's steady state before a benchmark times it.

numbax compiles a kernel's threaded variant, and on a fresh install its threaded GEMM, in a
helper process while the one-thread forms run (docs/sharp_bits.md, "the first seconds"). A
row timed inside that window measures the one-thread forms: in a fresh cache the 2-core VM's
batch-2048 bfloat16 step took 74 ms there against 38 steady, the matmul chain 27 against 13.
`warm_until_settled` calls a function for a while, waits for the helper to answer, and warms
again, until a whole warm-up sends the helper nothing new (numbax's `compile_ahead.settle`,
which the asv suite uses too); `settled` measures after it, and measures again where the
timed calls sent the helper work."""
from __future__ import annotations

import time


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


def warm_until_settled(fn, args, seconds: float) -> None:
    """`warm` for `seconds`, and on until numbax's compile helper has nothing left from these
    calls (numbax's compile_ahead.settle); only `warm` where numbax is not imported."""
    import sys
    if "numbax" not in sys.modules:
        warm(fn, args, seconds)
        return
    from numbax._src.compiler.cpu.runtime import compile_ahead
    compile_ahead.settle(lambda: fn(*args), seconds)
