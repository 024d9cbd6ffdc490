"""CPU control flow under jit: one cond/while/scan equation becomes one @njit function.

The sub-jaxprs are rendered as NumPy array expressions that Numba's nopython mode supports
(each primitive's `array` lowering, or its scalar form on 0-d values), with native
`if`/`while`/`for` and, for a scan without carry (vmap's `map`), a `prange` over examples. An
equation holding a primitive with neither form falls back to a Python loop in the driver that
calls the sub-jaxprs compiled on their own (host_flow.py).
"""
from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator

import numpy as np

from numbax._src import core
from numbax._src.compiler import fusion, ir, narrow_floats, registry
from numbax._src.compiler.cpu import (
    flow_loops,
    flow_runs,
    flow_scratch,
    indices,
    loop_matvec,
    loop_products,
    loops,
    work,
)
from numbax._src.compiler.cpu.loops import PRANGE_MIN
from numbax._src.compiler.cpu.modules import PRANGE_ONLY, header, runtime_imports
from numbax._src.compiler.cpu.runtime import blas_parts, threads
from numbax._src.compiler.registry import Fusion, Unsupported
from numbax._src.compiler.source import cast, clamped_start, dtype_ctor, render_scalar
from numbax._src.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from numbax._src.lax import dot as ld
from numbax._src.lax import indexing as ix
from numbax._src.lax import reductions as lr
from numbax._src.lax import shape_ops as ls

# A product's estimated serial time per multiply-add: threads pay for it from
# blas_parts.THREADED_MACS up, as they do for a nest from PARALLEL_MIN_NS.
_NS_PER_MAC = threads.PARALLEL_MIN_NS / blas_parts.THREADED_MACS


def is_control_flow(eqn: JaxprEqn) -> bool:
    """Whether the CPU renders `eqn` as compiled control flow (cond, while, scan)."""
    low = registry.lowering(eqn.primitive, "cpu")
    return low is not None and low.statements is not None


