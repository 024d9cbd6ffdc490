"""CUDA codegen of fused loop nests: each nest of the kernel graph as one @cuda.jit module.
(The host driver that launches them is cuda_driver.py; dot_general/transpose kernels are
cuda_matmul.py, indexing cuda_index.py, sort cuda_sort.py, linear algebra cuda_linalg.py.)

Every buffer is flat (1-d) on the device; shapes are compile-time constants of each kernel, so a
reshape is free and indexing is integer arithmetic on constants. Kernel kinds:
  - elementwise nests: grid-stride loops, UNROLL independent elements per thread, all loads of
    an iteration before its stores (needed to reach the copy bandwidth);
  - full reductions: per-thread accumulators, a shared-memory block reduction, one partial per
    block, then a one-block second pass (never numba's cuda.reduce);
  - row groups (reductions over trailing axes and the passes fused after them, e.g. softmax):
    by the row width, a warp or less per row (several rows per block) or a block per row,
    the row's elements held in registers across the passes (read from memory once), warp
    shuffle reductions (_RowPlan); rows too wide for registers re-read the row each pass;
  - other reductions: one thread per output element, a serial loop over the reduced elements.
"""
from __future__ import annotations

import numba
import numpy as np

from numbax._src import core
from numbax._src.compiler import fusion
from numbax._src.compiler.cpu import loops as codegen_cpu
from numbax._src.compiler.cpu.loops import cast, dtype_ctor, render_scalar
from numbax._src.compiler.cuda import complex_rules as cuda_complex
from numbax._src.core import Jaxpr, JaxprEqn, Literal, Var


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _prod(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _strides(shape) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


class Config:
    """Launch geometry; smaller under the simulator (each simulated thread is a Python thread)."""

    def __init__(self, sim: bool) -> None:
        self.threads = 32 if sim else 256
        self.unroll = 4
        self.max_blocks = 1 << 20
        self.red_blocks = 4 if sim else 1024
        # matmul tiles (TY, TX threads, TM x TN register block, BK-deep slices): the large
        # one (float32, when it fills mm_sms SMs) and the small one; split-K keeps at
        # least mm_split_k of the contraction per block (cuda_matmul.choose_tiles)
        self.mm_big = (2, 2, 2, 2, 4) if sim else (16, 16, 8, 8, 8)
        self.mm_small = (2, 2, 1, 2, 2) if sim else (16, 16, 4, 4, 8)
        self.mm_sms = 2 if sim else 132
        self.mm_split_k = 4 if sim else 256
        # row groups (_render_rows): threads per block when a warp or less runs each row, the
        # most threads of a block-per-row kernel, the most row elements a thread keeps in
        # registers across the passes; the simulator has no warp shuffles (shared-memory
        # exchanges stand in for them there)
        self.row_threads = 64 if sim else 256
        self.row_block_max = 64 if sim else 256  # 256: 26-33% faster than 1024 on an H100
        self.row_slots = 4 if sim else 16
        self.shuffle = not sim
        # other reductions (_render_general_reduce): with few outputs, the reduced range is
        # split so about this many threads run (each at least red_split_min elements), then
        # a second kernel combines the splits in order
        self.red_split_threads = 256 if sim else 1 << 16
        self.red_split_min = 4 if sim else 32

    def key(self) -> tuple:
        return (("target", "cuda"), ("threads", self.threads), ("unroll", self.unroll),
                ("red_blocks", self.red_blocks),
                ("rows", self.row_threads, self.row_block_max, self.row_slots, self.shuffle),
                ("matmul", self.mm_big, self.mm_small, self.mm_sms, self.mm_split_k),
                ("red_split", self.red_split_threads, self.red_split_min),
                ("f32_sum_acc", "float64"))


# ----------------------------------------------------------------------------- scalar table


def _typed(dtype, value) -> str:
    return render_scalar(value, dtype)


def _fmax_expr(a: str, b: str) -> str:
    return f"({a} if ({a} != {a} or {a} >= {b}) else {b})"


def _fmin_expr(a: str, b: str) -> str:
    return f"({a} if ({a} != {a} or {a} <= {b}) else {b})"


def _dt(eqn: JaxprEqn, i: int = 0) -> np.dtype:
    return eqn.invars[i].aval.dtype


def _float_or_int(float_rule, int_rule):
    return lambda a, e: int_rule(a, e) if _dt(e).kind in "iub" else float_rule(a, e)


def _np(name: str):
    return lambda a, e: f"np.{name}({', '.join(a)})"


def _integer_pow(a, e):
    y = e.params["y"]
    if y == 0:
        return _typed(_dt(e), 1)
    if y in (1, 2, 3):
        return "(" + " * ".join([a[0]] * y) + ")"
    if y > 0:
        return f"cd.ipow({a[0]}, {y})"
    return f"({_typed(_dt(e), 1)} / cd.ipow({a[0]}, {-y}))"


def _clamp(a, e):
    lo, x, hi = a
    if _dt(e, 1).kind in "iub":
        return f"min(max({x}, {lo}), {hi})"
    return _fmin_expr(_fmax_expr(x, lo), hi)


def _round(a, e):
    if e.params.get("rounding_method", 0) == 1:
        return f"cd.round_even({a[0]})"
    return f"cd.round_away({a[0]})"


def _math(name: str):
    return lambda a, e: f"math.{name}({', '.join(a)})"


def _sign(a, e):
    x, dt = a[0], _dt(e)
    if dt.kind == "u":
        return f"({_typed(dt, 1)} if {x} > 0 else {_typed(dt, 0)})"
    one = _typed(dt, 1)
    zero = x if dt.kind == "f" else _typed(dt, 0)  # keeps NaN and signed zeros
    return f"({one} if {x} > 0 else (-{one} if {x} < 0 else {zero}))"


def _literal_shift(eqn: JaxprEqn) -> bool:
    """Whether a shift's amount is a literal in [0, bits): the plain operator then (threefry's
    rotations), not the device function that defines over-wide and negative amounts."""
    y = eqn.invars[1]
    return isinstance(y, Literal) and 0 <= int(y.val) < _dt(eqn).itemsize * 8


# numba-cuda lowers math.* through libdevice; numpy ufuncs (np.exp...) do not compile there.
SCALAR_RULES = dict(codegen_cpu.SCALAR_RULES)
SCALAR_RULES.update({name: _math(fn) for name, fn in {
    "exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "tanh": "tanh",
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan",
    "sinh": "sinh", "cosh": "cosh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh",
    "sqrt": "sqrt", "erf": "erf", "erfc": "erfc", "lgamma": "lgamma", "floor": "floor",
    "ceil": "ceil", "is_finite": "isfinite", "atan2": "atan2"}.items()})
SCALAR_RULES.update({
    "div": _float_or_int(lambda a, e: f"({a[0]} / {a[1]})",
                         lambda a, e: f"cd.cdiv({a[0]}, {a[1]})"),
    "rem": _float_or_int(_math("fmod"), lambda a, e: f"cd.crem({a[0]}, {a[1]})"),
    "pow": _float_or_int(_math("pow"), lambda a, e: f"({a[0]} ** {a[1]})"),
    "max": _float_or_int(lambda a, e: _fmax_expr(*a), lambda a, e: f"max({a[0]}, {a[1]})"),
    "min": _float_or_int(lambda a, e: _fmin_expr(*a), lambda a, e: f"min({a[0]}, {a[1]})"),
    "exp2": lambda a, e: f"math.pow({_typed(_dt(e), 2)}, {a[0]})",
    "cbrt": lambda a, e: f"cuda.cbrt({a[0]})",
    "sign": _sign,
    "logistic": lambda a, e: (
        f"cd.logistic_f32({a[0]})" if _dt(e) == np.float32
        else f"({_typed(_dt(e), 1)} / ({_typed(_dt(e), 1)} + math.exp(-{a[0]})))"),
    "rsqrt": lambda a, e: f"({_typed(_dt(e), 1)} / math.sqrt({a[0]}))",
    "integer_pow": _integer_pow,
    "clamp": _clamp,
    "round": _round,
    "real": lambda a, e: a[0],
    "conj": lambda a, e: a[0],
    "imag": lambda a, e: _typed(_dt(e), 0),
    "erf_inv": lambda a, e: (f"cd.erfinv_f32({a[0]})" if _dt(e) == np.float32
                             else f"cd.erfinv(np.float64({a[0]}))"),
    "shift_left": lambda a, e: (
        f"({a[0]} << {a[1]})" if _literal_shift(e)
        else f"cd.shift_left({a[0]}, {a[1]}, {_dt(e).itemsize * 8})"),
    "shift_right_arithmetic": lambda a, e: (
        f"({a[0]} >> {a[1]})" if _literal_shift(e)
        else f"cd.shift_right_arithmetic({a[0]}, {a[1]}, {_dt(e).itemsize * 8}, "
        f"{_dt(e).kind == 'u'})"),
    "shift_right_logical": lambda a, e: (
        "({u}({x}) >> {u}({y}))" if _literal_shift(e)
        else "cd.shift_right_logical({u}({x}), {u}({y}), {b})").format(
            u=f"np.uint{_dt(e).itemsize * 8}", x=a[0], y=a[1], b=_dt(e).itemsize * 8),
})
# special and bit-level primitives: device functions of cuda_special (re-exported by cd)
SCALAR_RULES.update({
    "digamma": lambda a, e: f"cd.digamma(np.float64({a[0]}))",
    "polygamma": lambda a, e: f"cd.polygamma(np.float64({a[0]}), np.float64({a[1]}))",
    "population_count": lambda a, e: f"cd.popcount({a[0]})",
    "nextafter": lambda a, e: (f"cd.nextafter32({a[0]}, {a[1]})" if _dt(e) == np.float32
                               else f"cd.nextafter64({a[0]}, {a[1]})"),
})
cuda_complex.install(SCALAR_RULES)  # complex operands/results: cuda_complex's rules
_NO_CAST = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "is_finite"})


