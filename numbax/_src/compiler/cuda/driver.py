"""The CUDA host driver: a generated Python function that allocates device buffers and launches
the kernels of a partitioned jaxpr in program order, with control flow driven from the host.

Loop nests come from loops.py/rows.py; every other equation runs its registered CUDA library
rule, one of the CudaDriver methods below (views, transposes, matmuls and convolutions, cuFFT,
planned kernel modules of kernels/, host-driven control flow); an equation no rule covers runs
its eager implementation on the host between launches (copied back and forth)."""
from __future__ import annotations

import warnings
from collections.abc import Callable
from types import ModuleType
from typing import NamedTuple

import numpy as np

from numbax._src import core
from numbax._src.compiler import cache, fusion, ir, pipeline, registry
from numbax._src.compiler.backend import EagerCall
from numbax._src.compiler.cuda import loops, rows
from numbax._src.compiler.cuda.config import Config, group_strides, prod
from numbax._src.compiler.cuda.kernels import conv as cuda_conv
from numbax._src.compiler.cuda.kernels.matmul import MatmulShape, plan_matmul, render_transpose
from numbax._src.compiler.cuda.modules import header
from numbax._src.compiler.cuda.runtime import cublas, cublaslt, cudnn, cufft, graphs
from numbax._src.compiler.cuda.runtime import memory as cuda_runtime
from numbax._src.compiler.registry import EAGER
from numbax._src.compiler.source import dtype_ctor, render_scalar
from numbax._src.core import Jaxpr, JaxprEqn, Literal, Var

_WARNED_HOST: set = set()  # (primitive, operand types) already warned about


def render_nest(nest: ir.LoopNest, cfg: Config) -> ir.Kernel:
    """One loop nest as one kernel module, by its kind (loops.loop_kind)."""
    kind = loops.loop_kind(nest)
    if kind == "rows":
        return rows.render_rows(nest, cfg)
    if kind == "full":
        return loops.render_full_reduce(nest, cfg)
    if kind == "general":
        return loops.render_general_reduce(nest, cfg)
    return loops.render_elementwise(nest, cfg)


class planned:  # noqa: N801  (used as a rule constructor in lowerings/)
    """The library rule of a primitive run by a kernel module of kernels/: `render(eqn, cfg)`
    gives the module and its launches."""

    def __init__(self, render: Callable[[JaxprEqn, Config], ir.Kernel]) -> None:
        self.render = render

    def __call__(self, drv: CudaDriver, j: int, eqn: JaxprEqn) -> None:
        drv.run_kernel(j, eqn, self.render(eqn, drv.cfg))


