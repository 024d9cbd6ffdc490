"""Library-call lowerings run by the driver (BLAS, views, numpy routines), keyed by primitive."""
from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.compiler.cpu.runtime import gemm as gemm_cpu
from numbax._src.compiler.cpu.runtime import kernels as kc  # noqa: F401  (the driver calls lw.kc.*)
from numbax._src.compiler.fusion import ELEMENTWISE, REDUCTIONS
from numbax._src.core import JaxprEqn

ELEMENTWISE_FALLBACK = ELEMENTWISE | REDUCTIONS

# ----------------------------------------------------------------------------- runtime helpers


# ----------------------------------------------------------------------------- BLAS threads
# OpenBLAS's threads and Numba's fight over few cores (docs/performance.md: a jitted MLP step
# ran 224 ms with OpenBLAS's default 2 threads on the loaded 2-core machine, 3.7 ms with one;
# on the idle machine 2 threads win by ~1.5x on its larger GEMMs). With `cpu_threads = 0`
# (automatic) products below BLAS_THREADED_MACS multiply-adds, and every product while the
# machine is busy with other work, run with one BLAS thread; larger products on an otherwise
# idle machine keep BLAS's own setting. With `numbax.config.cpu_threads = n` the larger BLAS
# calls from compiled code run with n threads, the small ones still with one (pinning them
# all to 2 made the 2-core MLP step 8 ms instead of 1.2: OpenBLAS's workers spin after each
# threaded call and starve Numba's). The count is set through OpenBLAS's own C API (found
# among the loaded libraries) just for the call and restored after it (0.4 us per call);
# without OpenBLAS nothing is changed.
#
# "Busy" counts other processes' runnable threads, not the load average: the load average
# includes this process, so a program running numbax on one core of the 2-core machine made
# itself "busy" within a minute and its GEMMs fell to one thread (1000² matmul 1.9x numpy's
# time, the MLP step 3.7 instead of 2.1 ms). Linux's /proc/loadavg gives the runnable threads
# right now, /proc/self/task this process's share; the other processes' count is smoothed
# over the samples (at most one a second) and compared with half the cores. Where /proc is
# missing, the 1-minute load average less one stands in.
BLAS_THREADED_MACS = 1 << 24
_load = [0.0, False, 0.0]  # (when last sampled, busy, smoothed count of other runnable threads)


def _own_running() -> int:
    count = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:  # the thread ended
            continue
        count += stat[stat.rindex(")") + 2] == "R"  # the state follows the (command) field
    return count


def _others_running() -> float:
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])
        return max(running - _own_running(), 0)
    except (OSError, ValueError, IndexError):
        try:
            return max(os.getloadavg()[0] - 1.0, 0.0)
        except (OSError, AttributeError):
            return 0.0


def _busy() -> bool:
    import time

    now = time.monotonic()
    if now - _load[0] > 1.0:
        _load[2] = 0.5 * _load[2] + 0.5 * _others_running()
        _load[1] = _load[2] >= (os.cpu_count() or 1) / 2
        _load[0] = now
    return _load[1]


_blas_api: list = []


def _openblas():
    """(ctypes library, symbol prefix, symbol suffix) of the OpenBLAS this process loaded (numpy's
    scipy-openblas or a system one), or None."""
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line and ".so" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_openblas", "64_"), ("scipy_openblas", ""),
                               ("openblas", "64_"), ("openblas", "")):
            if hasattr(lib, f"{prefix}_set_num_threads{suffix}"):
                return lib, prefix, suffix
    return None


def _find_blas_api():
    import ctypes

    found = _openblas()
    if found is None:
        return None
    lib, prefix, suffix = found
    set_n = getattr(lib, f"{prefix}_set_num_threads{suffix}")
    get_n = getattr(lib, f"{prefix}_get_num_threads{suffix}")
    set_n.argtypes, set_n.restype, get_n.restype = [ctypes.c_int], None, ctypes.c_int
    return set_n, get_n