def fusible(eqn: JaxprEqn) -> bool:
    """Whether the equation can join a CUDA loop nest (real dtypes only)."""
    name = eqn.primitive.name
    if any(v.aval.dtype.kind == "c" for v in [*eqn.invars, *eqn.outvars]):
        return cuda_complex.fusible(eqn)
    if name in fusion.BROADCAST and eqn.outvars[0].aval.ndim == 0:
        return False
    if name in fusion.REDUCTIONS or name in fusion.BROADCAST:
        return True
    if name in fusion.SOURCES:  # iota: the element's index along its dimension
        return eqn.outvars[0].aval.dtype.kind in "iuf"
    return name in SCALAR_RULES


# ----------------------------------------------------------------------------- reductions


_COMBINE = {
    "reduce_sum": lambda a, b, dt: f"{a} + {b}",
    "reduce_prod": lambda a, b, dt: f"{a} * {b}",
    "reduce_max": lambda a, b, dt: _fmax_expr(a, b) if dt.kind == "f" else f"max({a}, {b})",
    "reduce_min": lambda a, b, dt: _fmin_expr(a, b) if dt.kind == "f" else f"min({a}, {b})",
    "reduce_and": lambda a, b, dt: f"{a} & {b}",
    "reduce_or": lambda a, b, dt: f"{a} | {b}",
}