class CudaDriver:
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
        self.hosts: list = []  # host callables the driver takes first (h0, h1, ...)
        self.gemms: list[str] = []  # module-level library-call plans (`constant`)
        self.replays: list[str] = []  # module-level graph replayers of sub-drivers
        self.lines: list[str] = []
        self.sources: list[str] = []
        # whether a CUDA graph can replay the driver (no host round trip, no value read back,
        # no CuPy allocation), and how many launches, library calls and copies one call issues
        self.graphable = True
        self.steps = 0
        self.n = 0
        self.producers = {v: e for e in jaxpr.eqns for v in e.outvars}
        self.pp = core.PrintNames()
        header(jaxpr, self.pp)  # names variables the way the header prints them

    def temp(self) -> str:
        self.n += 1
        return f"t{self.n - 1}"

    def empty(self, size: int, dtype) -> str:
        """A fresh temporary: an uninitialised device buffer of `size` elements."""
        name = self.temp()
        self.lines.append(f"    {name} = rt.empty({size}, {dtype_ctor(_storage(dtype))})")
        return name

    def load(self, src: str, alias: str, attrs: tuple[str, ...] = ("kernel",)) -> list[str]:
        module = cache.load_module(src, "cuda", self.cfg.key()).__name__
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
        self.lines.append(f"    {name} = rt.empty({prod(v.aval.shape)}, "
                          f"{dtype_ctor(_storage(v.aval.dtype))})")
        return name

    def arg(self, x) -> str:
        if isinstance(x, Literal):  # a device copy made once, fetched by its content key
            text = render_scalar(x.val, x.aval.dtype)
            if text not in self.consts:
                key = cuda_runtime.register_const(np.asarray(x.val, dtype=x.aval.dtype))
                self.consts[text] = f"rt.const({key!r})"
            return self.consts[text]
        return self.names[x]

    def use(self, line: str) -> None:
        """An import line of the generated module, once."""
        if line not in self.imports:
            self.imports.append(line)

    def constant(self, expr: str) -> str:
        """The name of a module-level constant of the generated module (a library call's plan,
        built once at import)."""
        name = f"G{len(self.gemms)}"
        self.gemms.append(f"{name} = {expr}")
        return name

    def launch(self, kname: str, config: str, args: str, pad: str = "    ") -> None:
        """A launch line through a launcher configured once at module level (launch.py)."""
        key = (kname, config)
        if key not in self.launchers:
            self.launchers[key] = f"L{len(self.launchers)}"
        self.lines.append(f"{pad}{self.launchers[key]}({args})")
        self.steps += 1

    def scratch(self, kernel: ir.Kernel) -> list[str]:
        return [self.empty(size, dt) for size, dt in kernel.scratch]

    def launches(self, kernel: ir.Kernel, knames: dict[str, str], ins: list[str],
                 outs: list[str], scratch: list[str]) -> None:
        """The kernel's launches in order, each with its arguments (all, or its references)."""
        groups = {"in": ins, "out": outs, "scratch": scratch}
        for step in kernel.launches:
            args = [*ins, *outs, *scratch] if step.args is None else \
                [groups[group][k] for group, k in step.args]
            self.launch(knames[step.function], f"{step.blocks}, {step.threads}", ", ".join(args))

    def _kernel_names(self, kernel: ir.Kernel, alias: str) -> dict[str, str]:
        funcs = tuple(dict.fromkeys(s.function for s in kernel.launches))
        if not funcs:  # nothing to launch (empty arrays): nothing to import
            return {}
        return dict(zip(funcs, self.load(kernel.source, alias, funcs), strict=True))

    def loop(self, j: int, nest: ir.LoopNest) -> None:
        kernel = render_nest(nest, self.cfg)
        knames = self._kernel_names(kernel, f"k{j}_loop")
        outs = [self.alloc(v) for v in nest.outputs]
        scratch = self.scratch(kernel)
        self.launches(kernel, knames, [self.names[v] for v in nest.inputs], outs, scratch)

    def run_kernel(self, j: int, eqn: JaxprEqn, kernel: ir.Kernel) -> None:
        """A library equation's kernel module (kernels/): scratch, then its launches."""
        knames = self._kernel_names(kernel, f"k{j}_{eqn.primitive.name.replace('-', '_')}")
        ins = [self.arg(x) for x in eqn.invars]
        outs = [self.alloc(v) for v in eqn.outvars]
        self.launches(kernel, knames, ins, outs, self.scratch(kernel))

    def library(self, j: int, eqn: JaxprEqn) -> None:
        pp = core.pp_eqn(eqn, self.pp, 0).replace("\n", "\n    # ")
        self.lines.append(f"    # {pp}")
        rule = registry.library(eqn, "cuda")
        if rule is None or rule is EAGER:
            self.on_host(eqn)
        else:
            rule(self, j, eqn)

    # ------------------------------------------------------------------ library rules

    def view(self, j: int, eqn: JaxprEqn) -> None:
        """reshape, squeeze, copy, 0-d broadcasts: flat buffers make the output a free view."""
        self.names[eqn.outvars[0]] = self.arg(eqn.invars[0])

    def bitcast(self, j: int, eqn: JaxprEqn) -> None:
        """A same-width bitcast of a whole buffer: a view of another dtype; between bfloat16
        and uint16 the buffer itself (bfloat16 is held as its uint16 bits)."""
        if _storage(eqn.invars[0].aval.dtype) == _storage(eqn.outvars[0].aval.dtype):
            self.names[eqn.outvars[0]] = self.arg(eqn.invars[0])
            return
        out = self.temp()
        self.names[eqn.outvars[0]] = out
        self.lines.append(f"    {out} = {self.arg(eqn.invars[0])}.view("
                          f"{dtype_ctor(eqn.outvars[0].aval.dtype)})")

    def transpose(self, j: int, eqn: JaxprEqn) -> None:
        x = eqn.invars[0]
        out = self.alloc(eqn.outvars[0])
        self._transpose(j, self.arg(x), out, x.aval.shape, eqn.params["permutation"])

    def on_host(self, eqn: JaxprEqn) -> None:
        """The equation's eager implementation on host copies of its operands (warned once
        per primitive and operand types: a round trip through the host is slow)."""
        operands = ", ".join(x.aval.str_short() for x in eqn.invars)
        key = (eqn.primitive, operands)
        if key not in _WARNED_HOST:
            _WARNED_HOST.add(key)
            warnings.warn(f"jit(backend='gpu'): primitive {eqn.primitive.name} (operands "
                          f"{operands}) has no CUDA lowering; it runs on the host between "
                          "kernels, its operands copied back and forth.", RuntimeWarning,
                          stacklevel=2)
        self.graphable = False
        dtypes = tuple(v.aval.dtype for v in eqn.outvars)
        self.hosts.append(EagerCall(eqn.primitive, dict(eqn.params), dtypes))
        shapes = tuple(x.aval.shape for x in eqn.invars)
        args = "".join(f", {self.arg(x)}" for x in eqn.invars)
        call = f"rt.on_host(h{len(self.hosts) - 1}, {shapes}{args})"
        self._bind_outs(eqn, call)

    # ------------------------------------------------------------------ host-driven control flow

    def _sub(self, tag: str, closed: core.ClosedJaxpr, n_dest: int = 0,
             times: int = 1) -> str:
        """A sub-jaxpr compiled to its own driver, run `times` times per call; returns an
        expression calling it with its device-resident consts bound (the caller appends the
        operands)."""
        jaxpr = pipeline.prepare(closed.jaxpr)
        module, sources, hosts, graphable, steps = build_driver(jaxpr, self.cfg,
                                                                self.fun_name, n_dest)
        self.graphable &= graphable
        self.steps += times * steps
        self.sources.extend(sources)
        keys = [cuda_runtime.register_const(np.asarray(core.to_numpy(c))) for c in closed.consts]
        # a body or branch run from the host loop may itself replay as a graph (not one that
        # writes a scan's rows in place: a graph writes only its own buffers)
        if n_dest == 0 and graphs.replayable(steps, graphable and not hosts,
                                             [graphs.nbytes(v.aval) for v in jaxpr.invars],
                                             [graphs.nbytes(v.aval) for v in jaxpr.outvars]):
            self.imports.append(f"from {module.__name__} import driver as {tag}_driver")
            self.replays.append(f"{tag} = graphs.GraphReplay({tag}_driver, "
                                f"{len(hosts) + len(keys)})")
        else:
            self.imports.append(f"from {module.__name__} import driver as {tag}")
        self.hosts.extend(hosts)
        first = len(self.hosts) - len(hosts)
        bound = "".join(f"h{first + q}, " for q in range(len(hosts)))
        return f"{tag}({bound}{''.join(f'rt.const({k!r}), ' for k in keys)}"

    def _bind_outs(self, eqn: JaxprEqn, expr: str) -> None:
        outs = [self.temp() for _ in eqn.outvars]
        for v, o in zip(eqn.outvars, outs, strict=True):
            self.names[v] = o
        if outs:
            self.lines.append(f"    {''.join(o + ', ' for o in outs)}= {expr}")

    def while_loop(self, j: int, eqn: JaxprEqn) -> None:
        p = eqn.params
        args = [self.arg(x) for x in eqn.invars]
        cc, bc = p["cond_nconsts"], p["body_nconsts"]
        self.graphable = False  # the predicate is read back on the host every iteration
        cond = self._sub(f"k{j}_cond", p["cond_jaxpr"])
        body = self._sub(f"k{j}_body", p["body_jaxpr"])
        c = self.temp()
        cargs, bargs = "".join(a + ", " for a in args[:cc]), "".join(a + ", " for a in
                                                                   args[cc:cc + bc])
        self.lines += [f"    {c} = ({''.join(a + ', ' for a in args[cc + bc:])})",
                       f"    while rt.truthy({cond}{cargs}*{c})[0]):",
                       f"        {c} = {body}{bargs}*{c})"]
        self._bind_outs(eqn, c)

    def cond(self, j: int, eqn: JaxprEqn) -> None:
        branches = eqn.params["branches"]
        index, *ops = [self.arg(x) for x in eqn.invars]
        c, i = self.temp(), self.temp()
        self.graphable = False  # the branch index is read back on the host
        self.lines.append(f"    {i} = rt.branch_index({index}, {len(branches)})")
        for b, closed in enumerate(branches):
            call = self._sub(f"k{j}_br{b}", closed)
            head = (f"    {'if' if b == 0 else 'elif'} {i} == {b}:" if b < len(branches) - 1
                    else "    else:" if b else "    if True:")  # a one-branch switch
            self.lines += [head, f"        {c} = {call}{''.join(a + ', ' for a in ops)})"]
        self._bind_outs(eqn, c)

    def scan(self, j: int, eqn: JaxprEqn) -> None:
        p = eqn.params
        nc, ncarry, length = p["num_consts"], p["num_carry"], p["length"]
        args = [self.arg(x) for x in eqn.invars]
        consts, carry, xs = args[:nc], args[nc:nc + ncarry], args[nc + ncarry:]
        y_vars = eqn.outvars[ncarry:]
        # the body writes its ys outputs straight into this step's rows (no copy per step)
        body = self._sub(f"k{j}_body", p["jaxpr"], n_dest=len(y_vars), times=length)
        x_sizes = [prod(v.aval.shape[1:]) for v in eqn.invars[nc + ncarry:]]
        ys = [self.empty(prod(v.aval.shape), v.aval.dtype) for v in y_vars]
        c, out, q = self.temp(), self.temp(), self.temp()
        steps = f"range({length - 1}, -1, -1)" if p["reverse"] else f"range({length})"
        views = [f"{x}[{q} * {n}:({q} + 1) * {n}], " for x, n in zip(xs, x_sizes)]
        views += [f"{y}[{q} * {n}:({q} + 1) * {n}], "
                  for y, n in zip(ys, (prod(v.aval.shape[1:]) for v in y_vars))]
        self.lines += [f"    {c} = ({''.join(a + ', ' for a in carry)})",
                       f"    for {q} in {steps}:",
                       f"        {out} = {body}{''.join(a + ', ' for a in consts)}*{c}, "
                       f"{''.join(views)})",
                       f"        {c} = {out}[:{ncarry}]"]
        self._bind_outs(eqn, f"(*{c}, {''.join(y + ', ' for y in ys)})")

    # ------------------------------------------------------------------ matrix products

    def _transpose(self, j, x: str, out: str, shape, perm) -> None:
        (kname,) = self.load(render_transpose(tuple(shape), tuple(perm), self.cfg), f"k{j}_tr")
        n = prod(shape)
        if n:
            self.launch(kname, f"{self.cfg.blocks(n)}, {self.cfg.threads}", f"{x}, {out}")

    def dot_general(self, j: int, eqn: JaxprEqn) -> None:
        """One product reading each operand through its own layout's strides; only an
        operand whose (batch, free, contracting) dimension groups are not each one stride
        apart in memory is gathered by a transpose kernel first."""
        (x, y), shape = self._operands(j, eqn)
        out = self.alloc(eqn.outvars[0])
        self.product(f"k{j}_mm", x, y, out, shape, eqn.params["precision"])

    def gemm_epilogue(self, j: int, eqn: JaxprEqn) -> None:
        """A dense layer's product, bias add and activation in one cuBLASLt call
        (compiler/epilogues.py); the rewrite happens only where cublaslt.available()."""
        (x, y), shape = self._operands(j, eqn)
        out = self.alloc(eqn.outvars[0])
        compute = self._cublas_compute(shape, eqn.params["precision"])
        self.use("from numbax._src.compiler.cuda.runtime import cublaslt as lt")
        epilogue = {"none": cublaslt.EPILOGUE_BIAS, "relu": cublaslt.EPILOGUE_RELU_BIAS,
                    "gelu": cublaslt.EPILOGUE_GELU_BIAS}[eqn.params["activation"]]
        name = self.constant(f"lt.LtGemm(cb.{_gemm(shape, compute)!r}, {epilogue})")
        self.lines.append(f"    lt.gemm({x}, {y}, {self.arg(eqn.invars[2])}, {out}, {name})")
        self.steps += 3  # as a cuBLAS call

    def _operands(self, j: int, eqn: JaxprEqn) -> tuple[list[str], MatmulShape]:
        """A product's two operand buffers (transposed first where their dimension groups are
        not evenly strided) and its shape."""
        x, y = eqn.invars[:2]
        (xc, yc), (xb, yb) = eqn.params["dimension_numbers"]
        xs, ys = x.aval.shape, y.aval.shape
        xf = [d for d in range(len(xs)) if d not in xc and d not in xb]
        yf = [d for d in range(len(ys)) if d not in yc and d not in yb]
        nb = prod([xs[d] for d in xb])
        m, n = prod([xs[d] for d in xf]), prod([ys[d] for d in yf])
        kdim = prod([xs[d] for d in xc])
        bufs, group_st = [], []
        for v, groups, tag in ((x, (xb, xf, xc), "x"), (y, (yb, yc, yf), "y")):
            buf = self.arg(v)
            st = group_strides(v.aval.shape, groups)
            if st is None:
                perm = [*groups[0], *groups[1], *groups[2]]
                t = self.empty(prod(v.aval.shape), v.aval.dtype)
                self._transpose(f"{j}{tag}", buf, t, v.aval.shape, perm)
                buf = t
                sizes = [prod([v.aval.shape[d] for d in g]) for g in groups]
                st = (sizes[1] * sizes[2], sizes[2], 1)
            bufs.append(buf)
            group_st.append(st)
        dtypes = (x.aval.dtype, y.aval.dtype, eqn.outvars[0].aval.dtype)
        return bufs, MatmulShape(nb, m, n, kdim, dtypes, *group_st)

    def product(self, alias: str, x: str, y: str, out: str, shape: MatmulShape,
                precision) -> None:
        """out (nb, m, n contiguous) = x @ y per batch entry, the operands read through the
        strides of `shape`: one cuBLAS call where it applies (tensor cores), else numbax's
        tiled matmul kernel (imported as `alias`)."""
        compute = self._cublas_compute(shape, precision)
        if compute is not None:  # the vendor library (tensor cores)
            name = self.constant(f"cb.{_gemm(shape, compute)!r}")
            self.lines.append(f"    cb.gemm({x}, {y}, {out}, {name})")
            self.steps += 3  # ~25 µs of host time a call: cuBLAS's own dispatch
            return
        kernel = plan_matmul(shape, self.cfg)
        knames = self._kernel_names(kernel, alias)
        self.launches(kernel, knames, [x, y], [out], self.scratch(kernel))

    def fft(self, j: int, eqn: JaxprEqn) -> None:
        """lax.fft through cuFFT (runtime/cufft.py) into a buffer allocated here; its rule
        applies only where CuPy is installed (else fft runs on the host)."""
        self.use("from numbax._src.compiler.cuda.runtime import cufft as cf")
        x = self.arg(eqn.invars[0])
        out = self.alloc(eqn.outvars[0])
        self.graphable = False  # CuPy allocates its result from its own pool
        self.steps += 1
        self.lines.append(f"    cf.fft({x}, {out}, cf.{cufft.plan(eqn)!r})")

    @staticmethod
    def _cublas_compute(shape: MatmulShape, precision) -> int | None:
        """cuBLAS's compute type for the product, or None to keep numbax's kernel (no CuPy,
        the simulator, empty products, integer or mixed-dtype operands)."""
        macs = shape.nb * shape.m * shape.n * shape.k
        if macs == 0 or not cublas.available() or shape.da != shape.db:
            return None
        if shape.dc != shape.da and not (shape.da.itemsize == 2 and shape.dc == np.float32):
            return None  # preferred_element_type: only half inputs to float32 outputs
        return cublas.compute_type(shape.da, precision)

    def conv_general_dilated(self, j: int, eqn: JaxprEqn) -> None:
        """im2col (kernels/conv.py): the patch gather, then one product with the kernel read in
        place (transposed first when its layout needs it), written into the output or
        transposed into it."""
        lhs, rhs = eqn.invars
        if cudnn.available() and self._cudnn_conv(j, eqn):
            return
        out_aval = eqn.outvars[0].aval
        cp = cuda_conv.plan(eqn, self.cfg)
        patches = self.arg(lhs)
        if cp.gather is not None:
            patches = self.empty(cp.patches, lhs.aval.dtype)
            knames = self._kernel_names(cp.gather, f"k{j}_im2col")
            self.launches(cp.gather, knames, [self.arg(lhs)], [patches], [])
        kernel = self.arg(rhs)
        if cp.rhs_perm is not None:
            kernel = self.empty(prod(rhs.aval.shape), rhs.aval.dtype)
            self._transpose(f"{j}w", self.arg(rhs), kernel, rhs.aval.shape, cp.rhs_perm)
        out = self.alloc(eqn.outvars[0])
        result = out if cp.out_transpose is None else self.empty(prod(out_aval.shape),
                                                                 out_aval.dtype)
        x, y = (kernel, patches) if cp.kernel_first else (patches, kernel)
        self.product(f"k{j}_mm", x, y, result, cp.product, cp.precision)
        if cp.out_transpose is not None:
            self._transpose(f"{j}o", result, out, *cp.out_transpose)

    def _cudnn_conv(self, j: int, eqn: JaxprEqn) -> bool:
        """The convolution as one cuDNN call (runtime/cudnn.py): a forward convolution, or a
        filter or data gradient written as one, its kernel transposed into cuDNN's layout
        first and a filter gradient's result transposed into the output after, where needed;
        False (nothing emitted) where cuDNN does not take it (kernels/conv.py: cudnn_plan)."""
        call = cuda_conv.cudnn_plan(eqn, self.producers)
        if call is None or not cudnn.supports(call.conv):
            return False
        lhs, rhs = eqn.invars
        kernel_var = rhs if call.unflipped is None else call.unflipped
        if not isinstance(kernel_var, Var) or kernel_var not in self.names:
            return False  # the unreversed kernel was never materialised
        kernel = self.arg(kernel_var)
        if call.kernel_perm is not None:
            kernel = self.empty(prod(kernel_var.aval.shape), kernel_var.aval.dtype)
            self._transpose(f"{j}w", self.arg(kernel_var), kernel, kernel_var.aval.shape,
                            call.kernel_perm)
        out_aval = eqn.outvars[0].aval
        out = self.alloc(eqn.outvars[0])
        result = out if call.out_transpose is None else self.empty(prod(out_aval.shape),
                                                                   out_aval.dtype)
        self.use("from numbax._src.compiler.cuda.runtime import cudnn as dn")
        name = self.constant(f"dn.{call.conv!r}")
        self.lines.append(f"    dn.conv({self.arg(lhs)}, {kernel}, {result}, {name})")
        self.steps += 6  # 40-65 µs of host time a call (cudnn-frontend's Python layer)
        if call.out_transpose is not None:
            self._transpose(f"{j}o", result, out, *call.out_transpose)
        return True

    def render(self, jaxpr: Jaxpr) -> str:
        for v, d in self.dests:  # outputs not computed in place: copied into their buffer
            if not isinstance(v, Var) or self.names[v] != d:
                self.lines.append(f"    st.copy_into({d}, {self.arg(v)})")
                self.steps += 1
        if any(isinstance(x, Literal) for x in jaxpr.outvars):
            self.graphable = False  # a literal output is copied from the host each call
        rets = [f"rt.to_device(np.asarray({render_scalar(x.val, x.aval.dtype)}))"
                if isinstance(x, Literal) else self.arg(x)  # an output never shares a const
                for x in jaxpr.outvars]
        params = ", ".join([*(f"h{q}" for q in range(len(self.hosts))),
                            *(self.names[v] for v in [*jaxpr.constvars, *jaxpr.invars]),
                            *(d for _, d in self.dests)])
        head = header(jaxpr, core.PrintNames()).split("\nfrom numbax")[0]
        head = head.replace("# numbax", "# driver | numbax", 1)
        launchers = [f"{name} = launcher({kname}, {config})"
                     for (kname, config), name in self.launchers.items()]
        return (head + "\n"
                + "from numbax._src.compiler.cuda.runtime import memory as rt  # noqa: F401\n"
                + "from numbax._src.compiler.cuda.runtime.launch import launcher  # noqa: F401\n"
                + "from numbax._src.compiler.cuda.runtime import cublas as cb  # noqa: F401\n"
                + "from numbax._src.compiler.cuda.runtime import stream as st  # noqa: F401\n"
                + "from numbax._src.compiler.cuda.runtime import graphs  # noqa: F401\n"
                + "\n".join(self.imports) + "\n\n"
                + "".join(line + "\n" for line in [*launchers, *self.gemms, *self.replays])
                + "\n\n"
                + f"def driver({params}):\n" + "\n".join(self.lines)
                + ("\n" if self.lines else "")
                + f"    return ({''.join(r + ', ' for r in rets)})\n")