def blas_core() -> str:
    """The CPU kernel family OpenBLAS runs here ("Haswell", "SkylakeX", ...; "" when numpy's BLAS
    is not an OpenBLAS this can ask). `OPENBLAS_CORETYPE` in the environment sets it."""
    import ctypes

    found = _openblas()
    if found is None:
        return ""
    lib, prefix, suffix = found
    get_core = getattr(lib, f"{prefix}_get_corename{suffix}", None)
    if get_core is None:
        return ""
    get_core.restype = ctypes.c_char_p
    return (get_core() or b"").decode(errors="replace")


def _thread_rule(macs: int, threaded_macs: int, idle: Callable[[], int]) -> int:
    """Threads for a product of `macs` multiply-adds: one below `threaded_macs`; else
    `config.cpu_threads` when set; else one while the machine is busy, `idle()` otherwise."""
    from numbax._src.config import config

    if macs < threaded_macs:
        return 1
    n = config.cpu_threads
    if n:
        return n
    return 1 if _busy() else idle()


def blas_threads(macs: int) -> int:
    """The BLAS thread count for a product of `macs` multiply-adds (0: leave BLAS alone)."""
    return _thread_rule(macs, BLAS_THREADED_MACS, lambda: 0)


def _blas_call(fn, threads: int, *args):
    if not threads:
        return fn(*args)
    if not _blas_api:
        _blas_api.append(_find_blas_api())
    api = _blas_api[0]
    if api is None:
        return fn(*args)
    set_n, get_n = api
    before = get_n()
    if before == threads:
        return fn(*args)
    set_n(threads)
    try:
        return fn(*args)
    finally:
        set_n(before)


def with_numba_threads(driver):
    """The driver of a program with prange kernels, run under `config.cpu_threads` Numba
    threads when that option is set (0: Numba's default pool)."""
    from numbax._src.config import config

    def run(*args):
        n = config.cpu_threads
        if not n:
            return driver(*args)
        import numba

        before = numba.get_num_threads()
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
        try:
            return driver(*args)
        finally:
            numba.set_num_threads(before)

    return run


def dot_general(x: np.ndarray, y: np.ndarray, dimension_numbers, out_dtype) -> list[np.ndarray]:
    """lax.dot_general as one matrix product (`dot`), one `gemm_cpu` product per batch entry
    (batches of products `dot` would give it), or np.matmul (BLAS) over (batch, free,
    contract) layouts; operands given as transposed views (passes.fold_transposes) reach BLAS
    as transpose flags and `gemm_cpu` as strides, no copy."""
    (xc, yc), (xb, yb) = dimension_numbers
    xf = [d for d in range(x.ndim) if d not in xc and d not in xb]
    yf = [d for d in range(y.ndim) if d not in yc and d not in yb]
    bshape = [x.shape[d] for d in xb]
    xfs, yfs = [x.shape[d] for d in xf], [y.shape[d] for d in yf]
    k = math.prod([x.shape[d] for d in xc])  # math.prod: np.prod costs 2 us per list
    nb = math.prod(bshape)
    m = math.prod(xfs)
    n = math.prod(yfs)
    x3 = np.transpose(x, [*xb, *xf, *xc]).reshape(nb, m, k)
    y3 = np.transpose(y, [*yb, *yc, *yf]).reshape(nb, k, n)
    if x3.dtype != out_dtype:
        x3 = x3.astype(out_dtype)
    if y3.dtype != out_dtype:
        y3 = y3.astype(out_dtype)
    if nb == 1:
        out = dot(x3[0], y3[0], m * n * k)
    elif nb and runs_on_own_gemm(x3[0], y3[0], m * n * k):
        out = np.empty((nb, m, n), out_dtype)  # one gemm_cpu product per batch entry
        threads = gemm_threads(m * n * k)
        for b in range(nb):
            gemm_cpu.matmul(x3[b], y3[b], threads, out[b])
    else:
        threads = blas_threads(nb * m * n * k) if out_dtype.kind in "fc" else 0
        out = _blas_call(np.matmul, threads, x3, y3)
    return [np.asarray(out.reshape((*bshape, *xfs, *yfs)), order="C")]  # keeps 0-d 0-d