class Function:
    """Naming state while one control-flow equation is rendered into one function."""

    def __init__(self, serial: bool = False) -> None:
        self.serial = serial  # every loop a plain one (a kernel's one-thread variant)
        self.count = 0
        self.views: set[str] = set()
        # a one-element loop nest's kept values -> their scalars (which stay defined after the
        # nest's one trip): a reshape of one to 0-d reads the scalar, not the array's memory
        self.one_element: dict[Var, str] = {}
        self.parallel = False
        self.pp = core.PrintNames()
        # In-place updates (`update`): the carry names of the loops being rendered whose
        # arrays the function owns (copied at entry, never shared with another name), and the
        # names another name may alias (an identity's input, control flow's operands).
        self.own_carries: set[str] = set()
        self.shared: set[str] = set()
        self.outside: set[str] = set()  # names a loop body reads from outside it
        # Threads: loop nests and products large enough run on the Numba threads the driver
        # gives the kernel (`work_ns`: the largest such region's estimated serial time). A
        # product (`products`) calls loop_products.kind()'s block function, whose thread count
        # and OpenBLAS entry or scratch (`product_words` float64 words a thread) are the
        # kernel's last parameters. Inside a prange (`in_prange`) all is serial. The parallel
        # regions a call enters (`regions`: each prange times the trips of the loops around
        # it, `trips` while rendering); `nests_only`: no product's blocks, no map over examples
        self.work_ns = 0.0
        self.trips = 1
        self.regions = 0
        self.while_trips = 1  # the part of `trips` that while loops' assumed trips make
        self.site_regions = 0  # `regions` with each while loop run once (ir.Kernel)
        self.nests_only = True
        self.products = False
        self.product_words = 0
        self.matvec_blocks = False  # matrix-vector products on row blocks (`loop_threads` too)
        self.in_prange = False
        # A sequential loop's body allocates its temporaries and takes their flat views once,
        # before the loop (flow_scratch.py: a frame per loop being rendered, None for a prange),
        # except the values that outlive a step (`escaping`: flow_runs.outliving).
        self.frames: list[flow_scratch.LoopFrame | None] = []
        self.escaping: set[Var] = set()
        # a carry's next value -> the two arrays it takes turns in and the flag choosing the
        # one a step writes (flow_scratch.alternating), or None where it is written back
        # (flow_scratch.WRITE_BACK_MAX); `backed`: those given their one array so far
        self.turns: dict[Var, tuple[str, str, str] | None] = {}
        self.backed: dict[Var, str] = {}

    def fresh(self) -> str:
        self.count += 1
        return f"v{self.count - 1}"

    def new_array(self, var: Var | None, name: str, shape, lines: list[str], pad: str,
                  note: str = "", dtype=None, turns: bool = True) -> None:
        """`name = np.empty(shape)` for `var`'s value (None: the renderer's own scratch, of
        `dtype`): before the loop around it when the loop is sequential and the value does not
        outlive a step (flow_scratch.py)."""
        alloc = f"np.empty({shape}, {dtype_ctor(var.aval.dtype if var else dtype)})"
        frame = self.frame
        if var in self.turns and turns and self.turns[var] is None:  # written back
            frame.allocate(name, f"{name} = {alloc}{note}")
            self.backed[var] = name
        elif var in self.turns and turns:  # (`turns`: False where it is not worth it)
            first, second, flag = self.turns[var]
            frame.lines += [f"{first} = {alloc}", f"{second} = {alloc}", f"{flag} = False"]
            lines += [f"{pad}{name} = {first} if {flag} else {second}{note}",
                      f"{pad}{flag} = not {flag}"]
        elif frame is None or var in self.escaping:
            lines.append(f"{pad}{name} = {alloc}{note}")
        else:
            frame.allocate(name, f"{name} = {alloc}{note}")

    @property
    def frame(self) -> flow_scratch.LoopFrame | None:
        """The innermost loop's frame (None outside loops and in a prange)."""
        return self.frames[-1] if self.frames else None

    @contextlib.contextmanager
    def body(self, lines: list[str], pad: str, sequential: bool, carries: list[str],
             turns: dict[Var, tuple[str, str, str] | None] | None = None) -> Iterator[None]:
        """Renders a loop's body (the loop's header the last of `lines`, at `pad`; `carries`
        the names it rebinds each step; `turns`: its carries' next values that take turns in
        two arrays): what the body does once goes just before the header (flow_scratch.py)."""
        header = len(lines) - 1
        frame = flow_scratch.LoopFrame(self.count, frozenset(carries)) if sequential else None
        self.frames.append(frame)
        self.turns.update(turns or {})
        try:
            yield
        finally:
            self.frames.pop()
            for var in turns or {}:  # (a body jaxpr may be another loop's too)
                del self.turns[var]
                self.backed.pop(var, None)
        if frame is not None:
            lines[header:header] = [pad + line for line in frame.lines]

    def read(self, env: dict, x) -> str:
        if isinstance(x, Literal):
            return render_scalar(x.val, x.aval.dtype)
        return env[x]

    def owned(self, name: str, aval: core.ShapedArray) -> str:
        """`name`, copied if it may alias an argument (so loop-carried types unify)."""
        return f"{name}.copy()" if name in self.views and aval.ndim else name

    def jaxpr(self, closed: ClosedJaxpr | Jaxpr, args: list[str], lines: list[str],
              pad: str, copied: frozenset[int] = frozenset()) -> list[str]:
        """Renders a (closed) jaxpr applied to `args`; returns the names of its outputs (those
        at the positions `copied` are copied by the caller: a scan's rows of ys)."""
        jaxpr, consts = (closed.jaxpr, closed.consts) if isinstance(closed, ClosedJaxpr) \
            else (closed, [])
        env: dict[Var, str] = {}
        for v, c in zip(jaxpr.constvars, consts, strict=True):
            if np.shape(c) != ():
                raise Unsupported("array constant")
            env[v] = render_scalar(core.to_numpy(c), v.aval.dtype)
        for v, a in zip(jaxpr.invars, args, strict=True):
            env[v] = a
        jaxpr = Jaxpr(jaxpr.constvars, jaxpr.invars,
                      flow_runs.clustered(jaxpr.eqns, is_control_flow), jaxpr.outvars)
        users = flow_runs.users(jaxpr)
        self.escaping |= flow_runs.outliving(jaxpr, copied)
        # elementwise equations of one shape, waiting to become one loop; and the run before
        # it (`outer`) where this one's shape extends that one's, to nest inside its loop
        run: list[int] = []
        outer: list[int] = []
        made: set[Var] = set()  # the run's values
        run_shape = None
        for j, eqn in enumerate(jaxpr.eqns):
            shape = flow_runs.loop_shape(eqn)
            if shape is not None and (not run or shape == run_shape and
                                      flow_runs.joins(eqn, made)):
                run.append(j)
                run_shape = shape
                made.update(eqn.outvars)
            elif run and shape is None and flow_runs.goes_first(eqn, is_control_flow(eqn), [
                    jaxpr.eqns[k] for k in outer + run]):
                self.eqn(eqn, env, lines, pad)  # reads no value of the run: may go first
            elif shape is not None and not outer and shape[:len(run_shape)] == run_shape:
                outer, run, run_shape, made = run, [j], shape, set(eqn.outvars)
            else:
                self.loops(jaxpr, outer, run, users, env, lines, pad)
                outer, run, run_shape = [], ([j] if shape is not None else []), shape
                made = set(eqn.outvars)
                if shape is None and eqn.primitive is ix.dynamic_update_slice_p:
                    self.update(eqn, env, lines, pad, self._may_overwrite(eqn, j, users, env))
                elif shape is None:
                    self.eqn(eqn, env, lines, pad)
        self.loops(jaxpr, outer, run, users, env, lines, pad)
        return [self.read(env, x) for x in jaxpr.outvars]

    def loops(self, jaxpr: Jaxpr, outer: list[int], run: list[int],
              users: dict[Var, set[int]], env: dict, lines: list[str], pad: str) -> None:
        """The run, and the one before it (`outer`, if any): the run's loops inside the outer
        one's where it reads the outer run's values only broadcast along its extra axes
        (flow_runs.nests: an RK4 step's stacks of the columns computed for each row), unless
        the nest would be a prange (whose body Numba outlines: there the inner loop kept the
        middle one from vectorising, and an n-body step's `r2 ** -1.5` ran 4x slower)."""
        if outer and flow_runs.nests([jaxpr.eqns[j] for j in outer],
                                     [jaxpr.eqns[j] for j in run]):
            plan = flow_runs.plan(jaxpr, outer, run, users)
            if self.outer_loop(plan[1][0][0], plan[3], decide=False) == "range":
                self.loop(jaxpr, plan, env, lines, pad)
                return
        self.loop(jaxpr, flow_runs.plan(jaxpr, outer, [], users), env, lines, pad)
        self.loop(jaxpr, flow_runs.plan(jaxpr, run, [], users), env, lines, pad)

    def loop(self, jaxpr: Jaxpr, plan: tuple, env: dict, lines: list[str], pad: str) -> None:
        """Elementwise equations of one shape as one loop nest of scalar lines (their loop
        forms, as in loops.body); only values read after the run are stored into arrays. An
        array expression per equation costs Numba 0.1-0.2 s of compile time each. The plan's
        second run, if any: equations over the run's shape and more axes, their loops inside
        the run's, reading the run's values as its scalars."""
        runs, shapes, kept, work = plan
        if not runs[0]:
            return
        for k, (r, shape) in enumerate(zip(runs, shapes, strict=True)):
            for eqn in r:
                out = eqn.outvars[0]
                if out in kept:  # (no turns for the outer loop of two: flow_scratch.py)
                    env[out] = self.fresh()
                    self.new_array(out, env[out], shape, lines, pad, turns=k or not runs[1])
        first = self.outer_loop(shapes[0][0], work)
        value: dict[Var, str] = {}
        idx: list[str] = []
        views: dict[str, str] = {}  # a 2-D or larger array -> its flat view (`x.ravel()`)
        start = len(lines)
        for r, shape in zip(runs, shapes, strict=True):
            if not r:
                continue
            for d in range(len(idx), len(shape)):
                idx.append(self.fresh())
                kind = first if d == 0 else "range"
                bound = flow_runs.loop_bound(shape[d], r) if kind == "range" and \
                    d == len(shape) - 1 else shape[d]
                lines.append(f"{pad}{'    ' * d}for {idx[d]} in {kind}({bound}):")
            self._scalar_lines(r, idx, kept, value, env, views if first == "range" else None,
                               lines, pad + "    " * len(shape))
            if math.prod(shape) == 1:
                self.one_element.update((e.outvars[0], value[e.outvars[0]]) for e in r)
        frame = self.frame
        once = [a for a in views if frame.invariant(a)] if frame else []  # (in order: the
        for a in once:  # source, and so its cache key, is the same in every process)
            frame.lines.append(f"{views[a]} = {a}.ravel()")
        lines[start:start] = [f"{pad}{v} = {a}.ravel()" for a, v in views.items()
                              if a not in once]

    def _scalar_lines(self, eqns: list[JaxprEqn], idx: list[str], kept: set[Var],
                      value: dict[Var, str], env: dict, views: dict[str, str] | None,
                      lines: list[str], inner: str) -> None:
        """The run's scalar lines at loop index `idx`. Arrays of two and more axes are read
        and written through flat views (`views`; indices.flat_index), except inside a
        prange, whose body Numba outlines into a function of its own, where the views' loads
        did not vectorise either and a 256-body n-body step ran 3x slower than with the
        arrays' own indexing."""
        at = ", ".join(idx)
        if views is not None and len(idx) > 1:
            at, shape = self.fresh(), eqns[0].outvars[0].aval.shape
            lines.append(f"{inner}{at} = {indices.flat_index(idx, shape)}")

        def array(x: Var) -> str:
            if views is None or x.aval.ndim < 2:
                return env[x]
            return views.setdefault(env[x], self.fresh())

        def read(x) -> str:
            if isinstance(x, Literal):
                return render_scalar(x.val, x.aval.dtype)
            if x in value:
                return value[x]
            return env[x] if x.aval.ndim == 0 else f"{array(x)}[{at}]"

        for eqn in eqns:
            out, x = eqn.outvars[0], eqn.invars[0] if eqn.invars else None
            if eqn.primitive is ls.pad_p:
                expr = indices.pad_read(eqn, idx, array(x), views is not None, read)
            elif views is not None and isinstance(x, Var) and x.aval.ndim > 1 and \
                    x not in value and fusion.kind_of(eqn) is Fusion.INDEX_MAP:
                expr = f"{array(x)}[{indices.map_index(eqn, idx)}]"
            else:
                expr = loops.scalar_expr(eqn, idx, False, value, env, read)
            value[out] = self.fresh()
            lines.append(f"{inner}{value[out]} = {expr}  # {core.pp_eqn(eqn, self.pp, 0)}")
            if out in kept:
                lines.append(f"{inner}{array(out)}[{at}] = {value[out]}")

    def outer_loop(self, trips: int, work_ns: float, decide: bool = True) -> str:
        """"prange" for the outer loop of a nest whose estimated serial time pays for threads
        (runtime/threads.py's PARALLEL_MIN_NS), else "range" (not `decide`: only which)."""
        if self.serial or self.in_prange or trips < 2 or work_ns < threads.PARALLEL_MIN_NS:
            return "range"
        if not decide:
            return "prange"
        self.parallel = True
        self.work_ns = max(self.work_ns, work_ns)
        self._region()
        return "prange"

    def product(self, eqn: JaxprEqn, ins: list[str], lines: list[str], pad: str) -> str | None:
        """A float matrix product's lines (loop_products.render: large ones a prange over blocks
        of C on the kernel's threads, none inside another prange; a matrix-vector product:
        loop_matvec.py); its result's name, or None for np.dot's array form."""
        matvec = loop_matvec.product(eqn, ins)
        if matvec is not None:
            return self._matvec(eqn, matvec, lines, pad)
        rendered = loop_products.render(eqn, ins, self.fresh, lines, pad,
                                        not (self.in_prange or self.serial))
        if rendered is None:
            return None
        name, macs, blocks, words = rendered
        self.products = True
        self.product_words = max(self.product_words, words)
        if blocks:
            self._blocks_region(macs * _NS_PER_MAC)
        return name

    def _blocks_region(self, work_ns: float) -> None:
        """Notes a prange over a product's blocks (estimated at `work_ns` serially): the kernel
        runs on threads, not as nests alone, entering one more region per trip around it."""
        self.parallel = True
        self.nests_only = False
        self.work_ns = max(self.work_ns, work_ns)
        self._region()

    def _region(self) -> None:
        """Counts a parallel region entered on each trip of the loops being rendered."""
        self.regions += self.trips
        self.site_regions += self.trips // self.while_trips

    def _matvec(self, eqn: JaxprEqn, p: loop_matvec.Product, lines: list[str],
                pad: str) -> str:
        """A matrix-vector product written into a buffer of the loop's (a new array a step
        where it outlives the step), its gemv calls on row blocks where they pay."""
        out = eqn.outvars[0]
        name = self.fresh()
        self.new_array(out, name, out.aval.shape, lines, pad)
        itemsize = out.aval.dtype.itemsize

        def scratch(buffer: str, shape: str) -> None:
            self.new_array(None, buffer, shape, lines, pad, dtype=out.aval.dtype)

        if loop_matvec.render(p, name, out.aval.shape, itemsize, self.fresh, scratch, lines, pad,
                              not (self.in_prange or self.serial)):
            self.matvec_blocks = True
            self._blocks_region(loop_matvec.work_ns(p, itemsize))
        return name

    def _view(self, eqn: JaxprEqn, ins: list[str]) -> bool:
        """Whether a window or reshape (`flow_runs.VIEW_FORMS`) stays a view of its operand (a
        name in `views`, copied wherever it must own its array): a window of an array no step
        writes in place (not an owned carry), a reshape of such a view (`x[i]`'s squeeze). The
        others copy, as every array form did: a view of a temporary could reach a carry."""
        if eqn.primitive not in flow_runs.VIEW_FORMS or not eqn.outvars[0].aval.ndim or \
                not eqn.invars[0].aval.ndim or ins[0] in self.own_carries:
            return False
        return eqn.primitive is ix.dynamic_slice_p or ins[0] in self.views

    def _may_overwrite(self, eqn: JaxprEqn, j: int, users: dict, env: dict) -> bool:
        """Whether a dynamic_update_slice may write into its operand's array: the operand is an
        owned loop carry (`own_carries`) that no other name may alias, read by no later
        equation of this jaxpr and not returned (its old value is dead after the update)."""
        x = eqn.invars[0]
        if not isinstance(x, Var) or x.aval.ndim == 0 or x in eqn.invars[1:]:
            return False
        name = env[x]
        return name in self.own_carries and name not in self.shared and \
            all(0 <= u <= j for u in users[x])

    def update(self, eqn: JaxprEqn, env: dict, lines: list[str], pad: str,
               in_place: bool) -> None:
        """dynamic_update_slice: the update written at clamped starts into a copy of the
        operand, or into the operand itself (`in_place`: a loop's `x.at[i].set(v)` step does
        not copy its carry)."""
        x, update = eqn.invars[0], eqn.invars[1]
        if x.aval.ndim == 0:
            raise Unsupported("0-d dynamic_update_slice")
        name = self.read(env, x)
        target = name if in_place else self.fresh()
        if not in_place:
            lines.append(f"{pad}{target} = {name}.copy()")
        starts = []
        for s, n, k in zip(eqn.invars[2:], x.aval.shape, update.aval.shape, strict=True):
            if n == k:  # the update spans the axis: lax clamps any start to 0
                starts.append("0")
                continue
            starts.append(self.fresh())
            lines.append(f"{pad}{starts[-1]} = {clamped_start(self.read(env, s), n, k)}")
        flow_loops.block_store(self, target, starts, self.read(env, update),
                               update.aval.shape, lines, pad,
                               f"  # {core.pp_eqn(eqn, self.pp, 0)}")
        env[eqn.outvars[0]] = target

    def eqn(self, eqn: JaxprEqn, env: dict, lines: list[str], pad: str) -> None:
        ins = [self.read(env, x) for x in eqn.invars]
        low = registry.lowering(eqn.primitive, "cpu")
        if low is not None and low.statements is not None:
            self.shared.update(a for a, x in zip(ins, eqn.invars) if x.aval.ndim)
            outs = low.statements(self, eqn, ins, lines, pad)
            for v, o in zip(eqn.outvars, outs, strict=True):
                env[v] = o
            return
        if not eqn.outvars:  # an effect (a host callback): the driver's host loop runs it
            raise Unsupported(eqn.primitive.name)
        if flow_loops.whole_reduction(eqn):
            env[eqn.outvars[0]] = flow_loops.whole_reduce_loops(self, eqn, ins[0], lines, pad)
            return
        if flow_loops.partial_reduction(eqn):
            env[eqn.outvars[0]] = flow_loops.reduce_loops(self, eqn, ins[0], lines, pad)
            return
        if eqn.primitive in (lr.argmax_p, lr.argmin_p) and flow_loops.loops_for_arg(
                eqn.invars[0].aval, eqn.params["axes"][0]):
            env[eqn.outvars[0]] = flow_loops.arg_loops(self, eqn, ins[0], lines, pad)
            return
        if eqn.primitive is ls.concatenate_p and eqn.outvars[0].aval.ndim:
            env[eqn.outvars[0]] = flow_loops.concat_loops(self, eqn, ins, lines, pad)
            return
        out = eqn.outvars[0]
        product = self.product(eqn, ins, lines, pad) if eqn.primitive is ld.dot_general_p \
            else None
        if product is not None:  # a new array: it aliases no operand
            env[out] = product
            return
        scalar = out.aval.ndim == 0 and all(x.aval.ndim == 0 for x in eqn.invars)
        if eqn.primitive in (ls.reshape_p, ls.squeeze_p) and out.aval.ndim == 0:
            # the one element (the array form's contiguous copy and 0-d wrapper allocated twice
            # a step of a scan whose carry is one element: lax.associative_scan's), as its
            # loop's scalar where one made it: a load after the store kept a recurrence's
            # every step waiting on memory (3.3 against 1.7 ms a million steps)
            at = ", ".join(["0"] * eqn.invars[0].aval.ndim)
            expr = self.one_element.get(eqn.invars[0], f"{ins[0]}[{at}]" if at else ins[0])
        elif scalar and low is not None and low.fusion is Fusion.INDEX_MAP:
            expr = ins[0]  # a 0-d broadcast of a scalar is that scalar
        elif scalar and low is not None and low.scalar is not None and \
                registry.fusible(eqn, "cpu"):
            expr = low.scalar(ins, eqn)
            if low.cast and not (out.aval.dtype == np.float64 and all(
                    x.aval.dtype == np.float64 for x in eqn.invars)):
                expr = cast(out.aval.dtype, expr)
        elif low is not None and low.array is not None:
            expr = low.array(ins, eqn)
            if eqn.primitive in flow_runs.VIEW_FORMS and out.aval.ndim and eqn.invars[0].aval.ndim \
                    and not self._view(eqn, ins):
                expr += ".copy()"
            if len(eqn.outvars) > 1:  # a tuple of new arrays (lu)
                names = [self.fresh() for _ in eqn.outvars]
                env.update(zip(eqn.outvars, names, strict=True))
                lines.append(f"{pad}{', '.join(names)}, = {expr}")
                return
            if out.aval.ndim == 0:  # 0-d values are scalars throughout, so branches and
                expr = f"np.asarray({expr})[()]"  # carries unify (array forms may give 0-d)
        else:
            raise Unsupported(eqn.primitive.name)
        if eqn.primitive not in flow_runs.VIEW_FORMS:  # (those copy an owned carry: `_view`)
            # an array form may return a view of an operand (a transpose of one row does):
            # a carry it reads is no longer written in place
            self.shared.update(a for a in ins if a in self.own_carries)
        t = self.fresh()
        env[out] = t
        if expr in self.views or self._view(eqn, ins):
            self.views.add(t)  # an identity (stop_gradient, one-case select) of a view
        if expr.isidentifier():  # an identity: t and its operand name one array
            self.shared.update((expr, t))
        lines.append(f"{pad}{t} = {expr}  # {core.pp_eqn(eqn, self.pp, 0)}")

    def assign(self, names: list[str], values: list[str], avals, lines, pad,
               own: frozenset = frozenset(), body: Jaxpr | None = None) -> None:
        """names = values, views copied; the positions in `own` (owned carries:
        flow_scratch.updated_carries) also copy a value that is not an array of their own: a
        name bound outside the body (`outside`), one another name may alias, or one given to
        two carries. A loop's carries (`body` its jaxpr) whose next value has its one array
        (`backed`) are copied into (flow_scratch.copy_back)."""
        vals = [self.owned(v, a) for v, a in zip(values, avals, strict=True)]
        for k in own:
            if vals[k] == values[k] and (vals[k] in self.shared or vals.count(vals[k]) > 1
                                         or vals[k] in self.outside - {names[k]}):
                vals[k] = f"{vals[k]}.copy()"
        backed = {k: self.backed[v] for k, v in enumerate(body.outvars[:len(names)])
                  if isinstance(v, Var) and v in self.backed} if body else {}
        for k, scratch in backed.items():
            assert values[k] == scratch, (values[k], scratch)  # (its array, as new_array made)
            flow_scratch.copy_back(self, names[k], scratch, avals[k], lines, pad)
        rebound = [k for k in range(len(names)) if k not in backed]
        if rebound:
            lines.append(f"{pad}{', '.join(names[k] for k in rebound)}, = "
                         f"{', '.join(vals[k] for k in rebound)},")

    def pays_parallel(self, closed: ClosedJaxpr, length: int) -> bool:
        return length > 1 and length * work.flow_ops(closed.jaxpr) >= PRANGE_MIN