def _acc_dtype(eqn: JaxprEqn) -> np.dtype:
    return codegen_cpu._acc_dtype(eqn.primitive.name, eqn.invars[0].aval.dtype)


def _acc_init(eqn: JaxprEqn) -> str:
    dt = eqn.invars[0].aval.dtype
    return render_scalar(codegen_cpu._REDUCE[eqn.primitive.name][0](dt), _acc_dtype(eqn))


def _shared_dtype(eqn: JaxprEqn) -> str:
    acc = _acc_dtype(eqn)
    return "np.uint8" if acc == np.bool_ else dtype_ctor(acc)


def _block_reduce(k: _Kernel, red: JaxprEqn, acc: str, sm: str, pad: str) -> list[str]:
    """Tree reduction of every thread's `acc` in shared `sm`; leaves the result in `acc`."""
    comb = _COMBINE[red.primitive.name]("u", "w", red.invars[0].aval.dtype)
    back = "(sm != 0)".replace("sm", f"{sm}[0]") if _acc_dtype(red) == np.bool_ else f"{sm}[0]"
    return [f"{pad}{sm}[tid] = {acc}",
            f"{pad}cuda.syncthreads()",
            f"{pad}s = {k.cfg.threads // 2}",
            f"{pad}while s > 0:",
            f"{pad}    if tid < s:",
            f"{pad}        u = {sm}[tid]",
            f"{pad}        w = {sm}[tid + s]",
            f"{pad}        {sm}[tid] = {comb}",
            f"{pad}    cuda.syncthreads()",
            f"{pad}    s //= 2",
            f"{pad}{acc} = {back}",
            f"{pad}cuda.syncthreads()"]


# ----------------------------------------------------------------------------- loop nests


class _Kernel:
    """Naming state while one loop nest is rendered."""

    def __init__(self, nest: fusion.LoopNest, cfg: Config) -> None:
        self.nest = nest
        self.cfg = cfg
        self.shape = nest.shape
        self.st = _strides(nest.shape)
        self.names = {v: f"a{k}" for k, v in enumerate(nest.inputs)}
        self.out_names = {v: f"o{k}" for k, v in enumerate(nest.outputs)}
        self.consts: list[str] = []
        self.temps = 0
        self.pp_names = core.PrintNames()
        sub = Jaxpr([], nest.inputs, nest.eqns, nest.outputs)
        self.header = _header(sub, self.pp_names)

    def const(self, lit: Literal) -> str:
        text = render_scalar(lit.val, lit.aval.dtype)
        for line in self.consts:
            if line.endswith(f" = {text}"):
                return line.split(" = ")[0]
        self.consts.append(f"c{len(self.consts)} = {text}")
        return f"c{len(self.consts) - 1}"

    def temp(self) -> str:
        self.temps += 1
        return f"t{self.temps - 1}"


class _Lane:
    """One element's loads, computations and stores (kept apart so loads go first)."""

    def __init__(self, flat: str, suffix: str, idx: list[str] | None = None) -> None:
        self.flat = flat
        self.suffix = suffix
        self.idx = idx
        self.loads: list[str] = []
        self.comps: list[str] = []
        self.stores: list[str] = []
        self.loaded: dict[tuple, str] = {}


def _at(array: str, index: str) -> str:
    """`array[index]` through an unsigned index. Numba adds negative-index wraparound code (a
    compare, a select, the extent kept live) to every access through a signed integer, and
    the flat indexes of a loop nest are never negative. Measured on the (16384, 4096) f32
    row softmax on an H100: 55 -> 40 registers per thread, 0.221 -> 0.185 ms."""
    return f"{array}[np.uint64({index})]"


def _dim_index(k: _Kernel, lane: _Lane, d: int) -> str:
    if lane.idx is not None:
        return lane.idx[d]
    key = ("dim", d)
    if key not in lane.loaded:
        name = f"j{d}{lane.suffix}"
        lane.loads.append(f"{name} = ({lane.flat} // {k.st[d]}) % {k.shape[d]}")
        lane.loaded[key] = name
    return lane.loaded[key]


def _load(k: _Kernel, lane: _Lane, x: Var, offset: str) -> str:
    key = (k.names[x], offset)
    if key not in lane.loaded:
        name = f"x{len(lane.loaded)}{lane.suffix}"
        lane.loads.append(f"{name} = {_at(k.names[x], offset)}")
        lane.loaded[key] = name
    return lane.loaded[key]