def call_impl(name: str, args: tuple, params: dict, out_dtypes: tuple) -> list[np.ndarray]:
    """Runs a primitive's numpy implementation (an explicit entry of LIBRARY_IMPL only)."""
    prim = _PRIMS_BY_NAME.get(name) or _find_primitive(name)
    outs = core.impl_rules[prim](*args, **params)
    return [np.asarray(o, dtype=dt, order="C") for o, dt in
            zip(outs, out_dtypes, strict=True)]


_PRIMS_BY_NAME: dict[str, core.Primitive] = {}


def _find_primitive(name: str) -> core.Primitive:
    for prim in core.impl_rules:
        if prim.name == name:
            _PRIMS_BY_NAME[name] = prim
            return prim
    raise NotImplementedError(f"jit: primitive {name} has no numpy implementation")


# ----------------------------------------------------------------------------- rendering


def render_value(value: Any) -> str:
    """Params as Python source: ints, floats, bools, None, tuples, dtypes, enum-like strings."""
    if isinstance(value, np.dtype):
        return f"np.dtype({value.name!r})"
    if isinstance(value, type) and issubclass(value, np.generic):
        return f"np.dtype({np.dtype(value).name!r})"
    if isinstance(value, tuple):
        inner = ", ".join(render_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, (bool, int, float, type(None), np.integer, np.floating, np.bool_)):
        return repr(value.item() if isinstance(value, np.generic) else value)
    if isinstance(value, str) and value.isidentifier():
        return repr(value)
    raise NotImplementedError(f"jit: cannot render parameter of type {type(value).__name__}")


def _dtypes(eqn: JaxprEqn) -> str:
    return render_value(tuple(v.aval.dtype for v in eqn.outvars))


def _params(eqn: JaxprEqn) -> str:
    items = ", ".join(f"{k!r}: {render_value(v)}" for k, v in sorted(eqn.params.items()))
    return "{" + items + "}"


Rule = Callable[[JaxprEqn, list[str]], str]


def _lower_dot_general(eqn: JaxprEqn, ins: list[str]) -> str:
    plain = _plain_matmul(eqn, ins)
    if plain is not None:
        return plain
    dims = render_value(eqn.params["dimension_numbers"])
    dtype = render_value(eqn.outvars[0].aval.dtype)
    return f"lw.dot_general({ins[0]}, {ins[1]}, {dims}, {dtype})"


def _plain_matmul(eqn: JaxprEqn, ins: list[str]) -> str | None:
    """`[lw.dot(x, y, macs)]` for a float product of matrices/vectors without batch dims or
    casts: the layout work of `dot_general` (5 us a call, a third of a small jitted program)
    is done here, once; a contraction over a matrix's other axis passes its `.T` view."""
    x, y = (v.aval for v in eqn.invars)
    out = eqn.outvars[0].aval
    (xc, yc), (xb, yb) = eqn.params["dimension_numbers"]
    if xb or yb or len(xc) != 1 or x.ndim > 2 or y.ndim > 2 or x.ndim + y.ndim < 3:
        return None
    if not (x.dtype == y.dtype == out.dtype) or out.dtype.kind not in "fc":
        return None
    xs = ins[0] if xc[0] == x.ndim - 1 else f"{ins[0]}.T"
    ys = ins[1] if yc[0] == 0 else f"{ins[1]}.T"
    k = x.shape[xc[0]]
    macs = math.prod(x.shape) * math.prod(y.shape) // k if k else 0
    return f"[lw.dot({xs}, {ys}, {macs})]"


def dot(x: np.ndarray, y: np.ndarray, macs: int) -> np.ndarray:
    """x @ y for operands already in (m, k) @ (k, n) form: numbax's own GEMM (`gemm_cpu`) for
    matrix products it takes where `own_gemm` says so, else np.dot (BLAS) under the BLAS
    thread rule."""
    if runs_on_own_gemm(x, y, macs):
        return gemm_cpu.matmul(x, y, gemm_threads(macs))
    return _blas_call(np.dot, blas_threads(macs), x, y)


