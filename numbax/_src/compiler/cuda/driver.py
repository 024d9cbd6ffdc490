"""The CUDA host driver: a Python function that allocates device buffers and launches the
kernels of a partitioned jaxpr in program order (loop nests from codegen_cuda, library kernels
from cuda_matmul/cuda_index), with control flow driven from the host."""
from __future__ import annotations

import numpy as np

from numbax._src import core
from numbax._src.compiler import cache, fusion, inline, passes
from numbax._src.compiler.cpu.loops import dtype_ctor, render_scalar
from numbax._src.compiler.cuda import complex_rules as cuda_complex
from numbax._src.compiler.cuda.kernels import index as cuda_index
from numbax._src.compiler.cuda.kernels import linalg as cuda_linalg
from numbax._src.compiler.cuda.kernels import sort as cuda_sort
from numbax._src.compiler.cuda.kernels.matmul import MatmulShape, plan_matmul, render_transpose
from numbax._src.compiler.cuda.loops import (
    Config,
    KernelPlan,
    _cdiv,
    _header,
    _prod,
    _strides,
    fusible,
    render_loop,
)
from numbax._src.compiler.cuda.runtime import memory as cuda_runtime
from numbax._src.core import Jaxpr, JaxprEqn, Literal, Var

CONTROL_FLOW = frozenset({"while", "scan", "cond"})
# one-equation kernel modules rendered as a KernelPlan: name -> module with supported/render
PLANNED = {name: mod for mod in (cuda_sort, cuda_linalg) for name in mod.KERNELS}
LIBRARY = frozenset({"dot_general", "transpose", "reshape", "squeeze", "expand_dims",
                     "broadcast_in_dim", "copy", "bitcast_convert_type",
                     *cuda_index.KERNELS, *CONTROL_FLOW})


def check_lowerings(jaxpr: Jaxpr, fun_name: str) -> None:
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name in CONTROL_FLOW:
            continue  # the sub-jaxprs are checked as they are compiled
        if fusible(eqn) or (name in LIBRARY and cuda_complex.library_ok(eqn)
                            and cuda_index.supported(eqn)):
            continue
        if name in PLANNED and PLANNED[name].supported(eqn):
            continue
        dtypes = ", ".join(v.aval.str_short() for v in eqn.invars if isinstance(v, Var))
        raise NotImplementedError(
            f"jit(backend='gpu'): primitive {name} (in function {fun_name}, operands {dtypes}) "
            "has no CUDA lowering yet. Run it with backend='cpu' or without jit."
        )



