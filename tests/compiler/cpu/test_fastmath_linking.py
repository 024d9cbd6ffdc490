"""fastmath functions are compiled once and linked into kernels, where LLVM inlines and
vectorises them: generated kernels hold vector lanes and no call to a fastmath function."""
import re

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler.cpu.runtime import fastmath as fm
from numbax._src.compiler.cpu.runtime import fastmath_erf as fe

RNG = np.random.default_rng(0)


def _kernel_ir(f, x):
    src = numbax.jit(f).lower(x).as_text().split("# driver")[0]
    ns: dict = {}
    exec(compile(src, "<kernel>", "exec"), ns)  # no __file__: compiled fresh, not from disk
    out = np.empty_like(x)
    ns["kernel_serial"](x, out, *x.shape)  # the variant the driver calls below PRANGE_MIN
    return out, "\n".join(ns["kernel_serial"].inspect_llvm().values())


def _erf(v):
    import math

    return np.vectorize(math.erf)(v)


def _erfinv(v):
    import scipy.special

    return scipy.special.erfinv(v)


TRUTH = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "tanh": np.tanh,
         "logistic": lambda v: 1 / (1 + np.exp(-v)), "erf": _erf, "erf_inv": _erfinv}
FUNCS = {"logistic": numbax.nn.sigmoid, "erf": numbax.scipy.special.erf,
         "erf_inv": numbax.lax.erf_inv}
# Inputs in each function's domain.
DOMAIN = {"erf_inv": (-0.999, 0.999)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", sorted(TRUTH))
def test_generated_kernel_inlines_and_vectorises(name, dtype):
    x = RNG.uniform(*DOMAIN.get(name, (0.1, 3.0)), size=4099).astype(dtype)
    out, ir = _kernel_ir(FUNCS.get(name) or getattr(jnp, name), x)
    np.testing.assert_allclose(out, TRUTH[name](x.astype(np.float64)),
                               rtol=1e-6 if dtype == np.float32 else 1e-14)
    lane = "float" if dtype == np.float32 else "double"  # float32 erf_inv: XLA's, in float32
    assert re.search(rf"<\d+ x {lane}>", ir)  # vector lanes
    assert not re.search(r"call [^\n]*fastmath", ir)  # the fastmath body was inlined by LLVM


def test_public_functions_are_compiled_once_not_spliced_at_numba_ir_level():
    """Each public function is its own cached Numba function (compiled once per signature
    and installation) that LLVM inlines into kernels; private helpers are spliced into them.
    The erf family and float32 pow (over LLVM's inlining threshold) and the scalar helpers
    carry `forceinline` (LLVM's alwaysinline), not Numba-IR splicing, which typed and lowered
    their bodies again in every kernel."""
    from numbax._src.compiler.cpu.runtime import scalars as sc
    from numbax._src.compiler.cpu.runtime import xla_erf_inv as xe

    for name in ("exp", "log", "log1p", "expm1", "tanh", "logistic"):
        for suffix in ("f32", "f64"):
            disp = getattr(fm, f"{name}_{suffix}")
            assert disp.targetoptions.get("inline", "never") == "never"
            assert type(disp._cache).__name__ == "FunctionCache"  # cache=True
    assert fm.exp_core_f64.targetoptions["inline"] == "always"
    forced = [fe.erf_f32, fe.erf_f64, fe.erfc_f32, fe.erf_inv_f64, xe.erf_inv_f32, fm.pow_f32,
             sc.float_to_int, sc.cdiv]
    for disp in forced:
        assert disp.targetoptions.get("inline", "never") == "never", disp
        assert disp.targetoptions["forceinline"], disp
        assert type(disp._cache).__name__ == "FunctionCache"


def test_a_new_process_loads_the_compiled_function_from_numba_cache():
    """The second of two fresh processes calling fm.tanh_f32 from a new kernel loads it from
    Numba's cache (no compile), so a kernel's cold compile pays only for the kernel."""
    import subprocess
    import sys

    code = (
        "import numpy as np\n"
        "from numba import njit\n"
        "from numbax._src.compiler.cpu.runtime import fastmath as fm\n"
        "@njit(error_model='numpy')\n"
        "def k(x, o):\n"
        "    for i in range(x.shape[0]):\n"
        "        o[i] = fm.tanh_f32(x[i])\n"
        "x = np.linspace(-3, 3, 64, dtype=np.float32); o = np.empty_like(x); k(x, o)\n"
        "assert np.allclose(o, np.tanh(x), rtol=1e-6)\n"
        "s = fm.tanh_f32.stats\n"
        "print(sum(s.cache_hits.values()), sum(s.cache_misses.values()))\n"
    )
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=False) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr[-2000:]
    hits, misses = map(int, runs[1].stdout.split())
    assert (hits, misses) == (1, 0)