def runs_on_own_gemm(x: np.ndarray, y: np.ndarray, macs: int) -> bool:
    """Whether `dot` gives this product to `gemm_cpu`."""
    return (macs >= OWN_GEMM_MACS and x.ndim == 2 and y.ndim == 2
            and min(x.shape[0], x.shape[1], y.shape[1]) >= OWN_GEMM_MIN_DIM
            and own_gemm(macs) and gemm_cpu.supports(x, y))


# ----------------------------------------------------------------------------- own GEMM
# Below OWN_GEMM_MACS np.dot's smaller call overhead wins (0.6 against 2.6 us at 8^3); from
# 64^3 up numbax's kernel on one thread matches OpenBLAS-Haswell on two, and from
# GEMM_THREADED_MACS up two threads pay for their fork (2026-11-26, 2-core Zen 5 VM). A side
# under OWN_GEMM_MIN_DIM wastes most of a 12 x 32 tile or of a packed k block: the MLP's
# 128x512 @ 512x10 took 26 us against np.dot's 11.5.
OWN_GEMM_MACS = 1 << 18
OWN_GEMM_MIN_DIM = 32
GEMM_THREADED_MACS = 1 << 20
def own_gemm(macs: int) -> bool:
    """Whether a matrix product of `macs` multiply-adds from compiled code runs on `gemm_cpu`
    rather than BLAS: `config.cpu_matmul` "numbax" / "blas", or with "auto" (the default)
    `own_gemm_rule` for AVX-512 in Numba's target (gemm_cpu's 64-byte vectors would run
    split in two without it) and OpenBLAS's kernels."""
    from numbax._src.config import config

    choice = config.cpu_matmul
    if choice != "auto":
        return choice == "numbax"
    if not _host_gemm:
        from numbax._src.compiler.cpu.runtime import host_isa

        _host_gemm.append((host_isa.numba_target_has("avx512f"), blas_core()))
    return own_gemm_rule(*_host_gemm[0], macs)


_host_gemm: list = []  # [(Numba's target has AVX-512, OpenBLAS core name)] once asked
# OpenBLAS kernel families written with AVX-512 (its DYNAMIC_ARCH core names, lower case).
AVX512_BLAS_CORES = frozenset({"skylakex", "cooperlake", "sapphirerapids"})
# Against OpenBLAS's own AVX-512 kernels (SkylakeX, 16-core Xeon host) gemm_cpu won on the
# MLP's products (1.3-2.3x at 33-51M multiply-adds) and was even from 1000^3 up (0.95-1.12x).
AVX512_BLAS_EVEN_MACS = 1 << 28


def own_gemm_rule(host_avx512: bool, blas_core_name: str, macs: int) -> bool:
    """`own_gemm`'s "auto" choice: numbax's GEMM on AVX-512 hosts, except for products of
    AVX512_BLAS_EVEN_MACS and more unless BLAS is an OpenBLAS known to run narrower kernels
    (an AVX-512 BLAS is as fast there and tuned on many more machines; a BLAS that cannot be
    asked, such as MKL, gets the benefit of the doubt)."""
    if not host_avx512:
        return False
    if macs < AVX512_BLAS_EVEN_MACS:
        return True
    return bool(blas_core_name) and blas_core_name.lower() not in AVX512_BLAS_CORES


def gemm_threads(macs: int) -> int:
    """Numba threads for a `gemm_cpu` product of `macs` multiply-adds."""
    import numba

    return _thread_rule(macs, GEMM_THREADED_MACS, numba.get_num_threads)


def _lower_reshape(eqn: JaxprEqn, ins: list[str]) -> str:
    return f"[{ins[0]}.reshape({eqn.outvars[0].aval.shape})]"


def _lower_transpose(eqn: JaxprEqn, ins: list[str]) -> str:
    perm = render_value(eqn.params["permutation"])
    return f"[np.ascontiguousarray(np.transpose({ins[0]}, {perm}))]"


def _lower_numpy_impl(eqn: JaxprEqn, ins: list[str]) -> str:
    args = "".join(f"{a}, " for a in ins)
    return f"lw.call_impl({eqn.primitive.name!r}, ({args}), {_params(eqn)}, {_dtypes(eqn)})"


