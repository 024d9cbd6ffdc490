"""CPU control flow on the host: a cond/while/scan whose body holds something with no array
form (a host callback, a library call without a compiled form) runs as a Python loop in the
driver over its bodies, each compiled on its own (control_flow.py renders the others as one
@njit function)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src.core import JaxprEqn

Compile = Callable[..., Any]  # (closed jaxpr, donated input positions=frozenset()) -> Executable


def host_cond(eqn: JaxprEqn, compile_closed: Compile) -> Callable[..., list]:
    """cond as a driver-level call of its branches, each compiled on its own."""
    fns = [compile_closed(b) for b in eqn.params["branches"]]

    def run_cond(index, *ops):
        return fns[min(max(int(index), 0), len(fns) - 1)](*ops)

    return run_cond


class _Carry:
    """A host loop's carry, and which of its buffers the loop owns: those the compiled body
    allocated (Executable.out_fresh). The body may write its results into an owned buffer
    (donation: a `x.at[i].set(v)` step updates x in place); the caller's initial buffers, and
    any a body returned as a view of something else, are never handed over."""

    def __init__(self, body, first: int, values: list) -> None:
        self.body, self.first, self.values = body, first, values
        self.owned = [False] * len(values)

    def donated(self) -> list:
        """The body's trailing donation parameters: an owned carry buffer, or None."""
        k0 = self.first
        return [self.values[i - k0] if self.owned[i - k0] else None for i in self.body.donate]

    def update(self, outs) -> None:
        n = len(self.values)
        self.values = list(outs[:n])
        self.owned = [bool(f) for f in self.body.out_fresh[:n]]


def host_while(eqn: JaxprEqn, compile_closed: Compile) -> Callable[..., list]:
    """while as a Python loop over its compiled condition and body (the carry's buffers handed
    to the body once the loop owns them, `_Carry`)."""
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    ncarry = len(eqn.outvars)
    cond_fn = compile_closed(p["cond_jaxpr"])
    body_fn = compile_closed(p["body_jaxpr"], frozenset(range(nb, nb + ncarry)))

    def run_while(*args):
        cc, bc = args[:nc], args[nc:nc + nb]
        carry = _Carry(body_fn, nb, list(args[nc + nb:]))
        while bool(cond_fn(*cc, *carry.values)[0]):
            carry.update(body_fn(*bc, *carry.values, donated=carry.donated()))
        return carry.values

    return run_while


def host_scan(eqn: JaxprEqn, compile_closed: Compile) -> Callable[..., list]:
    """scan as a Python loop over its compiled body, ys written row by row (the carry's
    buffers handed to the body once the loop owns them, `_Carry`)."""
    p = eqn.params
    nconsts, ncarry, length = p["num_consts"], p["num_carry"], p["length"]
    body = compile_closed(p["jaxpr"], frozenset(range(nconsts, nconsts + ncarry)))
    y_avals = [v.aval for v in eqn.outvars[ncarry:]]

    def run_scan(*args):
        consts = args[:nconsts]
        carry = _Carry(body, nconsts, list(args[nconsts:nconsts + ncarry]))
        xs = args[nconsts + ncarry:]
        ys = [np.empty(a.shape, a.dtype) for a in y_avals]
        steps = range(length - 1, -1, -1) if p["reverse"] else range(length)
        for i in steps:
            outs = body(*consts, *carry.values, *[np.asarray(x[i], order="C") for x in xs],
                        donated=carry.donated())
            carry.update(outs)
            for y, o in zip(ys, outs[ncarry:], strict=True):
                y[i] = o
        return [*carry.values, *ys]

    return run_scan