class _Driver:
    """Renders the host driver: allocations and launches in program order."""

    def __init__(self, jaxpr: Jaxpr, cfg: Config, fun_name: str = "", n_dest: int = 0) -> None:
        self.cfg = cfg
        self.fun_name = fun_name
        self.names: dict[Var, str] = {}
        for j, v in enumerate([*jaxpr.constvars, *jaxpr.invars]):
            self.names[v] = f"a{j}"
        # the last n_dest outputs are written into caller-given buffers d0.. (a scan's ys rows)
        self.dests = [(v, f"d{q}") for q, v in enumerate(jaxpr.outvars[len(jaxpr.outvars)
                                                                        - n_dest:])]
        self.dest_of = {}
        kept = set(jaxpr.outvars[:len(jaxpr.outvars) - n_dest])  # a carry never aliases a row
        for v, d in self.dests:
            if isinstance(v, Var) and v not in self.names and v not in kept:
                self.dest_of.setdefault(v, d)
        self.imports: list[str] = []
        self.launchers: dict[tuple[str, str], str] = {}  # (kernel, config) -> module-level name
        self.consts: dict[str, str] = {}  # literal source -> module-level device buffer
        self.lines: list[str] = []
        self.sources: list[str] = []
        self.n = 0
        self.pp = core.PrintNames()
        _header(jaxpr, self.pp)  # names variables the way the header prints them

    def temp(self) -> str:
        self.n += 1
        return f"t{self.n - 1}"

    def load(self, src: str, alias: str, attrs: tuple[str, ...] = ("kernel",)) -> list[str]:
        module = cache.load_module(src, self.cfg.key()).__name__
        self.sources.append(src)
        names = [f"{alias}{'' if a == 'kernel' else '_' + a}" for a in attrs]
        self.imports.append(f"from {module} import "
                            + ", ".join(f"{a} as {n}" for a, n in zip(attrs, names)))
        return names

    def alloc(self, v: Var) -> str:
        if v in self.dest_of:  # written straight into the caller's buffer
            name = self.names[v] = self.dest_of.pop(v)
            return name
        name = self.temp()
        self.names[v] = name
        self.lines.append(f"    {name} = rt.empty({_prod(v.aval.shape)}, "
                          f"{dtype_ctor(v.aval.dtype)})")
        return name

    def arg(self, x) -> str:
        if isinstance(x, Literal):  # a device copy made once, fetched by its content key
            text = render_scalar(x.val, x.aval.dtype)
            if text not in self.consts:
                key = cuda_runtime.register_const(np.asarray(x.val, dtype=x.aval.dtype))
                self.consts[text] = f"rt.const({key!r})"
            return self.consts[text]
        return self.names[x]

    def launch(self, kname: str, config: str, args: str, pad: str = "    ") -> None:
        """A launch line through a launcher configured once at module level (cuda_launch)."""
        key = (kname, config)
        if key not in self.launchers:
            self.launchers[key] = f"L{len(self.launchers)}"
        self.lines.append(f"{pad}{self.launchers[key]}({args})")

    def loop(self, j: int, nest: fusion.LoopNest) -> None:
        src, launch = render_loop(nest, self.cfg)
        attrs = ("kernel", "finish") if launch.allocs else ("kernel",)
        knames = self.load(src, f"k{j}_loop", attrs)
        outs = [self.alloc(v) for v in nest.outputs]
        fmt = {"args": ", ".join([*(self.names[v] for v in nest.inputs), *outs])}
        fmt.update({f"o{q}": name for q, name in enumerate(outs)})
        parts = []
        for size, dt in launch.allocs:
            p = self.temp()
            parts.append(p)
            self.lines.append(f"    {p} = rt.empty({size}, {dtype_ctor(dt)})")
        fmt["partials"] = ", ".join(parts)
        for step in launch.steps:
            step = step.replace("kernel[", f"{knames[0]}[").replace("finish[", f"{knames[-1]}[")
            head, args = step.format(**fmt).split("](", 1)
            kname, config = head.split("[", 1)
            self.launch(kname, config, args[:-1])

    def library(self, j: int, eqn: JaxprEqn) -> None:
        name = eqn.primitive.name
        pp = core.pp_eqn(eqn, self.pp, 0).replace("\n", "\n    # ")
        self.lines.append(f"    # {pp}")
        if name in ("reshape", "squeeze", "expand_dims", "copy", "broadcast_in_dim"):
            self.names[eqn.outvars[0]] = self.arg(eqn.invars[0])  # flat buffers: a free view
        elif name == "transpose":
            x = eqn.invars[0]
            out = self.alloc(eqn.outvars[0])
            self._transpose(j, self.arg(x), out, x.aval.shape, eqn.params["permutation"])
        elif name == "dot_general":
            self._dot_general(j, eqn)
        elif name == "bitcast_convert_type":
            out = self.temp()
            self.names[eqn.outvars[0]] = out
            self.lines.append(f"    {out} = {self.arg(eqn.invars[0])}.view("
                              f"{dtype_ctor(eqn.outvars[0].aval.dtype)})")
        elif name in cuda_index.KERNELS:
            self._index_kernel(j, eqn)
        elif name in PLANNED:
            self._planned(j, eqn, PLANNED[name].render(eqn, self.cfg))
        elif name in CONTROL_FLOW:
            getattr(self, f"_{name}")(j, eqn)
        else:  # check_lowerings refused it already
            raise NotImplementedError(f"jit(backend='gpu'): primitive {name} has no CUDA lowering")

    # ------------------------------------------------------------------ host-driven control flow

    def _sub(self, tag: str, closed: core.ClosedJaxpr, n_dest: int = 0) -> str:
        """A sub-jaxpr compiled to its own driver; returns an expression calling it with its
        device-resident consts bound (the caller appends the operands)."""
        jaxpr = passes.simplify(core.check_jaxpr(inline.inline_calls(closed.jaxpr)))
        check_lowerings(jaxpr, self.fun_name)
        module, sources = _build(jaxpr, self.cfg, self.fun_name, n_dest)
        self.sources.extend(sources)
        self.imports.append(f"from {module.__name__} import driver as {tag}")
        keys = [cuda_runtime.register_const(np.asarray(core.to_numpy(c))) for c in closed.consts]
        return f"{tag}({''.join(f'rt.const({k!r}), ' for k in keys)}"

    def _bind_outs(self, eqn: JaxprEqn, expr: str) -> None:
        outs = [self.temp() for _ in eqn.outvars]
        for v, o in zip(eqn.outvars, outs, strict=True):
            self.names[v] = o
        if outs:
            self.lines.append(f"    {''.join(o + ', ' for o in outs)}= {expr}")

    def _while(self, j: int, eqn: JaxprEqn) -> None:
        p = eqn.params
        args = [self.arg(x) for x in eqn.invars]
        cc, bc = p["cond_nconsts"], p["body_nconsts"]
        cond = self._sub(f"k{j}_cond", p["cond_jaxpr"])
        body = self._sub(f"k{j}_body", p["body_jaxpr"])
        c = self.temp()
        cargs, bargs = "".join(a + ", " for a in args[:cc]), "".join(a + ", " for a in
                                                                   args[cc:cc + bc])
        self.lines += [f"    {c} = ({''.join(a + ', ' for a in args[cc + bc:])})",
                       f"    while rt.truthy({cond}{cargs}*{c})[0]):",
                       f"        {c} = {body}{bargs}*{c})"]
        self._bind_outs(eqn, c)

    def _cond(self, j: int, eqn: JaxprEqn) -> None:
        branches = eqn.params["branches"]
        index, *ops = [self.arg(x) for x in eqn.invars]
        c, i = self.temp(), self.temp()
        self.lines.append(f"    {i} = rt.branch_index({index}, {len(branches)})")
        for b, closed in enumerate(branches):
            call = self._sub(f"k{j}_br{b}", closed)
            self.lines += [f"    {'if' if b == 0 else 'elif'} {i} == {b}:" if b < len(
                branches) - 1 else "    else:",
                f"        {c} = {call}{''.join(a + ', ' for a in ops)})"]
        self._bind_outs(eqn, c)

    def _scan(self, j: int, eqn: JaxprEqn) -> None:
        p = eqn.params
        nc, ncarry, length = p["num_consts"], p["num_carry"], p["length"]
        args = [self.arg(x) for x in eqn.invars]
        consts, carry, xs = args[:nc], args[nc:nc + ncarry], args[nc + ncarry:]
        y_vars = eqn.outvars[ncarry:]
        # the body writes its ys outputs straight into this step's rows (no copy per step)
        body = self._sub(f"k{j}_body", p["jaxpr"], n_dest=len(y_vars))
        x_sizes = [_prod(v.aval.shape[1:]) for v in eqn.invars[nc + ncarry:]]
        ys = []
        for v in y_vars:
            ys.append(self.temp())
            self.lines.append(f"    {ys[-1]} = rt.empty({_prod(v.aval.shape)}, "
                              f"{dtype_ctor(v.aval.dtype)})")
        c, out, q = self.temp(), self.temp(), self.temp()
        steps = f"range({length - 1}, -1, -1)" if p["reverse"] else f"range({length})"
        views = [f"{x}[{q} * {n}:({q} + 1) * {n}], " for x, n in zip(xs, x_sizes)]
        views += [f"{y}[{q} * {n}:({q} + 1) * {n}], "
                  for y, n in zip(ys, (_prod(v.aval.shape[1:]) for v in y_vars))]
        self.lines += [f"    {c} = ({''.join(a + ', ' for a in carry)})",
                       f"    for {q} in {steps}:",
                       f"        {out} = {body}{''.join(a + ', ' for a in consts)}*{c}, "
                       f"{''.join(views)})",
                       f"        {c} = {out}[:{ncarry}]"]
        self._bind_outs(eqn, f"(*{c}, {''.join(y + ', ' for y in ys)})")

    def _index_kernel(self, j: int, eqn: JaxprEqn) -> None:
        """Shape/indexing primitives: kernels from cuda_index, launched in order; each step
        is (function name, element count); every function takes (inputs..., output)."""
        src, steps = cuda_index.render(eqn, self.cfg)
        funcs = tuple(dict.fromkeys(f for f, _ in steps))
        knames = dict(zip(funcs, self.load(src, f"k{j}_ix", funcs), strict=True))
        ins = [self.arg(x) for x in eqn.invars]
        out = self.alloc(eqn.outvars[0])
        for func, n in steps:
            if n:
                blocks = max(1, min(_cdiv(n, self.cfg.threads), self.cfg.max_blocks))
                self.launch(knames[func], f"{blocks}, {self.cfg.threads}",
                            ", ".join([*ins, out]))

    def _planned(self, j: int, eqn: JaxprEqn, plan: KernelPlan) -> None:
        """A KernelPlan (cuda_sort, cuda_linalg): scratch buffers, then its launches in order."""
        funcs = tuple(dict.fromkeys(f for f, _, _ in plan.launches)) or ("kernel",)
        knames = dict(zip(funcs, self.load(plan.src, f"k{j}_{eqn.primitive.name}", funcs),
                          strict=True))
        ins = [self.arg(x) for x in eqn.invars]
        outs = [self.alloc(v) for v in eqn.outvars]
        scratch = []
        for size, dt in plan.scratch:
            scratch.append(self.temp())
            self.lines.append(f"    {scratch[-1]} = rt.empty({size}, {dtype_ctor(dt)})")
        for func, blocks, threads in plan.launches:
            self.launch(knames[func], f"{blocks}, {threads}", ", ".join([*ins, *outs, *scratch]))

    def _transpose(self, j: int, x: str, out: str, shape, perm) -> None:
        (kname,) = self.load(render_transpose(tuple(shape), tuple(perm), self.cfg), f"k{j}_tr")
        n = _prod(shape)
        if n:
            blocks = max(1, min(_cdiv(n, self.cfg.threads), self.cfg.max_blocks))
            self.launch(kname, f"{blocks}, {self.cfg.threads}", f"{x}, {out}")

    def _dot_general(self, j: int, eqn: JaxprEqn) -> None:
        """One matmul kernel reading each operand through its own layout's strides; only an
        operand whose (batch, free, contracting) dimension groups are not each one stride
        apart in memory is gathered by a transpose kernel first."""
        x, y = eqn.invars
        (xc, yc), (xb, yb) = eqn.params["dimension_numbers"]
        xs, ys = x.aval.shape, y.aval.shape
        xf = [d for d in range(len(xs)) if d not in xc and d not in xb]
        yf = [d for d in range(len(ys)) if d not in yc and d not in yb]
        nb = _prod([xs[d] for d in xb])
        m, n = _prod([xs[d] for d in xf]), _prod([ys[d] for d in yf])
        kdim = _prod([xs[d] for d in xc])
        bufs, strides = [], []
        for v, groups, tag in ((x, (xb, xf, xc), "x"), (y, (yb, yc, yf), "y")):
            buf = self.arg(v)
            st = group_strides(v.aval.shape, groups)
            if st is None:
                perm = [*groups[0], *groups[1], *groups[2]]
                t = self.temp()
                self.lines.append(f"    {t} = rt.empty({_prod(v.aval.shape)}, "
                                  f"{dtype_ctor(v.aval.dtype)})")
                self._transpose(f"{j}{tag}", buf, t, v.aval.shape, perm)
                buf = t
                sizes = [_prod([v.aval.shape[d] for d in g]) for g in groups]
                st = (sizes[1] * sizes[2], sizes[2], 1)
            bufs.append(buf)
            strides.append(st)
        out = self.alloc(eqn.outvars[0])
        dtypes = (x.aval.dtype, y.aval.dtype, eqn.outvars[0].aval.dtype)
        plan = plan_matmul(MatmulShape(nb, m, n, kdim, dtypes, *strides), self.cfg)
        funcs = tuple(dict.fromkeys(f for f, _, _ in plan.launches)) or ("kernel",)
        knames = dict(zip(funcs, self.load(plan.src, f"k{j}_mm", funcs), strict=True))
        scratch = []
        for size, dt in plan.scratch:
            scratch.append(self.temp())
            self.lines.append(f"    {scratch[-1]} = rt.empty({size}, {dtype_ctor(dt)})")
        for func, blocks, threads in plan.launches:
            self.launch(knames[func], f"{blocks}, {threads}",
                        ", ".join([*bufs, out, *scratch]))

    def render(self, jaxpr: Jaxpr) -> str:
        for v, d in self.dests:  # outputs not computed in place: copied into their buffer
            if not isinstance(v, Var) or self.names[v] != d:
                self.lines.append(f"    rt.copy_into({d}, {self.arg(v)})")
        rets = [f"rt.to_device(np.asarray({render_scalar(x.val, x.aval.dtype)}))"
                if isinstance(x, Literal) else self.arg(x)  # an output never shares a const
                for x in jaxpr.outvars]
        params = ", ".join([*(self.names[v] for v in [*jaxpr.constvars, *jaxpr.invars]),
                            *(d for _, d in self.dests)])
        head = _header(jaxpr, core.PrintNames()).split("\ncuda =")[0]
        head = head.replace("# numbax", "# driver | numbax", 1)
        launchers = [f"{name} = launcher({kname}, {config})"
                     for (kname, config), name in self.launchers.items()]
        return (head + "\n"
                + "from numbax._src.compiler.cuda.runtime import memory as rt  # noqa: F401\n"
                + "from numbax._src.compiler.cuda.runtime.launch import launcher  # noqa: F401\n"
                + "\n".join(self.imports) + "\n\n"
                + "".join(line + "\n" for line in launchers) + "\n\n"
                + f"def driver({params}):\n" + "\n".join(self.lines)
                + ("\n" if self.lines else "")
                + f"    return ({''.join(r + ', ' for r in rets)})\n")