def _bcast_offset(k: _Kernel, lane: _Lane, eqn: JaxprEqn) -> str:
    x = eqn.invars[0]
    terms = []
    xst = _strides(x.aval.shape)
    for i, d in enumerate(eqn.params["broadcast_dimensions"]):
        if x.aval.shape[i] == 1:
            continue
        j = _dim_index(k, lane, d)
        terms.append(j if xst[i] == 1 else f"{j} * {xst[i]}")
    return " + ".join(terms) or "0"


def _emit(k: _Kernel, lane: _Lane, eqns: list[JaxprEqn], accs: dict[Var, str],
          seed: dict[Var, str] | None = None, no_store: frozenset = frozenset(),
          store_guard: str | None = None, acc_guard: str | None = None) -> dict[Var, str]:
    """One line per fused equation into `lane`; returns the scalar names of their values.
    `store_guard` conditions its stores, `acc_guard` its reduction steps (a padding element)."""
    value: dict[Var, str] = dict(seed or {})

    def read(x) -> str:
        if isinstance(x, Literal):
            return k.const(x)
        if x in value:
            return value[x]
        if x.aval.ndim == 0 and k.shape:
            return f"{k.names[x]}s"  # loaded once at the kernel's start
        return _load(k, lane, x, lane.flat)

    for eqn in eqns:
        name = eqn.primitive.name
        out = eqn.outvars[0]
        comment = core.pp_eqn(eqn, k.pp_names, 0)
        if name in fusion.BROADCAST:
            x = eqn.invars[0]
            if isinstance(x, Literal) or x.aval.ndim == 0 or x in value:
                expr = read(x)
            else:
                expr = _load(k, lane, x, _bcast_offset(k, lane, eqn))
        elif name in fusion.SOURCES:  # only in elementwise nests (fusion._fits)
            expr = cast(out.aval.dtype, _dim_index(k, lane, eqn.params["dimension"]))
        elif name in fusion.REDUCTIONS:
            acc = accs[out]
            comb = _COMBINE[name](acc, read(eqn.invars[0]), eqn.invars[0].aval.dtype)
            if acc_guard is not None:
                comb = f"({comb}) if {acc_guard} else {acc}"
            lane.comps.append(f"{acc} = {comb}  # {comment}")
            continue
        else:
            expr = SCALAR_RULES[name]([read(x) for x in eqn.invars], eqn)
            if name not in _NO_CAST:
                expr = cast(out.aval.dtype, expr)
        t = k.temp()
        value[out] = t
        lane.comps.append(f"{t} = {expr}  # {comment}")
        if out in k.out_names and out not in no_store:
            store = f"{_at(k.out_names[out], lane.flat)} = {t}"
            lane.stores.append(store if store_guard is None else f"if {store_guard}: {store}")
    return value


def _lines(lanes: list[_Lane], pad: str) -> list[str]:
    out = []
    for part in ("loads", "comps", "stores"):
        for lane in lanes:
            out.extend(pad + line for line in getattr(lane, part))
    return out


def _scalar_loads(k: _Kernel, pad: str) -> list[str]:
    return [f"{pad}{k.names[v]}s = {k.names[v]}[0]" for v in k.nest.inputs
            if v.aval.ndim == 0 and k.shape]


class KernelPlan:
    """How the driver runs a library equation's kernel module (cuda_sort, cuda_linalg): scratch
    device buffers (size, dtype) to allocate, then launches (function, blocks, threads) in
    order; every function takes (inputs..., outputs..., scratch...)."""

    def __init__(self, src: str, launches: list[tuple[str, int, int]],
                 scratch: list[tuple[int, object]] = ()) -> None:
        self.src = src
        self.launches = launches
        self.scratch = list(scratch)


class Launch:
    """How the driver runs a kernel module: scratch buffers to allocate, then launch lines whose
    `{args}` (inputs then outputs), `{partials}` and `{o<k>}` placeholders it fills."""

    def __init__(self, steps: list[str], allocs: list | None = None) -> None:
        self.steps = steps
        self.allocs = allocs or []


def render_loop(nest: fusion.LoopNest, cfg: Config) -> tuple[str, Launch]:
    """The source of one kernel module and how the driver launches it."""
    k = _Kernel(nest, cfg)
    size = _prod(nest.shape)
    axes = nest.reduce_axes
    if axes is None:
        body, launch = _render_elementwise(k, size)
    else:
        kept = [d for d in range(len(nest.shape)) if d not in axes]
        m = _prod([nest.shape[d] for d in kept])
        trailing = fusion._trailing(nest)
        if nest.passes is None and m == 1:
            body, launch = _render_full_reduce(k, size)
        elif trailing is not None:
            body, launch = _render_rows(k, trailing)
        else:
            body, launch = _render_general_reduce(k, kept, list(axes))
    consts = "\n".join(k.consts)
    return f"{k.header}\n{consts}\n\n\n{body}", launch


def _kernel_def(k: _Kernel, extra: list[str] = ()) -> str:
    params = ", ".join([*k.names.values(), *k.out_names.values(), *extra])
    return f"@cuda.jit(cache=CACHE)\ndef kernel({params}):\n"