# called by the Python driver only, as fused kernels (modules.decorator): no cfunc wrapper
_OPTIONS = 'error_model="numpy", cache=CACHE, fastmath=False, no_cfunc_wrapper=True'


def render(eqn: JaxprEqn) -> ir.Kernel:
    """A module whose `kernel` runs the control-flow `eqn` (raises Unsupported if it cannot)."""
    if narrow_floats.touches(eqn):
        raise Unsupported("float16 or bfloat16")
    fn, head, body = _function(eqn)
    params = [f"a{k}" for k, x in enumerate(eqn.invars) if not isinstance(x, Literal)]
    own_gemm = fn.products and loop_products.kind() == "gemm"
    if fn.products:
        params += ["loop_gemm", "loop_work", "loop_threads"] if own_gemm else \
            ["loop_blas", "loop_width", "loop_threads"]
    elif fn.matvec_blocks:
        params.append("loop_threads")
    options = PRANGE_ONLY if fn.parallel else "False"
    deco = f'@njit(parallel={options}, {_OPTIONS})'
    head = head.replace("parallel=False", f"parallel={fn.parallel}", 1)
    src = f"{head}{runtime_imports(body)}\n\n\n{deco}\ndef kernel({', '.join(params)}):\n{body}"
    if fn.parallel:  # the one-thread variant: plain loops, products in one block
        src += f"\n\n@njit(parallel=False, {_OPTIONS})\ndef kernel_serial({', '.join(params)}):\n" \
            + _function(eqn, serial=True)[2]
    # (`parallel`: threads for the kernel, one for BLAS meanwhile; else small products on one)
    tier_ns = body.count("prange(") * threads.PRANGE_TIER_NS  # what its pranges cost to compile
    return ir.Kernel(src, parallel=fn.parallel, work_ns=fn.work_ns, loop_products=fn.products,
                     loop_threads=fn.matvec_blocks and not fn.products,
                     loop_work=max(fn.product_words, 1) if own_gemm else 0, regions=fn.regions,
                     site_regions=fn.site_regions,
                     serial_function="kernel_serial" if fn.parallel else None,
                     quiet_site=fn.nests_only, tier_ns=tier_ns)


