"""grad inside a shard_map body as JAX's check_vma=True defines it.

numbax's collectives work on values (psum transposes to psum), so `grad` inside a body, done on
its own, differentiates each device's program with every device's copy of an input as its own
variable, and seeds every device's output with the cotangent. JAX's types say which values
vary over which manual axes, and that changes two things at the boundary of a vjp, both
linear, so they can be applied there: an output that is the same on the devices of some axes
(invariant over them) is one value, so its cotangent is divided by how many devices repeat it;
and an input invariant over some axes is one variable shared by those devices, so its
cotangent is the psum of the devices' cotangents over them. Which axes a value varies over is
read off the body's jaxpr built so far (replication.propagate)."""
from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.dtypes import kind_of
from numbax._src.interpreters import ad
from numbax._src.lax import elementwise as ew
from numbax._src.lax import parallel
from numbax._src.parallel import replication


class _Body:
    """A shard_map body being traced with check_vma: its builder and its inputs' axes."""

    def __init__(self, builder, vary: dict, manual: frozenset, sizes: dict) -> None:
        self.builder = builder
        self.vary = vary
        self.manual = manual
        self.sizes = sizes
        self.seen = 0  # builder equations already propagated

    def axes(self, x: Any) -> frozenset | None:
        """The manual axes `x` varies over; None when `x` is not a value of this body."""
        if not isinstance(x, core.Tracer):
            return frozenset()
        var = self.builder.tracer_to_var.get(id(x))
        if var is None or getattr(x._trace, "builder", None) is not self.builder:
            return None
        eqns = self.builder.eqns
        replication.propagate(eqns[self.seen:], self.vary, self.manual)
        self.seen = len(eqns)
        return self.vary.get(var, frozenset())


class _Stack(threading.local):
    def __init__(self) -> None:
        self.bodies: list[_Body] = []


_stack = _Stack()


@contextlib.contextmanager
def body(in_tracers: Sequence[Any], in_axes: Sequence[frozenset], manual: frozenset,
         sizes: dict) -> Iterator[None]:
    """Marks a shard_map body (check_vma=True) under trace: `in_tracers` vary over
    `in_axes`."""
    builder = in_tracers[0]._trace.builder if in_tracers else None
    if builder is None:
        yield
        return
    vary = {builder.tracer_to_var[id(t)]: a for t, a in zip(in_tracers, in_axes, strict=True)}
    _stack.bodies.append(_Body(builder, vary, manual, sizes))
    try:
        yield
    finally:
        _stack.bodies.pop()


def _scale(ct: Any, k: int) -> Any:
    if k == 1 or type(ct) is ad.Zero or kind_of(core.get_aval(ct).dtype) not in "fc":
        return ct
    return ew.div(ct, np.array(k, core.get_aval(ct).dtype))


def adjust_vjp(primals_in: Sequence[Any], primals_out: Sequence[Any],
               f_vjp: Callable) -> Callable:
    """ad.vjp_flat's hook: f_vjp with JAX's check_vma cotangents, inside a marked body."""
    if not _stack.bodies:
        return f_vjp
    b = _stack.bodies[-1]
    in_axes = [b.axes(x) for x in primals_in]
    out_axes = [b.axes(y) for y in primals_out]
    if any(a is None for a in [*in_axes, *out_axes]):
        return f_vjp  # values of another trace (a vmap inside the body): left as they are

    def repeats(axes: frozenset) -> tuple:
        return tuple(n for n in b.sizes if n in b.manual and n not in axes)

    def adjusted(*cts):
        cts = [_scale(ct, math.prod(b.sizes[n] for n in repeats(a)))
               for ct, a in zip(cts, out_axes, strict=True)]
        out = []
        for ct, a in zip(f_vjp(*cts), in_axes, strict=True):
            shared = repeats(a)
            if shared and type(ct) is not ad.Zero and \
                    kind_of(core.get_aval(ct).dtype) in "fc":
                ct = parallel.psum_p.bind(ct, axis_name=shared)
            out.append(ct)
        return out

    return adjusted


ad.vjp_hooks[:] = [adjust_vjp]