def _render_elementwise(k: _Kernel, n: int) -> tuple[str, Launch]:
    u, pad = k.cfg.unroll, "    "
    lines = _scalar_loads(k, pad)
    lines += [f"{pad}i = cuda.grid(1)", f"{pad}s = cuda.gridsize(1)",
              f"{pad}while i + {u - 1} * s < {n}:"]
    lanes = [_Lane("i" if q == 0 else f"i{q}", f"_{q}") for q in range(u)]
    for q in range(1, u):
        lines.append(f"{pad}    i{q} = i + {q} * s")
    for lane in lanes:
        _emit(k, lane, k.nest.eqns, {})
    lines += _lines(lanes, pad + "    ")
    lines += [f"{pad}    i += {u} * s", f"{pad}while i < {n}:"]
    tail = _Lane("i", "")
    _emit(k, tail, k.nest.eqns, {})
    lines += _lines([tail], pad + "    ")
    lines.append(f"{pad}    i += s")
    blocks = max(1, min(_cdiv(n, k.cfg.threads * u), k.cfg.max_blocks))
    launch = Launch(steps=[f"kernel[{blocks}, {k.cfg.threads}]({{args}})"] if n else [])
    return _kernel_def(k) + "\n".join(lines) + "\n", launch


def _reductions(eqns: list[JaxprEqn]) -> list[JaxprEqn]:
    return [e for e in eqns if e.primitive.name in fusion.REDUCTIONS]


def _shared_decls(k: _Kernel, reds: list[JaxprEqn], first: int, pad: str) -> list[str]:
    return [f"{pad}sm{first + j} = cuda.shared.array({k.cfg.threads}, {_shared_dtype(e)})"
            for j, e in enumerate(reds)]


def _render_full_reduce(k: _Kernel, n: int) -> tuple[str, Launch]:
    """Grid-stride accumulation, block reduction, one partial per block; `finish` reduces them."""
    cfg, u, pad = k.cfg, k.cfg.unroll, "    "
    reds = _reductions(k.nest.eqns)
    accs = {e.outvars[0]: f"acc{j}" for j, e in enumerate(reds)}
    nb = max(1, min(_cdiv(n, cfg.threads * u), cfg.red_blocks))
    lines = ["    tid = cuda.threadIdx.x", *_shared_decls(k, reds, 0, pad), *_scalar_loads(k, pad)]
    lines += [f"{pad}{accs[e.outvars[0]]} = {_acc_init(e)}" for e in reds]
    lines += [f"{pad}i = cuda.grid(1)", f"{pad}s = cuda.gridsize(1)",
              f"{pad}while i + {u - 1} * s < {n}:"]
    lanes = [_Lane("i" if q == 0 else f"i{q}", f"_{q}") for q in range(u)]
    lines += [f"{pad}    i{q} = i + {q} * s" for q in range(1, u)]
    for lane in lanes:
        _emit(k, lane, k.nest.eqns, accs)
    lines += _lines(lanes, pad + "    ")
    lines += [f"{pad}    i += {u} * s", f"{pad}while i < {n}:"]
    tail = _Lane("i", "")
    _emit(k, tail, k.nest.eqns, accs)
    lines += _lines([tail], pad + "    ") + [f"{pad}    i += s"]
    for j, e in enumerate(reds):
        lines += _block_reduce(k, e, f"acc{j}", f"sm{j}", pad)
        lines.append(f"{pad}if tid == 0:")
        lines.append(f"{pad}    p{j}[cuda.blockIdx.x] = acc{j}")
    partials = [f"p{j}" for j in range(len(reds))]
    src = _kernel_def(k, partials) + "\n".join(lines) + "\n"
    # the second pass: one block over the partials
    outs = [k.out_names.get(e.outvars[0]) for e in reds]
    fin = ["    tid = cuda.threadIdx.x", *_shared_decls(k, reds, 0, pad)]
    for j, e in enumerate(reds):
        comb = _COMBINE[e.primitive.name](f"acc{j}", f"p{j}[q]", e.invars[0].aval.dtype)
        fin += [f"{pad}acc{j} = {_acc_init(e)}", f"{pad}q = tid",
                f"{pad}while q < {nb}:", f"{pad}    acc{j} = {comb}",
                f"{pad}    q += {cfg.threads}"]
        fin += _block_reduce(k, e, f"acc{j}", f"sm{j}", pad)
        if outs[j] is not None:
            fin += [f"{pad}if tid == 0:",
                    f"{pad}    {outs[j]}[0] = {cast(e.outvars[0].aval.dtype, f'acc{j}')}"]
    fin_params = ", ".join([*partials, *(o for o in outs if o is not None)])
    src += f"\n\n@cuda.jit(cache=CACHE)\ndef finish({fin_params}):\n" + "\n".join(fin) + "\n"
    launch = Launch(
        allocs=[(nb, _acc_dtype(e)) for e in reds],
        steps=[f"kernel[{nb}, {cfg.threads}]({{args}}, {{partials}})",
               f"finish[1, {cfg.threads}]({{partials}}"
               + "".join(", {" + o + "}" for o in outs if o) + ")"])
    return src, launch


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