def group_strides(shape: tuple[int, ...], groups) -> tuple[int, ...] | None:
    """Per group of dimensions (in the order given), the element stride of its flattened
    index in a contiguous array of `shape`, or None where a group is not evenly strided."""
    st = _strides(shape)
    out = []
    for g in groups:
        dims = [d for d in g if shape[d] != 1]
        for a, b in zip(dims, dims[1:]):
            if st[a] != st[b] * shape[b]:
                return None
        out.append(st[dims[-1]] if dims else 0)
    return tuple(out)


class CudaExecutable:
    """A jaxpr compiled for the GPU: the driver, device-resident consts, generated sources."""

    def __init__(self, driver, consts, jaxpr, out_tree, fun_name, sources, device) -> None:
        self.driver = driver
        self.consts = consts
        self.jaxpr = jaxpr
        self.out_tree = out_tree
        self.fun_name = fun_name
        self.sources = sources
        self.device = device
        self.out_avals = [v.aval for v in jaxpr.outvars]
        self.in_avals = jaxpr.in_avals

    def call_flat(self, leaves) -> list:
        from numbax._src.array import GpuArray

        bufs = []
        for x, aval in zip(leaves, self.in_avals, strict=True):
            if type(x) is GpuArray:
                bufs.append(x._dbuf)
            else:
                bufs.append(cuda_runtime.to_device(np.asarray(x, dtype=aval.dtype)))
        outs = self.driver(*self.consts, *bufs)
        return [GpuArray._from_buffer(o, a.shape, a.weak_type, self.device)
                for o, a in zip(outs, self.out_avals, strict=True)]


