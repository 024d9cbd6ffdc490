"""The CUDA host driver: a Python function that allocates device buffers and launches the
kernels of a partitioned jaxpr in program order (loop nests from codegen_cuda, library kernels
from cuda_matmul/cuda_index), with control flow driven from the host."""
from __future__ import annotations

import numpy as np

from numbax._src import core, cuda_runtime
from numbax._src.compiler import (
    cache,
    cuda_index,
    cuda_linalg,
    cuda_sort,
    fusion,
    inline,
    passes,
)
from numbax._src.compiler.codegen_cpu import dtype_ctor, render_scalar
from numbax._src.compiler.codegen_cuda import (
    Config,
    KernelPlan,
    _cdiv,
    _header,
    _prod,
    fusible,
    render_loop,
)
from numbax._src.compiler.cuda_matmul import matmul_grid, render_matmul, render_transpose
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
        if fusible(eqn) or (name in LIBRARY and eqn.outvars[0].aval.dtype.kind != "c"
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

    def __init__(self, jaxpr: Jaxpr, cfg: Config, fun_name: str = "") -> None:
        self.cfg = cfg
        self.fun_name = fun_name
        self.names: dict[Var, str] = {}
        for j, v in enumerate([*jaxpr.constvars, *jaxpr.invars]):
            self.names[v] = f"a{j}"
        self.imports: list[str] = []
        self.lines: list[str] = []
        self.sources: list[str] = []
        self.n = 0
        self.pp = core._Names()
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
        name = self.temp()
        self.names[v] = name
        self.lines.append(f"    {name} = rt.empty({_prod(v.aval.shape)}, "
                          f"{dtype_ctor(v.aval.dtype)})")
        return name

    def arg(self, x) -> str:
        if isinstance(x, Literal):
            return f"rt.to_device(np.asarray({render_scalar(x.val, x.aval.dtype)}))"
        return self.names[x]

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
            self.lines.append("    " + step.format(**fmt))

    def library(self, j: int, eqn: JaxprEqn) -> None:
        name = eqn.primitive.name
        pp = core._pp_eqn(eqn, self.pp, 0).replace("\n", "\n    # ")
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

    def _sub(self, tag: str, closed: core.ClosedJaxpr) -> str:
        """A sub-jaxpr compiled to its own driver; returns an expression calling it with its
        device-resident consts bound (the caller appends the operands)."""
        jaxpr = passes.simplify(core.check_jaxpr(inline.inline_calls(closed.jaxpr)))
        check_lowerings(jaxpr, self.fun_name)
        module, sources = _build(jaxpr, self.cfg, self.fun_name)
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
        body = self._sub(f"k{j}_body", p["jaxpr"])
        x_sizes = [_prod(v.aval.shape[1:]) for v in eqn.invars[nc + ncarry:]]
        y_vars = eqn.outvars[ncarry:]
        ys = []
        for v in y_vars:
            ys.append(self.temp())
            self.lines.append(f"    {ys[-1]} = rt.empty({_prod(v.aval.shape)}, "
                              f"{dtype_ctor(v.aval.dtype)})")
        c, out, q = self.temp(), self.temp(), self.temp()
        steps = f"range({length - 1}, -1, -1)" if p["reverse"] else f"range({length})"
        x_views = "".join(f"{x}[{q} * {n}:({q} + 1) * {n}], " for x, n in zip(xs, x_sizes))
        self.lines += [f"    {c} = ({''.join(a + ', ' for a in carry)})",
                       f"    for {q} in {steps}:",
                       f"        {out} = {body}{''.join(a + ', ' for a in consts)}*{c}, "
                       f"{x_views})",
                       f"        {c} = {out}[:{ncarry}]"]
        for k, (y, v) in enumerate(zip(ys, y_vars, strict=True)):
            n = _prod(v.aval.shape[1:])
            if n:
                self.lines.append(f"        rt.copy_into({y}[{q} * {n}:({q} + 1) * {n}], "
                                  f"{out}[{ncarry + k}])")
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
                self.lines.append(f"    {knames[func]}[{blocks}, {self.cfg.threads}]"
                                  f"({', '.join([*ins, out])})")

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
            self.lines.append(f"    {knames[func]}[{blocks}, {threads}]"
                              f"({', '.join([*ins, *outs, *scratch])})")

    def _transpose(self, j: int, x: str, out: str, shape, perm) -> None:
        (kname,) = self.load(render_transpose(tuple(shape), tuple(perm), self.cfg), f"k{j}_tr")
        n = _prod(shape)
        if n:
            blocks = max(1, min(_cdiv(n, self.cfg.threads), self.cfg.max_blocks))
            self.lines.append(f"    {kname}[{blocks}, {self.cfg.threads}]({x}, {out})")

    def _dot_general(self, j: int, eqn: JaxprEqn) -> None:
        x, y = eqn.invars
        (xc, yc), (xb, yb) = eqn.params["dimension_numbers"]
        xs, ys = x.aval.shape, y.aval.shape
        xf = [d for d in range(len(xs)) if d not in xc and d not in xb]
        yf = [d for d in range(len(ys)) if d not in yc and d not in yb]
        nb = _prod([xs[d] for d in xb])
        m, n = _prod([xs[d] for d in xf]), _prod([ys[d] for d in yf])
        kdim = _prod([xs[d] for d in xc])
        bufs = []
        for v, perm, tag in ((x, [*xb, *xf, *xc], "x"), (y, [*yb, *yc, *yf], "y")):
            buf = self.arg(v)
            if perm != sorted(perm):
                t = self.temp()
                self.lines.append(f"    {t} = rt.empty({_prod(v.aval.shape)}, "
                                  f"{dtype_ctor(v.aval.dtype)})")
                self._transpose(f"{j}{tag}", buf, t, v.aval.shape, perm)
                buf = t
            bufs.append(buf)
        out = self.alloc(eqn.outvars[0])
        dtypes = (x.aval.dtype, y.aval.dtype, eqn.outvars[0].aval.dtype)
        (kname,) = self.load(render_matmul(nb, m, n, kdim, dtypes, self.cfg), f"k{j}_mm")
        if nb * m * n:
            self.lines.append(f"    {kname}{matmul_grid(nb, m, n, self.cfg)}"
                              f"({bufs[0]}, {bufs[1]}, {out})")
        if nb * m * n and kdim == 0:
            raise NotImplementedError("jit(backend='gpu'): dot_general with an empty contraction")

    def render(self, jaxpr: Jaxpr) -> str:
        rets = [self.arg(x) for x in jaxpr.outvars]
        params = ", ".join(self.names[v] for v in [*jaxpr.constvars, *jaxpr.invars])
        head = _header(jaxpr, core._Names()).split("\ncuda =")[0]
        head = head.replace("# numbax", "# driver | numbax", 1)
        return (head + "\nfrom numbax._src import cuda_runtime as rt  # noqa: F401\n"
                + "\n".join(self.imports) + "\n\n\n"
                + f"def driver({params}):\n" + "\n".join(self.lines)
                + ("\n" if self.lines else "")
                + f"    return ({''.join(r + ', ' for r in rets)})\n")


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


def _build(jaxpr: Jaxpr, cfg: Config, fun_name: str):
    """The driver module of a simplified jaxpr (sub-drivers for control flow first) and every
    generated source."""
    nodes = fusion.partition(jaxpr, fusible)
    drv = _Driver(jaxpr, cfg, fun_name)
    for j, node in enumerate(nodes):
        if isinstance(node, fusion.LoopNest):
            drv.loop(j, node)
        else:
            drv.library(j, node.eqn)
    src = drv.render(jaxpr)
    return cache.load_module(src, cfg.key()), [*drv.sources, src]