class _RowPlan:
    """The geometry of a row-group kernel, chosen from the (compile-time) row width:
      - "warp": `group` (a power of two <= 32) threads per row, several rows per block, the
        row's `slots` elements per thread kept in registers across the passes, reductions by
        warp shuffles (xor butterfly) only;
      - "block": one block of `threads` per row, `slots` elements per thread in registers,
        reductions by warp shuffles then one shared slot per warp;
      - "loop": one block per row too wide for registers: every pass re-reads the row."""

    def __init__(self, cfg: Config, width: int) -> None:
        if width <= 32 * cfg.row_slots:
            self.kind = "warp"
            self.group = min(32, _pow2_at_least(_cdiv(width, 4)))
            self.threads = max(cfg.row_threads, self.group)
            self.step = self.group
        else:
            self.threads = min(cfg.row_block_max, max(64, _pow2_at_least(_cdiv(width, 8))))
            self.kind = "block" if _cdiv(width, self.threads) <= cfg.row_slots else "loop"
            if self.kind == "loop":
                self.threads = cfg.row_block_max
            self.group = self.threads
            self.step = self.threads
        self.slots = _cdiv(width, self.step) if self.kind != "loop" else 0
        self.warps = max(1, self.threads // 32)


def _shfl(k: _Kernel, red: JaxprEqn, val: str, arg: str, kind: str) -> str:
    """A warp shuffle of a reduction's accumulator (xor lane mask or source lane), in one of
    the value types numba-cuda shuffles (32/64-bit ints and floats) and back."""
    acc = np.dtype(_acc_dtype(red))
    fn = "cuda.shfl_xor_sync" if kind == "xor" else "cuda.shfl_sync"
    if acc == np.bool_:
        return f"({fn}(0xffffffff, np.int32({val}), {arg}) != 0)"
    if acc in (np.float32, np.float64, np.int32, np.int64):
        return f"{fn}(0xffffffff, {val}, {arg})"
    if acc.kind == "c":
        return cuda_complex.shfl(fn, val, arg, acc)
    via = ("np.float32" if acc.kind == "f" else "np.int64" if acc.itemsize == 8 else "np.int32")
    return f"{dtype_ctor(acc)}({fn}(0xffffffff, {via}({val}), {arg}))"


def _from_shared(red: JaxprEqn, expr: str) -> str:
    return f"({expr} != 0)" if _acc_dtype(red) == np.bool_ else expr


def _row_reduce(k: _Kernel, plan: _RowPlan, red: JaxprEqn, acc: str, j: int,
                pad: str) -> list[str]:
    """Combines `acc` over the threads of a row; every one of them ends with the same value."""
    comb = _COMBINE[red.primitive.name]
    dt = red.invars[0].aval.dtype
    lines = []
    w = f"w{j}"  # one name per reduction: numba types each variable once
    width = min(plan.group, 32)
    o = width // 2
    while o > 0:  # xor butterfly within each group of `width` lanes
        if k.cfg.shuffle:  # every lane shuffles, then combines
            lines += [f"{pad}{w} = {_shfl(k, red, acc, str(o), 'xor')}",
                      f"{pad}{acc} = {comb(acc, w, dt)}"]
        else:
            lines += [f"{pad}sx{j}[tid] = {acc}", f"{pad}cuda.syncthreads()",
                      f"{pad}{w} = {_from_shared(red, f'sx{j}[tid ^ {o}]')}",
                      f"{pad}cuda.syncthreads()", f"{pad}{acc} = {comb(acc, w, dt)}"]
        o //= 2
    if plan.kind == "warp":
        if width > 1 and red.primitive.name in ("reduce_max", "reduce_min"):
            # ties of 0.0 and -0.0 leave the lanes apart: take the group leader's value
            if k.cfg.shuffle:
                lines.append(f"{pad}{acc} = {_shfl(k, red, acc, 'tid % 32 - ln', 'idx')}")
            else:
                lines += [f"{pad}sx{j}[tid] = {acc}", f"{pad}cuda.syncthreads()",
                          f"{pad}{acc} = {_from_shared(red, f'sx{j}[tid - ln]')}",
                          f"{pad}cuda.syncthreads()"]
        return lines
    lines += [f"{pad}if tid % 32 == 0:", f"{pad}    sm{j}[tid // 32] = {acc}",
              f"{pad}cuda.syncthreads()", f"{pad}{acc} = {_from_shared(red, f'sm{j}[0]')}"]
    if plan.warps > 1:
        lines += [f"{pad}for wq in range(1, {plan.warps}):",
                  f"{pad}    {w} = {_from_shared(red, f'sm{j}[wq]')}",
                  f"{pad}    {acc} = {comb(acc, w, dt)}"]
    return lines


def _render_rows(k: _Kernel, kept: int) -> tuple[str, Launch]:
    """A row group (reductions over the trailing axes and the passes fused after them, e.g.
    softmax): see _RowPlan for the three geometries."""
    cfg, nest, pad = k.cfg, k.nest, "    "
    m = _prod(nest.shape[:kept])
    width = _prod(nest.shape[kept:])
    plan = _RowPlan(cfg, width)
    passes = nest.passes or [("row", list(nest.eqns))]
    reds = _reductions(nest.eqns)
    lines = ["    tid = cuda.threadIdx.x"]
    for j, e in enumerate(reds):
        if plan.kind != "warp":
            lines.append(f"{pad}sm{j} = cuda.shared.array({plan.warps}, {_shared_dtype(e)})")
        if not cfg.shuffle:
            lines.append(f"{pad}sx{j} = cuda.shared.array({plan.threads}, {_shared_dtype(e)})")
    lines += _scalar_loads(k, pad)
    if plan.kind == "warp":
        per_block = plan.threads // plan.group
        lines += [f"{pad}ln = tid % {plan.group}",
                  f"{pad}rb = cuda.blockIdx.x * {per_block}",
                  f"{pad}while rb < {m}:  # uniform over the block: every lane shuffles",
                  f"{pad}    r = rb + tid // {plan.group}",
                  f"{pad}    rv = r < {m}",
                  f"{pad}    rr = min(r, {m - 1})"]
        row, leader, valid = "rr", "rv and ln == 0", "rv"
        blocks = max(1, min(_cdiv(m, per_block), cfg.max_blocks))
        step = f"rb += cuda.gridDim.x * {per_block}"
        lane_index = "ln"
    else:
        lines += [f"{pad}r = cuda.blockIdx.x", f"{pad}while r < {m}:"]
        row, leader, valid = "r", "tid == 0", None
        blocks = max(1, min(m, cfg.max_blocks))
        step = "r += cuda.gridDim.x"
        lane_index = "tid"
    pad += "    "
    slots: list[_Lane] = []
    guards: list[str | None] = []
    if plan.kind != "loop":
        lines.append(f"{pad}fb = {row} * {width}")
        for i in range(plan.slots):
            q = f"{lane_index} + {i * plan.step}" if i else lane_index
            if (i + 1) * plan.step <= width:
                lines.append(f"{pad}f{i} = fb + {q}")
                guards.append(None)
            else:  # padding lanes read the row's last element and neither store nor reduce it
                lines += [f"{pad}v{i} = {q} < {width}", f"{pad}f{i} = fb + min({q}, {width - 1})"]
                guards.append(f"v{i}")
            slots.append(_Lane(f"f{i}", f"_{i}"))
    slot_vals: list[dict[Var, str]] = [{} for _ in slots]
    seed: dict[Var, str] = {}
    row_defs: list[JaxprEqn] = []
    n_acc = 0

    def both(a: str | None, b: str | None) -> str | None:
        return f"{a} and {b}" if a and b else a or b

    for kind, eqns in passes:
        if kind == "outer":
            lane = _Lane(row, "_o")
            values = _emit(k, lane, eqns, {}, seed=seed, store_guard=leader)
            lines += _lines([lane], pad)
            seed.update({e.outvars[0]: values[e.outvars[0]] for e in eqns})
            continue
        rs = _reductions(eqns)
        accs = {e.outvars[0]: f"acc{n_acc + j}" for j, e in enumerate(rs)}
        lines += [f"{pad}{accs[e.outvars[0]]} = {_acc_init(e)}" for e in rs]
        if plan.kind == "loop":
            again = codegen_cpu._recompute(eqns, row_defs, seed)
            lines += [f"{pad}q = tid", f"{pad}while q < {width}:",
                      f"{pad}    f = {row} * {width} + q"]
            lane = _Lane("f", "")
            _emit(k, lane, again + eqns, accs, seed=seed, no_store=frozenset(
                e.outvars[0] for e in again))
            lines += _lines([lane], pad + "    ") + [f"{pad}    q += {plan.threads}"]
        else:  # every slot's values of earlier passes are still in registers: nothing re-read
            lanes = []
            for i, prev in enumerate(slots):
                lane = _Lane(prev.flat, prev.suffix)
                lane.loaded = prev.loaded
                slot_vals[i] = _emit(k, lane, eqns, accs, seed={**seed, **slot_vals[i]},
                                     store_guard=both(valid, guards[i]), acc_guard=guards[i])
                lanes.append(lane)
            lines += _lines(lanes, pad)
        for j, e in enumerate(rs):
            acc, out = accs[e.outvars[0]], e.outvars[0]
            lines += _row_reduce(k, plan, e, acc, n_acc + j, pad)
            name = f"r{len(seed)}"
            lines.append(f"{pad}{name} = {cast(out.aval.dtype, acc)}")
            seed[out] = name
            if out in k.out_names:
                lines += [f"{pad}if {leader}:", f"{pad}    {_at(k.out_names[out], row)} = {name}"]
        n_acc += len(rs)
        row_defs.extend(e for e in eqns if e.primitive.name not in fusion.REDUCTIONS)
    if plan.kind != "warp" and reds and blocks < m:
        lines.append(f"{pad}cuda.syncthreads()  # the shared slots are reused by the next row")
    lines.append(f"{pad}{step}")
    launch = Launch(steps=[f"kernel[{blocks}, {plan.threads}]({{args}})"] if m else [])
    return _kernel_def(k) + "\n".join(lines) + "\n", launch


def _reduce_splits(cfg: Config, m: int, kred: int) -> int:
    """How many pieces the reduced range of a general reduction is cut into: enough threads
    to fill the card when the outputs are few (a bias gradient: 512 outputs of 4096 rows each
    ran on 2 blocks), never fewer than red_split_min elements per thread."""
    if m == 0 or kred < 2 * cfg.red_split_min or m >= cfg.red_split_threads:
        return 1
    return max(1, min(_cdiv(cfg.red_split_threads, m), kred // cfg.red_split_min))


def _render_general_reduce(k: _Kernel, kept: list[int], axes: list[int]) -> tuple[str, Launch]:
    """Thread (o, s) reduces piece s of output o's elements serially (consecutive threads,
    consecutive outputs: coalesced when the kept axes are the trailing ones). With one piece
    it stores the output; with several it writes a partial, and `finish` combines each
    output's partials in piece order (deterministic, no atomics)."""
    cfg, nest, pad = k.cfg, k.nest, "    "
    shape = nest.shape
    m = _prod([shape[d] for d in kept])
    kred = _prod([shape[d] for d in axes])
    splits = _reduce_splits(cfg, m, kred)
    chunk = _cdiv(kred, splits)
    kst = _strides([shape[d] for d in kept])
    rst = _strides([shape[d] for d in axes])
    reds = _reductions(nest.eqns)
    accs = {e.outvars[0]: f"acc{j}" for j, e in enumerate(reds)}
    lines = _scalar_loads(k, pad)
    lines += [f"{pad}t = cuda.grid(1)", f"{pad}while t < {m * splits}:",
              f"{pad}    o = t % {m}"]
    lines += [f"{pad}    {accs[e.outvars[0]]} = {_acc_init(e)}" for e in reds]
    if splits == 1:
        lines.append(f"{pad}    for q in range({kred}):")
    else:
        lines += [f"{pad}    q0 = (t // {m}) * {chunk}",
                  f"{pad}    for q in range(q0, min(q0 + {chunk}, {kred})):"]
    idx = [""] * len(shape)
    inner = pad + "        "
    for j, d in enumerate(kept):
        idx[d] = f"j{d}"
        lines.append(f"{inner}j{d} = (o // {kst[j]}) % {shape[d]}")
    for j, d in enumerate(axes):
        idx[d] = f"j{d}"
        lines.append(f"{inner}j{d} = (q // {rst[j]}) % {shape[d]}")
    flat = " + ".join(f"j{d} * {k.st[d]}" for d in range(len(shape))) or "0"
    lines.append(f"{inner}f = {flat}")
    lane = _Lane("f", "", idx=idx)
    _emit(k, lane, nest.eqns, accs)
    lines += _lines([lane], inner)
    outs = [k.out_names.get(e.outvars[0]) for e in reds]
    for j, (e, name) in enumerate(zip(reds, outs, strict=True)):
        if splits > 1:
            lines.append(f"{pad}    {_at(f'p{j}', 't')} = acc{j}")
        elif name is not None:
            lines.append(f"{pad}    {_at(name, 'o')} = {cast(e.outvars[0].aval.dtype, f'acc{j}')}")
    lines.append(f"{pad}    t += cuda.gridsize(1)")
    blocks = max(1, min(_cdiv(m * splits, cfg.threads), cfg.max_blocks))
    if splits == 1:
        launch = Launch(steps=[f"kernel[{blocks}, {cfg.threads}]({{args}})"] if m else [])
        return _kernel_def(k) + "\n".join(lines) + "\n", launch
    partials = [f"p{j}" for j in range(len(reds))]
    src = _kernel_def(k, partials) + "\n".join(lines) + "\n"
    fin = [f"{pad}o = cuda.grid(1)", f"{pad}while o < {m}:"]
    for j, (e, name) in enumerate(zip(reds, outs, strict=True)):
        if name is None:
            continue
        comb = _COMBINE[e.primitive.name](f"acc{j}", f"p{j}[q * {m} + o]",
                                          e.invars[0].aval.dtype)
        fin += [f"{pad}    acc{j} = {_acc_init(e)}", f"{pad}    for q in range({splits}):",
                f"{pad}        acc{j} = {comb}",
                f"{pad}    {name}[o] = {cast(e.outvars[0].aval.dtype, f'acc{j}')}"]
    fin.append(f"{pad}    o += cuda.gridsize(1)")
    fin_params = ", ".join([*partials, *(o for o in outs if o is not None)])
    src += f"\n\n@cuda.jit(cache=CACHE)\ndef finish({fin_params}):\n" + "\n".join(fin) + "\n"
    fin_blocks = max(1, min(_cdiv(m, cfg.threads), cfg.max_blocks))
    launch = Launch(
        allocs=[(m * splits, _acc_dtype(e)) for e in reds],
        steps=[f"kernel[{blocks}, {cfg.threads}]({{args}}, {{partials}})",
               f"finish[{fin_blocks}, {cfg.threads}]({{partials}}"
               + "".join(", {" + o + "}" for o in outs if o) + ")"])
    return src, launch


def _header(jaxpr: Jaxpr, names: core.PrintNames) -> str:
    text = core.pp_jaxpr_lines(jaxpr, names, 0, inline_ok=True).replace("\n", "\n# ")
    return "\n".join([
        f"# numbax {codegen_cpu.NUMBAX_VERSION} | numba {numba.__version__} | cuda",
        f"# {text}",
        "import math  # noqa: F401",
        "",
        "import numpy as np  # noqa: F401",
        "",
        "from numbax._src.compiler.cuda.runtime import memory as cuda_runtime",
        "from numbax._src.compiler.cuda.runtime import device as cd  # noqa: F401",
        "",
        "cuda = cuda_runtime.get_cuda()",
        'CACHE = "__file__" in globals() and not cuda_runtime.simulator_enabled()',
    ])
