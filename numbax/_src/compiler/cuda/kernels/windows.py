"""CUDA kernels for the windowed reductions (lax/windowed_reductions.py): reduce_window's
sum/max/min and the select-and-gather/scatter pair behind max pooling's derivatives, any rank,
with strides, padding (negative crops) and base and window dilation, as compile-time constants.

Every kernel is one grid-stride thread per output element and writes only its own element, so
results never depend on thread timing (no atomics):
- reduce_window: the thread folds its window's taps in row-major order from the identity
  (0, or max/min's identity, which padding holds), as the eager fold does.
- select_and_gather_add: the thread re-decides its window's selection and reads the tangent
  there (0 where a padding tap is selected).
- select_and_scatter_add (a gather, one thread per operand element): the thread visits the
  windows that cover its element in row-major order of the element's position in them, re-decides
  each window's selection and adds that window's source value when it selected this element.
  The additions run in the eager impl's order, so the sums are bitwise those of eager.
The selection is windowed_reductions._selection's: the first tap, replaced by each later one
strictly better (select_prim 'ge'/'le') or at least as good ('gt'/'lt'), the extreme so far
propagating NaN as np.maximum/np.minimum do; padding and dilation holes hold the identity."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from numbax._src.compiler import ir
from numbax._src.compiler.cuda.config import Config, strides
from numbax._src.compiler.cuda.modules import grid_kernel
from numbax._src.compiler.source import cast, render_scalar
from numbax._src.core import JaxprEqn
from numbax._src.lax import windowed_reductions as wr

# dtypes the kernels take (numba-cuda's arithmetic on them matches numpy's)
VALUE_DTYPES = frozenset(np.dtype(d) for d in (
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float32, np.float64, np.complex64, np.complex128))
ORDERED_DTYPES = frozenset(d for d in VALUE_DTYPES if d.kind != "c")  # max/min, selections


@dataclass(frozen=True)
class _Dim:
    """One dimension's window geometry: operand size n, window w, stride s, low padding lo,
    base dilation bd, window dilation wd, output size out."""

    n: int
    w: int
    s: int
    lo: int
    bd: int
    wd: int
    out: int

    def position(self, u: str, t: str | None) -> str:
        """The position, in the dilated operand, of tap t of window u (t None: the one tap)."""
        terms = [u if self.s == 1 else f"{u} * {self.s}"]
        if t is not None:
            terms.append(t if self.wd == 1 else f"{t} * {self.wd}")
        expr = " + ".join(terms)
        if self.lo == 0:
            return expr
        return f"{expr} - {self.lo}" if self.lo > 0 else f"{expr} + {-self.lo}"

    def inside(self, q: str) -> str | None:
        """The test that dilated position q holds an operand element (None: always, for every
        window and tap of this geometry)."""
        last = (self.n - 1) * self.bd
        q_max = (self.out - 1) * self.s + (self.w - 1) * self.wd - self.lo
        if self.bd == 1:
            if -self.lo >= 0 and q_max <= last:
                return None
            return f"0 <= {q} < {self.n}"
        return f"0 <= {q} <= {last} and {q} % {self.bd} == 0"

    def element(self, q: str) -> str:
        return q if self.bd == 1 else f"{q} // {self.bd}"


def _dims(eqn: JaxprEqn, operand: int) -> list[_Dim]:
    p = eqn.params
    shape = eqn.invars[operand].aval.shape
    ones = (1,) * len(shape)
    out = wr.reduce_window_shape_tuple(
        shape, p["window_dimensions"], p["window_strides"], p["padding"],
        p.get("base_dilation", ones), p.get("window_dilation", ones))
    return [_Dim(n, w, s, lo, bd, wd, o) for n, w, s, (lo, _), bd, wd, o in zip(
        shape, p["window_dimensions"], p["window_strides"], p["padding"],
        p.get("base_dilation", ones), p.get("window_dilation", ones), out, strict=True)]


def _indent(lines: list[str], depth: int) -> list[str]:
    return [" " * (4 * depth) + line for line in lines]


def _taps(dims: list[_Dim], win: list[str], prune: bool) -> tuple[list[str], int, list[str]]:
    """Nested loops over the taps t<d> of window (win[0], ...) in row-major order: (the
    lines, the depth of the innermost body, its remaining inside-tests). Along each dimension
    q<d> is the tap's dilated position and f<d> the operand's flat offset so far; the
    innermost f is the tap's element. With `prune`, taps outside the operand are skipped (an
    `if` per dimension); else their tests are returned for the body to make."""
    st = strides([d.n for d in dims])
    lines, depth, tests, offset = [], 0, [], "0"
    for d, g in enumerate(dims):
        tap = None
        if g.w > 1:
            lines += _indent([f"for t{d} in range({g.w}):"], depth)
            depth += 1
            tap = f"t{d}"
        test = g.inside(f"q{d}")
        elem = g.element(f"q{d}")
        step = elem if st[d] == 1 else f"{elem} * {st[d]}" if g.bd == 1 else \
            f"({elem}) * {st[d]}"
        offset = step if offset == "0" else f"{offset} + {step}"
        lines += _indent([f"q{d} = {g.position(win[d], tap)}", f"f{d} = {offset}"], depth)
        offset = f"f{d}"
        if test is not None and prune:
            lines += _indent([f"if {test}:"], depth)
            depth += 1
        elif test is not None:
            tests.append(test)
    return lines, depth, tests


def _flat(dims: list[_Dim]) -> str:
    return f"f{len(dims) - 1}" if dims else "0"


def _better(is_max: bool, strict: bool) -> str:
    """When tap value v replaces the selection so far (best): select_rule's comparison."""
    return f"v {'>' if is_max else '<'}{'' if strict else '='} best"


