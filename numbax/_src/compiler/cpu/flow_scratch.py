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

A carry's next value outlives its step, so it cannot move out that way; but where nothing else
keeps it past the next step, two arrays made before the loop can take turns holding it
(`alternating`): a step writes the carry's next value into the array the current value is not
in. A tanh recurrence over 64 floats took 0.29 ms for 2000 steps with an `np.empty` a step,
0.18 with two arrays taking turns (4 floats: 0.15 -> 0.07). Not where the value is stored by
the outer loop of a nest with a loop inside (control_flow.Function.loop's second run): there
LLVM, unable to tell the two arrays from those the step reads, made the outer loop 2-3x
slower (a Metropolis sampler's 1024 log-densities, each with its (1024, 2) proposal's select
inside: 6 -> 16 ms for 500 steps); a new array it knows to alias nothing.

In a loop whose body is only light arithmetic (no transcendental function, no loop or branch
inside: `_light`), a carry of at most WRITE_BACK_MAX elements does not take turns: its next
value goes into one array made before the loop and is copied, element by element, into the
carry's own array (a copy made at the loop's entry) at the end of each step (`written_back`).
Binding the carry's name to the other array of two costs Numba reference counts every step
(atomic increments and decrements): 20,000 steps of a `while_loop` updating 4 floats took 0.71
ms taking turns, 0.14 written back, a scan adding rows of 16 floats 0.056 -> 0.037, gradient
descent on 256 weights 0.11 -> 0.09. Where a step's work is a chain of costly functions
(`tanh(0.9 c + x)`) the counts hide behind it and the copy adds two stores and loads to the
chain from one step to the next: 16 floats 0.092 -> 0.117 ms written back, so those take turns.
A loop's entry (`enter_loop`) copies the carries its steps write into: those written back and
those its body updates in place (`updated_carries`).
"""
from __future__ import annotations

import re

from numbax._src.compiler import registry
from numbax._src.compiler.cpu.flow_runs import loop_shape
from numbax._src.core import Jaxpr, Var
from numbax._src.lax import indexing as ix

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


# elements (a scan adding rows: 4-16 floats 0.61-0.71x the time taking turns, 64 1.01-1.16x,
# 256 0.89x)
WRITE_BACK_MAX = 256


def take_turns(fn, body: Jaxpr, first: int, count: int,
               own: frozenset) -> dict[Var, tuple[str, str, str] | None]:
    """Each carry's next value that can take turns (`alternating`) -> names for its two arrays
    and the flag (made before the loop by `fn`, the control_flow.Function rendering the loop,
    where its `new_array` first binds the value), or None where it is written back instead
    (a `_light` body's carry of at most WRITE_BACK_MAX elements: one array made before the
    loop, copied into the carry each step)."""
    light = _light(body)
    return {var: None if light and var.aval.size <= WRITE_BACK_MAX
            else (fn.fresh(), fn.fresh(), fn.fresh())
            for var in alternating(body, first, count, own).values()}


def _light(body: Jaxpr) -> bool:
    """Whether every equation of `body` has a CPU form that calls no costly function (the
    registry's `heavy`) and none is a loop or a branch."""
    for eqn in body.eqns:
        low = registry.lowering(eqn.primitive, "cpu")
        if low is None or low.heavy or low.statements is not None:
            return False
    return True


def written_back(turns: dict[Var, tuple[str, str, str] | None], body: Jaxpr,
                 count: int) -> frozenset[int]:
    """The carry positions of `take_turns`'s answer written back: copied at the loop's entry
    (the steps write into the carry's array), and copied into at each step's end."""
    return frozenset(k for k, v in enumerate(body.outvars[:count])
                     if isinstance(v, Var) and v in turns and turns[v] is None)


def alternating(body: Jaxpr, first: int, count: int, own: frozenset[int]) -> dict[int, Var]:
    """The carries of a sequential loop whose body is `body` (its carries the invars from
    `first`, the first `count` outvars) that two arrays made before the loop can hold in
    turn: position -> the body's value for the next carry. That value must be a new array
    (a loop nest's: `loop_shape`) given to this carry only, and neither it nor the carry's
    current value may reach another carry through an equation that can alias (any that is not
    a loop nest's): then nothing holds a step's value after the next step, when its array is
    written again. Carries updated in place (`own`) are written into already."""
    outs = body.outvars[:count]
    made = {v for e in body.eqns if loop_shape(e) is not None for v in e.outvars}
    chosen = {}
    for k, (carry, new) in enumerate(zip(body.invars[first:first + count], outs)):
        if k in own or not isinstance(new, Var) or new not in made or not new.aval.ndim \
                or outs.count(new) > 1:
            continue
        others = [v for j, v in enumerate(outs) if j != k]
        if not any(v in _may_alias(body, {carry, new}) for v in others):
            chosen[k] = new
    return chosen


def _may_alias(body: Jaxpr, roots: set[Var]) -> set[Var]:
    """`roots` and the values of `body` that may share an array with one of them."""
    alias = set(roots)
    for eqn in body.eqns:
        if loop_shape(eqn) is None and any(x in alias for x in eqn.invars if isinstance(x, Var)):
            alias.update(eqn.outvars)
    return alias


def updated_carries(body: Jaxpr, first: int, avals: list) -> frozenset[int]:
    """The carry positions a loop owns: array carries its body updates with
    dynamic_update_slice, copied at entry (`enter_loop`: once a loop, not once a step) so the
    body may write into them (control_flow.Function.update)."""
    updated = {e.invars[0] for e in body.eqns if e.primitive is ix.dynamic_update_slice_p}
    return frozenset(k for k, v in enumerate(body.invars[first:first + len(avals)])
                     if v in updated and avals[k].ndim)


def enter_loop(fn, carry: list[str], init: list[str], avals: list, own: frozenset,
               written_back: frozenset, outside: list[str], lines: list[str], pad: str) -> None:
    """The loop's entry assignment `carry = init` in `fn` (the control_flow.Function rendering
    it), copying the carries the loop owns (`own`) and those its steps copy their next values
    into (`written_back`)."""
    vals = [f"{v}.copy()" if k in own | written_back and v not in fn.views else v
            for k, v in enumerate(init)]
    fn.assign(carry, vals, avals, lines, pad)
    fn.own_carries.update(carry[k] for k in own)
    fn.outside.update(a for a in outside if isinstance(a, str))


def copy_back(fn, name: str, scratch: str, aval, lines: list[str], pad: str) -> None:
    """`name`'s array = `scratch`'s, element by element (both C-contiguous, one shape), through
    flat views the loop's frame takes once: a written-back carry's step end."""
    size = aval.size
    if aval.ndim > 1:
        flat = fn.fresh(), fn.fresh()
        fn.frame.lines += [f"{flat[0]} = {name}.reshape(({size},))",
                           f"{flat[1]} = {scratch}.reshape(({size},))"]
        name, scratch = flat
    q = fn.fresh()
    lines += [f"{pad}for {q} in range({size}):", f"{pad}    {name}[{q}] = {scratch}[{q}]"]