def _function(eqn: JaxprEqn, serial: bool = False) -> tuple[Function, str, str]:
    """The renderer's state after rendering `eqn`, the module's header, and the kernel's
    body; `serial`: every loop a plain one."""
    fn = Function(serial)
    lines: list[str] = []
    args = []
    for k, x in enumerate(eqn.invars):
        if isinstance(x, Literal):
            args.append(render_scalar(x.val, x.aval.dtype))
            continue
        args.append(f"a{k}")
        if x.aval.ndim == 0:
            lines.append(f"    s{k} = a{k}[()]")
            args[-1] = f"s{k}"
        else:
            fn.views.add(f"a{k}")
    head = header(Jaxpr([], [], [eqn], eqn.outvars), False, fn.pp)
    outs = registry.lowering(eqn.primitive, "cpu").statements(fn, eqn, args, lines, "    ")
    rets = [fn.owned(o, v.aval) for o, v in zip(outs, eqn.outvars, strict=True)]
    lines = [out for line in lines for out in _one_trip(line)]
    return fn, head, "\n".join(lines) + f"\n    return ({''.join(r + ', ' for r in rets)})\n"


_ONE_TRIP = re.compile(r"( *)for (\w+) in range\(1\):$")


def _one_trip(line: str) -> list[str]:
    """A loop of one trip as no loop (`if True:`, which CPython's compiler drops, and the index
    0): Numba's front end pays ~40 ms on the 2-core VM for each loop of a function, more as the
    function grows, and a key's words sliced apart in a sampler's scan body made 13 of its 80."""
    match = _ONE_TRIP.fullmatch(line)
    if match is None:
        return [line]
    pad, index = match.groups()
    return [f"{pad}if True:", f"{pad}    {index} = 0"]
