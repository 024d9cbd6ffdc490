"""What a sequential loop's body inside compiled control flow does once, before the loop: it
allocates its temporaries there and takes their flat views there.

Why: Numba allocates each `np.empty` on the heap and builds each view (`x.ravel()`) as a new
array with its own reference counts. A 2-state Kalman filter's scan body made ~20 arrays of
1-4 elements and 38 flat views a step: 1.9 ms for 1000 steps, 0.27 once both moved out of the
loop (the 1x1 factorisation and solves left aside), where jax.jit's whole filter took 1.0.

A frame per loop being rendered (`LoopFrame`; None for a prange, whose iterations run at once
and need arrays of their own) collects these lines, and control_flow.Function puts them just
before the loop's header. A temporary moves out only when its array does not outlive a step
(flow_runs.outliving: a body's outputs are a loop's next carries); a view moves out only when
its array is the same one every step (`invariant`): a name bound before the loop that the loop
does not rebind (not a carry of this loop), or a temporary this frame allocates.
"""
from __future__ import annotations

import re

_FRESH = re.compile(r"v(\d+)$")  # control_flow.Function.fresh's names


class LoopFrame:
    """The lines one sequential loop's body runs once, before the loop, and which names stay
    bound to one array for the whole loop."""

    def __init__(self, first_fresh: int, carries: frozenset[str]) -> None:
        self.first_fresh = first_fresh  # Function.fresh's count when the body began
        self.carries = carries  # names the loop rebinds at the end of each step
        self.lines: list[str] = []
        self.allocated: set[str] = set()

    def allocate(self, name: str, line: str) -> None:
        self.lines.append(line)
        self.allocated.add(name)

    def invariant(self, name: str) -> bool:
        """Whether `name` names one array for the whole loop."""
        if name in self.allocated:
            return True
        if not name.isidentifier() or name in self.carries:
            return False
        fresh = _FRESH.match(name)
        return fresh is None or int(fresh.group(1)) < self.first_fresh
