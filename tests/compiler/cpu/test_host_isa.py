"""compiler/host_isa.py: when numbax gives Numba a CPU target instead of Numba's own choice."""
import subprocess
import sys

import pytest

from numbax._src.compiler.cpu.runtime import host_isa

AVX2 = {"avx": True, "avx2": True, "fma": True}
AVX512 = {**AVX2, **{f: True for f in ("avx512f", "avx512bw", "avx512cd", "avx512dq",
                                         "avx512vl")}}
WITH = "+sse2,+avx,+avx2,+fma"
STRIPPED = "+sse2,-avx,-avx2,-fma"


@pytest.mark.parametrize("name, features, numba_features, user, expected", [
    ("znver5", AVX512, WITH, False, None),  # Numba keeps the host's ISA: nothing to do
    ("skylake-avx512", AVX512, WITH, False, None),  # 256-bit preference kept (not measured)
    ("emeraldrapids", AVX512, WITH, False,
     ("prefer 512-bit vectors", "emeraldrapids", "-prefer-256-bit")),  # measured faster
    ("emeraldrapids", AVX512, WITH, True, None),  # the user chose: respected
    ("sapphirerapids", AVX512, STRIPPED, False,  # avx stripped, known name kept
     ("numba target lacked avx2", "sapphirerapids", "-prefer-256-bit")),
    ("nocona", AVX2, STRIPPED, False, ("numba target lacked avx2", "x86-64-v3", "")),
    ("generic", AVX512, WITH, False,  # a model LLVM does not know
     ("host cpu 'generic'", "x86-64-v4", "-prefer-256-bit")),
    ("generic", AVX512, STRIPPED, True, None),  # the user chose a target: respected
    ("generic", {"avx": True, "avx2": False}, STRIPPED, False, None),  # no AVX2 to gain
])
def test_choose(name, features, numba_features, user, expected):
    assert host_isa.choose(name, features, numba_features, user) == expected


def test_apply_after_numba_target_exists_changes_nothing():
    """In this process numbax is imported, so Numba's target machine exists: apply() cannot
    change it and reports what (if anything) it applied at import."""
    from numba.core import config

    before = (config.CPU_NAME, config.CPU_FEATURES)
    assert host_isa.apply() == host_isa.APPLIED
    assert (config.CPU_NAME, config.CPU_FEATURES) == before


def test_apply_in_a_fresh_process_keeps_numba_usable():
    """A fresh process: apply() runs before any @njit, then a vectorised fastmath loop
    compiles for the chosen target and matches numpy."""
    code = (
        "from numbax._src.compiler.cpu.runtime import host_isa\n"
        "host_isa.apply()\n"
        "import numpy as np\n"
        "from numba import njit\n"
        "from numba.core.registry import cpu_target\n"
        "from numbax._src.compiler.cpu.runtime import fastmath as fm\n"
        "@njit(error_model='numpy')\n"
        "def f(x, o):\n"
        "    for i in range(x.shape[0]):\n"
        "        o[i] = fm.exp_f64(x[i])\n"
        "x = np.linspace(-20, 20, 1001); o = np.empty_like(x); f(x, o)\n"
        "assert np.allclose(o, np.exp(x), rtol=1e-15, atol=0)\n"
        "cg = cpu_target.target_context.codegen()\n"
        "applied = host_isa.APPLIED\n"
        "assert applied is None or cg._get_host_cpu_name() == applied[1]\n"
        "print('ok', applied)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("ok")


def test_import_numbax_applies_before_numba_builds_its_target():
    """`import numbax` chooses the target first: an Emerald Rapids host name (faked here)
    gets `-prefer-256-bit` where the host has AVX-512, and a fastmath loop then compiles to zmm
    code (the features stay the host's); on an AVX2-only host Numba's own target stands."""
    code = (
        "import llvmlite.binding as ll\n"
        "ll.get_host_cpu_name = lambda: 'emeraldrapids'\n"
        "import numbax\n"
        "import numpy as np\n"
        "from numba import njit\n"
        "from numba.core.registry import cpu_target\n"
        "from numbax._src.compiler.cpu.runtime import fastmath as fm, host_isa\n"
        "host = ll.get_host_cpu_features()\n"
        "if not host.get('avx2'):\n"
        "    print('skip'); raise SystemExit\n"
        "avx512 = all(host.get(f) for f in host_isa._AVX512)\n"
        "# an AVX2-only host named emeraldrapids keeps Numba's choice: nothing to widen\n"
        "assert (host_isa.APPLIED[1] == 'emeraldrapids') if avx512 else (\n"
        "    host_isa.APPLIED is None), host_isa.APPLIED\n"
        "cg = cpu_target.target_context.codegen()\n"
        "assert cg._get_host_cpu_name() == 'emeraldrapids'\n"
        "@njit(error_model='numpy')\n"
        "def f(x, o):\n"
        "    for i in range(x.shape[0]):\n"
        "        o[i] = fm.exp_f32(x[i])\n"
        "x = np.linspace(-20, 20, 1001, dtype=np.float32); o = np.empty_like(x); f(x, o)\n"
        "assert np.allclose(o, np.exp(x), rtol=1e-6, atol=0)\n"
        "asm = ''.join(f.inspect_asm().values())\n"
        "if avx512:\n"
        "    assert 'zmm' in asm and '-prefer-256-bit' in host_isa.APPLIED[2]\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() in ("ok", "skip")