def _extreme(is_max: bool, dtype: np.dtype, acc: str = "best") -> str:
    """`acc` after tap v: np.maximum/np.minimum(acc, v), NaN propagating, v on ties."""
    op = ">=" if is_max else "<="
    if dtype.kind == "f":
        return f"v if (v != v or v {op} {acc}) else {acc}"
    return f"{'max' if is_max else 'min'}({acc}, v)"


def _selection(eqn: JaxprEqn, dims: list[_Dim], win: list[str], operand: str) -> list[str]:
    """Lines leaving in `sel` the row-major number of the tap window `win` selects and in
    `at` its element's flat offset in `operand` (-1: a padding or dilation tap)."""
    x = eqn.invars[1].aval.dtype
    is_max, strict = wr.select_rule(eqn.params["select_prim"])
    fill = render_scalar(wr.max_identity(x) if is_max else wr.min_identity(x), x)
    loops, depth, tests = _taps(dims, win, prune=False)
    flat = _flat(dims)
    read = [f"v = {operand}[{flat}]", f"e = {flat}"]
    if tests:
        read = [f"if {' and '.join(tests)}:", *_indent(read, 1), "else:",
                f"    v = {fill}", "    e = -1"]
    body = read + ["if m == 0:", "    best = v", "    sel = m", "    at = e",
                   f"elif {_better(is_max, strict)}:", "    sel = m", "    at = e"]
    body += [f"best = {_extreme(is_max, x)}", "m += 1"]
    return [f"best = {fill}", "sel = 0", "at = -1", "m = 0", *loops, *_indent(body, depth)]


def reduce_window(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    """reduce_window_{sum,max,min}: each thread folds its window (padding taps skipped: they
    hold the identity)."""
    x = eqn.invars[0].aval.dtype
    out = eqn.outvars[0].aval
    if eqn.primitive is wr.reduce_window_sum_p:
        ident = 0
        step = "acc + v" if x.kind in "fc" else cast(x, "acc + v")
    else:
        is_max = eqn.primitive is wr.reduce_window_max_p
        ident = wr.max_identity(x) if is_max else wr.min_identity(x)
        step = _extreme(is_max, x, "acc")
    dims = _dims(eqn, 0)
    loops, depth, _ = _taps(dims, [f"j{d}" for d in range(len(dims))], prune=True)
    body = [f"acc = {render_scalar(ident, x)}", *loops,
            *_indent([f"v = a0[{_flat(dims)}]", f"acc = {step}"], depth), "o0[i] = acc"]
    return grid_kernel(eqn, cfg, out.shape, body)


def select_and_gather_add(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    """Each thread (one window) re-decides its selection and reads the tangent there."""
    out = eqn.outvars[0].aval
    dims = _dims(eqn, 1)
    body = _selection(eqn, dims, [f"j{d}" for d in range(len(dims))], "a1")
    body += ["if at >= 0:", "    o0[i] = a0[at]", "else:",
             f"    o0[i] = {render_scalar(0, out.dtype)}"]
    return grid_kernel(eqn, cfg, out.shape, body)


def select_and_scatter_add(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    """Each thread (one operand element) sums the source values of the windows that cover it
    and selected it, in the order of its tap number k in them (the eager impl's order)."""
    out = eqn.outvars[0].aval
    dims = _dims(eqn, 1)
    wst = strides([d.w for d in dims])
    ost = strides([d.out for d in dims])
    lines, depth = [], 0
    for d, g in enumerate(dims):
        pos = f"j{d}" if g.lo == 0 else f"j{d} + {g.lo}" if g.lo > 0 else f"j{d} - {-g.lo}"
        if g.w == 1 and g.s == 1:  # the one covering window, if any
            lines += _indent([f"k{d} = 0", f"u{d} = {pos}"], depth)
            test = None if g.lo == 0 and g.out == g.n else f"0 <= u{d} < {g.out}"
        else:  # taps k with (pos - k) % s == 0 and 0 <= (pos - k) // s < out
            lines += _indent([f"p{d} = {pos}",
                              f"for k{d} in range(p{d} % {g.s}, min({g.w}, p{d} + 1), {g.s}):",
                              f"    u{d} = (p{d} - k{d}) // {g.s}"], depth)
            depth += 1
            test = f"u{d} < {g.out}"
        if test is not None:
            lines += _indent([f"if {test}:"], depth)
            depth += 1
    k = " + ".join(f"k{d} * {s}" for d, s in enumerate(wst)) or "0"
    u = " + ".join(f"u{d} * {s}" for d, s in enumerate(ost)) or "0"
    inner = _selection(eqn, dims, [f"u{d}" for d in range(len(dims))], "a1")
    add = f"acc + a0[{u}]"
    if out.dtype.kind in "iu":  # wraps as numpy's in-place add
        add = cast(out.dtype, add)
    inner += [f"if sel == {k}:", f"    acc = {add}"]
    body = [f"acc = {render_scalar(0, out.dtype)}", *lines, *_indent(inner, depth),
            "o0[i] = acc"]
    return grid_kernel(eqn, cfg, out.shape, body)


def supported(eqn: JaxprEqn) -> bool:
    """Whether these kernels take the equation: numeric dtypes numba-cuda computes as numpy
    (booleans and half floats run their eager implementation on the host), a real operand
    where windows select or take a max/min."""
    dts = [v.aval.dtype for v in [*eqn.invars, *eqn.outvars]]
    if any(dt not in VALUE_DTYPES for dt in dts):
        return False
    if eqn.primitive is wr.reduce_window_sum_p:
        return True
    ordered = eqn.invars[-1].aval.dtype  # the operand compared (max/min, selections)
    return ordered in ORDERED_DTYPES