def compile_jaxpr(closed: core.ClosedJaxpr, out_tree, fun_name: str, device) -> CudaExecutable:
    """Simplify, fuse, render each kernel module, load them (cached), render the driver."""
    cfg = Config(cuda_runtime.simulator_enabled())
    cuda_runtime.get_cuda()
    jaxpr = passes.simplify(core.check_jaxpr(inline.inline_calls(closed.jaxpr)))
    check_lowerings(jaxpr, fun_name)
    module, sources = _build(jaxpr, cfg, fun_name)
    consts = [cuda_runtime.to_device(np.asarray(core.to_numpy(c))) for c in closed.consts]
    return CudaExecutable(module.driver, consts, jaxpr, out_tree, fun_name, sources, device)


def _build(jaxpr: Jaxpr, cfg: Config, fun_name: str, n_dest: int = 0):
    """The driver module of a simplified jaxpr (sub-drivers for control flow first) and every
    generated source; the driver writes its last n_dest outputs into buffers given last."""
    nodes = fusion.partition(jaxpr, fusible)
    drv = _Driver(jaxpr, cfg, fun_name, n_dest)
    for j, node in enumerate(nodes):
        if isinstance(node, fusion.LoopNest):
            drv.loop(j, node)
        else:
            drv.library(j, node.eqn)
    src = drv.render(jaxpr)
    return cache.load_module(src, cfg.key()), [*drv.sources, src]
