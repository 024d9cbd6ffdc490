"""Serial or parallel on a busy machine, chosen by measuring each call site.

On a machine where other processes keep the cores busy, a parallel region ends at a barrier,
and a worker that is not running holds it up until the scheduler gives it a slice (a few ms).
What that costs depends on the host and on the layer, not on the kernel alone (numbers:
docs/performance.md, "Busy machines, measured per call site"):
* Numba's OpenMP workers spin after a region; beside busy loops on every core a short
  parallel kernel took 8-22x its one-thread time (16-core Xeon: selu 1e6 9.5 against 1.1 ms,
  a row logsumexp of 1000^2 19 against 1.6 ms; the 2-core dev VM alike).
* A long one can still win: matmul 2000^2 on the 2-core VM 83 ms on two threads against 107
  on one, the batch-2048 MLP step on 16 busy cores 112 against 148 ms, while matmul 1000^2
  there lost (44 against 27 ms).
So a fixed rule loses somewhere. Each parallel call site of a driver (a kernel at its shapes, or
a product of a shape) keeps the mean time of its serial and of its parallel runs made while
the machine was busy. It runs serially first; only a site whose serial runs take at least
PARALLEL_WORTH_S (where one slice's wait is a fraction of the time) tries the parallel arm, a
few times, and then runs the faster one, trying the other again now and then: more rarely
the more it lost by.

Only busy calls are timed (`threads.threads_for` stamps them); on a quiet machine the thread
rule decides alone and a site costs one attribute test a call. Except at a `quiet` site,
timed on a quiet machine too, which tries its parallel arm from REGION_WORTH_S of serial time
for each parallel region a call enters: compiled control flow whose threads run loop nests
alone. Its nests choose their prange when rendered, from an estimate of scalar code, and
then enter one parallel region an iteration: a 4096 x 3 RK4 step's nest, estimated at 76 us,
took 3.5 us on one VM core, and 200 steps ran 1.1x slower on the VM's two threads and 2x on
16 of the Xeon's cores, as each region's wake-up and join outweighed its share of the work.
"""
from __future__ import annotations

import threading
import time

SERIAL, PARALLEL = 0, 1
FIRST_TRIES = 2  # runs of each arm before the means are trusted
ALPHA = 0.3  # weight of a new time in an arm's mean
RETRY_EVERY = 8  # the losing arm is tried again every RETRY_EVERY x (its loss ratio) calls,
RETRY_MAX = 256  # and at least every RETRY_MAX calls
PARALLEL_WORTH_S = 0.004  # a site tries parallel runs once its serial ones take this long
# ... or this long, where its parallel arm is the native pool (native_pool.py), which waits
# for no descheduled worker: no slice to amortise, only a wake-up and a few parts' packing
POOL_WORTH_S = 0.0005
# A fused kernel's first pooled run compiles its pool task (kernel_tasks.py: 1-2 s, then in
# Numba's disk cache): its site tries the pool once its busy serial runs have taken this long
# in all, so short-lived programs (a test, a script's few calls) never pay for the compile
TASK_TIER_S = 2.0
# A quiet site of compiled control flow tries its parallel arm once its serial runs take this
# long for each parallel region a call enters: about what a region's wake-up and join cost
# on 16 cores, which a region must save to pay (the arm is a second compile of the loop, ~1 s)
REGION_WORTH_S = 30e-6


class Site:
    """One parallel call site: each arm's mean time (seconds) and run count while busy, and the
    stamp of the call in flight (`start`), if any."""

    __slots__ = ("mean", "runs", "calls", "started", "owner", "worth", "tier", "spent", "quiet")

    def __init__(self, worth: float | None = None, tier: float = 0.0,
                 quiet: bool = False) -> None:
        # the serial mean from which the parallel arm is tried, and the serial time the site
        # spends in all before its first parallel try (the parallel arm's compile to earn)
        self.worth = PARALLEL_WORTH_S if worth is None else worth
        self.tier = tier
        self.quiet = quiet  # timed on a quiet machine too
        self.spent = 0.0
        self.mean = [0.0, 0.0]
        self.runs = [0, 0]
        self.calls = 0
        self.started = 0.0  # perf_counter() of a busy call in flight, 0.0 when none
        self.owner = 0  # the thread that made it (another thread's call is not timed)

    def choose(self, busy: bool = True) -> int:
        """The arm for this call (SERIAL or PARALLEL), made while the machine is `busy` (else
        at a `quiet` site); stamps the call's start."""
        self.calls += 1
        if self.runs[SERIAL] < FIRST_TRIES:
            arm = SERIAL
        elif self.runs[PARALLEL] < FIRST_TRIES:
            worth = max(self.worth, PARALLEL_WORTH_S) if busy and self.quiet else self.worth
            worth = self.mean[SERIAL] >= worth and self.spent >= self.tier
            arm = PARALLEL if worth else SERIAL
        else:
            arm = SERIAL if self.mean[SERIAL] <= self.mean[PARALLEL] else PARALLEL
            loss = self.mean[1 - arm] / max(self.mean[arm], 1e-9)
            if self.calls % min(RETRY_MAX, max(RETRY_EVERY, int(RETRY_EVERY * loss))) == 0:
                arm = 1 - arm
        self.owner = threading.get_ident()
        self.started = time.perf_counter()
        return arm


def measured(site: Site | None, threads: int) -> None:
    """Ends a call at `site` that ran on `threads` threads (0: a library's own count, every
    core): a busy call's time goes into the mean of the arm that ran (1 thread: SERIAL).
    None (a call that had no site: a quiet machine, a small product) is nothing to record."""
    if site is None or not site.started:
        return
    elapsed = time.perf_counter() - site.started
    site.started = 0.0
    if site.owner != threading.get_ident():
        return
    arm = SERIAL if threads == 1 else PARALLEL
    if arm == SERIAL:
        site.spent += elapsed
    runs = site.runs[arm]
    # an arm's first run may compile its variant (a loop's parallel one: seconds, which would
    # keep the arm from winning for hundreds of calls): its mean starts from its second run
    site.mean[arm] = elapsed if runs <= 1 else (1 - ALPHA) * site.mean[arm] + ALPHA * elapsed
    site.runs[arm] = runs + 1