def _lower_bcast_full(eqn: JaxprEqn, ins: list[str]) -> str:
    dims = render_value(eqn.params["broadcast_dimensions"])
    shape = render_value(eqn.params["shape"])
    return f"lw.call_impl('broadcast_in_dim', ({ins[0]},), {{'broadcast_dimensions': {dims}, " \
           f"'shape': {shape}}}, {_dtypes(eqn)})"


def _kc(fn: str, *parts: str) -> str:
    return f"[lw.kc.{fn}({', '.join(parts)})]"


def _lower_slice(eqn: JaxprEqn, ins: list[str]) -> str:
    p = eqn.params
    return _kc("slice_", ins[0], *(render_value(p[k]) for k in (
        "start_indices", "limit_indices", "strides")))


def _lower_rev(eqn: JaxprEqn, ins: list[str]) -> str:
    return _kc("rev", ins[0], render_value(eqn.params["dimensions"]))


def _lower_concatenate(eqn: JaxprEqn, ins: list[str]) -> str:
    return f"[np.concatenate(({''.join(a + ', ' for a in ins)}), axis={eqn.params['dimension']})]"


def _lower_iota(eqn: JaxprEqn, ins: list[str]) -> str:
    p = eqn.params
    return _kc("iota", render_value(np.dtype(p["dtype"])), render_value(p["shape"]),
               render_value(p["dimension"]))


def _lower_pad(eqn: JaxprEqn, ins: list[str]) -> str:
    return _kc("pad", ins[0], ins[1], render_value(eqn.params["padding_config"]))


def _lower_dynamic_slice(eqn: JaxprEqn, ins: list[str]) -> str:
    starts = "".join(f"{a}, " for a in ins[1:])
    return _kc("dynamic_slice", ins[0], f"({starts})", render_value(eqn.params["slice_sizes"]))


def _lower_dynamic_update_slice(eqn: JaxprEqn, ins: list[str]) -> str:
    starts = "".join(f"{a}, " for a in ins[2:])
    return _kc("dynamic_update_slice", ins[0], ins[1], f"({starts})")


def _lower_argminmax(eqn: JaxprEqn, ins: list[str]) -> str:
    p = eqn.params
    return _kc("argminmax", ins[0], repr(eqn.primitive.name), str(p["axes"][0]),
               render_value(np.dtype(p["index_dtype"])))


def _lower_cumulative(eqn: JaxprEqn, ins: list[str]) -> str:
    p = eqn.params
    return _kc("cumulative", ins[0], repr(eqn.primitive.name), str(p["axis"]),
               render_value(p["reverse"]))


def _render_fill(value: Any) -> str:
    if isinstance(value, float) and not np.isfinite(value):
        return "np.nan" if np.isnan(value) else ("np.inf" if value > 0 else "-np.inf")
    return render_value(value)


def _lower_gather(eqn: JaxprEqn, ins: list[str]) -> str:
    p = eqn.params
    return _kc("gather", ins[0], ins[1], render_value(p["axes"]), render_value(p["mode"]),
               _render_fill(p["fill_value"]), render_value(eqn.outvars[0].aval.shape))


def _lower_scatter(eqn: JaxprEqn, ins: list[str]) -> str:
    if eqn.invars[0].aval.dtype.kind == "c":
        return _lower_numpy_impl(eqn, ins)  # complex min/max have no scalar order
    p = eqn.params
    return _kc("scatter", ins[0], ins[1], ins[2], repr(eqn.primitive.name),
               render_value(p["axes"]), render_value(p["mode"]))


def _lower_take_along_axis(eqn: JaxprEqn, ins: list[str]) -> str:
    return _kc("take_along_axis", ins[0], ins[1], str(eqn.params["axis"]))


def _lower_scatter_add_along_axis(eqn: JaxprEqn, ins: list[str]) -> str:
    if eqn.invars[0].aval.dtype.kind == "b":
        return _lower_numpy_impl(eqn, ins)  # np.add.at on bools is a logical or
    return _kc("scatter_add_along_axis", ins[0], ins[1], str(eqn.params["axis"]),
               str(eqn.params["size"]))


