"""The backend-neutral front of compilation: inline call-like equations, check, simplify and
partition into a kernel graph; the backend renders what comes out."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from numbax._src import typecheck
from numbax._src.compiler import fusion, hoist, inline, passes, unroll, update_pads
from numbax._src.compiler.backend import Backend, Executable, Program
from numbax._src.core import ClosedJaxpr, Jaxpr


def prepare(jaxpr: Jaxpr) -> Jaxpr:
    """The jaxpr with call-like equations inlined, scans that ask for it unrolled, typechecked,
    loop bodies' updates of a fill written as pads (update_pads.py) and simplified, and
    loop-invariant equations moved out of loop bodies (after the bodies' simplification, which
    inlines their scalar broadcasts into the readers: hoisted, those would be arrays; the
    equations two loops both hoisted merged by CSE), then small work on constants alone moved
    first (hoist.constants_first)."""
    jaxpr = typecheck.check_jaxpr(unroll.unroll_scans(inline.inline_calls(jaxpr)))
    jaxpr = passes.simplify(update_pads.pads_in_bodies(jaxpr))
    jaxpr = passes.dce(passes.cse(hoist.hoist_invariants(jaxpr)))
    return typecheck.check_jaxpr(hoist.constants_first(jaxpr))


def compile_with(closed: ClosedJaxpr, backend: Backend, donated: frozenset = frozenset(),
                 name: str = "", device: Any = None) -> Executable:
    """`closed` compiled by `backend` (donated: input positions outputs may be written into)."""
    jaxpr = backend.rewrite(prepare(closed.jaxpr))
    nodes = fusion.partition(jaxpr, backend.fusible, backend.op_cost, backend.split_unrelated)
    consts: Sequence[Any] = closed.consts
    exe = backend.build(Program(jaxpr, nodes, list(consts), donated, name, device))
    exe.out_weak = tuple(x.aval.weak_type for x in closed.jaxpr.outvars)
    return exe