class DriverBuild(NamedTuple):
    module: ModuleType  # its `driver` function
    sources: list[str]  # every generated source, the driver's last
    hosts: list  # the host callables the driver takes first
    graphable: bool  # a CUDA graph can replay it (runtime/graphs.py)
    steps: int  # launches, library calls and copies one call issues (loops unrolled)


def build_driver(jaxpr: Jaxpr, cfg: Config, fun_name: str, n_dest: int = 0,
                 nodes: list[ir.Node] | None = None) -> DriverBuild:
    """The driver module of a simplified jaxpr (sub-drivers for control flow first); the
    driver writes its last n_dest outputs into buffers given last. `nodes`: the jaxpr's kernel
    graph, when partitioned already."""
    if nodes is None:
        nodes = fusion.partition(jaxpr, lambda e: registry.fusible(e, "cuda"))
    drv = CudaDriver(jaxpr, cfg, fun_name, n_dest)
    for j, node in enumerate(nodes):
        if isinstance(node, ir.LoopNest):
            drv.loop(j, node)
        else:
            drv.library(j, node.eqn)
    src = drv.render(jaxpr)
    return DriverBuild(cache.load_module(src, "cuda", cfg.key()), [*drv.sources, src],
                       drv.hosts, drv.graphable, drv.steps)


def _gemm(shape: MatmulShape, compute: int) -> cublas.Gemm:
    """The cuBLAS plan of a product of `shape` at compute type `compute`."""
    return cublas.Gemm(shape.nb, shape.m, shape.n, shape.k, shape.sa, shape.sb, shape.da.name,
                       shape.dc.name, compute)


def _storage(dtype) -> np.dtype:
    """The dtype of a device buffer holding `dtype`'s values: bfloat16 as uint16."""
    dtype = np.dtype(dtype)
    return np.dtype(np.uint16) if dtype == cuda_runtime.BFLOAT16 else dtype