KERNEL_RULES: dict[str, Rule] = {
    "take_along_axis": _lower_take_along_axis,
    "scatter_add_along_axis": _lower_scatter_add_along_axis,
    "slice": _lower_slice,
    "rev": _lower_rev,
    "concatenate": _lower_concatenate,
    "iota": _lower_iota,
    "pad": _lower_pad,
    "dynamic_slice": _lower_dynamic_slice,
    "dynamic_update_slice": _lower_dynamic_update_slice,
    "argmax": _lower_argminmax,
    "argmin": _lower_argminmax,
    **{name: _lower_cumulative for name in ("cumsum", "cumprod", "cummax", "cummin")},
    "gather": _lower_gather,
    **{name: _lower_scatter for name in ("scatter", "scatter-add", "scatter-mul",
                                         "scatter-min", "scatter-max")},
}

# Library calls: primitives that are not loop-nest material. Entries that run the primitive's
# own numpy implementation in the driver are listed by name, one by one.
LIBRARY_IMPL = frozenset({
    "rev", "slice", "concatenate", "pad", "iota", "copy", "dynamic_slice", "dynamic_update_slice",
    "gather", "scatter", "scatter-add", "scatter_add", "scatter-mul", "scatter-min",
    "scatter-max", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp", "sort", "argmax",
    "argmin", "take_along_axis", "scatter_add_along_axis", "digamma", "polygamma",
    "nextafter", "population_count", "complex", "igamma", "random_bits", "threefry2x32",
    # LAPACK through the eager impls (numpy.linalg): the same NaN-on-failure, batching and
    # sign conventions as eager, and nothing to compile (Numba's LAPACK wrappers raise on
    # failure and cost seconds of compile time each; the work is in LAPACK either way).
    "cholesky", "triangular_solve", "lu", "qr", "eigh", "svd",
    # Collectives, compiled only inside pmap workers, where their impls are the workers'
    # shared-memory exchanges (parallel/collectives.py installs them).
    "psum", "pmax", "pmin", "all_gather", "ppermute", "psum_scatter", "axis_index",
})


def _lower_bitcast(eqn: JaxprEqn, ins: list[str]) -> str:
    return f"[{ins[0]}.view({render_value(eqn.params['new_dtype'])})]"  # same width: a view


LIBRARY_RULES: dict[str, Rule] = {
    "bitcast_convert_type": _lower_bitcast,
    "dot_general": _lower_dot_general,
    "reshape": _lower_reshape,
    "squeeze": _lower_reshape,
    "expand_dims": _lower_reshape,
    "transpose": _lower_transpose,
    "broadcast_in_dim": _lower_bcast_full,
    **{name: _lower_numpy_impl for name in LIBRARY_IMPL},
    **KERNEL_RULES,  # kernels_cpu.py: these no longer run the eager impl
}


def has_library_rule(name: str) -> bool:
    return name in LIBRARY_RULES or name in ELEMENTWISE_FALLBACK


def render_call(eqn: JaxprEqn, ins: list[str]) -> str:
    """Source of an expression evaluating to the list of the equation's outputs. A primitive
    with no lowering runs its eager implementation from the driver, with a one-time warning."""
    rule = LIBRARY_RULES.get(eqn.primitive.name)
    if rule is None and eqn.primitive.name in ELEMENTWISE_FALLBACK:
        rule = _lower_numpy_impl  # an elementwise op on a dtype the scalar table lacks
    if rule is None:
        _warn_eager(eqn.primitive.name)
        rule = _lower_numpy_impl
    return rule(eqn, ins)


_WARNED: set[str] = set()


def _warn_eager(name: str) -> None:
    if name in _WARNED:
        return
    _WARNED.add(name)
    import warnings

    warnings.warn(f"jit: primitive {name} has no compiled lowering; compiled programs run its "
                  "eager implementation between their kernels.", RuntimeWarning, stacklevel=2)
