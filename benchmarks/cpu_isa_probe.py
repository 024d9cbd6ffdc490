"""Which instruction set Numba compiles numbax's kernels for here, and what it costs (no asserts).

Prints numba/llvmlite versions, LLVM's host CPU name and features, what Numba's CPU target
actually uses (``config.CPU_NAME``/``CPU_FEATURES``/``ENABLE_AVX``, the target machine's CPU
and feature string), then, in one child process per setting, whether a jitted
``sum(fm.exp_f64(x - m))`` pass (the logsumexp pass of generated code) compiles to ymm/zmm
vector code and how long it takes at 1e7 elements on one thread, plus a float32
elementwise ``fm.exp_f32`` pass. Settings: Numba's default, ``NUMBA_CPU_NAME=generic``,
``NUMBA_ENABLE_AVX=1``, the host's name and features spelled out, ``x86-64-v3``, and the
default after ``import numbax`` (which adjusts Numba's target when it would drop AVX2 the host
has, see ``compiler/host_isa.py``).

    PYTHONPATH=. python benchmarks/cpu_isa_probe.py
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

N = 10**7


def _target_info() -> dict:
    import llvmlite
    import llvmlite.binding as ll
    import numba
    from numba.core import config
    from numba.core.registry import cpu_target

    codegen = cpu_target.target_context.codegen()
    features = codegen._tm_features or ""
    host = ll.get_host_cpu_features()
    return {
        "numba": numba.__version__, "llvmlite": llvmlite.__version__,
        "llvm": ".".join(map(str, ll.llvm_version_info)),
        "host_cpu": ll.get_host_cpu_name(),
        "host_isa": {k: bool(host.get(k)) for k in ("avx", "avx2", "fma", "avx512f")},
        "CPU_NAME": config.CPU_NAME, "CPU_FEATURES": (config.CPU_FEATURES or "")[:40],
        "ENABLE_AVX": bool(config.ENABLE_AVX),
        "tm_cpu": codegen._get_host_cpu_name(),
        "tm_isa": {k: f"+{k}," in features + "," for k in ("avx", "avx2", "fma", "avx512f")},
    }


def _child(numbax_first: bool) -> None:
    if numbax_first:
        from numbax._src.compiler.cpu.runtime import host_isa

        host_isa.apply()  # what numbax does before its first @njit
        import numbax  # noqa: F401

        fix = host_isa.APPLIED
    else:
        fix = None
    import numpy as np
    from numba import njit

    from numbax._src.compiler.cpu.runtime import fastmath as fm
    from numbax._src.compiler.cpu.runtime import reductions as rd

    @njit(error_model="numpy")
    def exp_pass(x, m):
        acc = 0.0
        for i in range(x.shape[0]):
            acc = rd.add(acc, fm.exp_f64(x[i] - m))
        return acc

    @njit(error_model="numpy")
    def exp_f32(x, out):
        for i in range(x.shape[0]):
            out[i] = fm.exp_f32(x[i])

    rng = np.random.default_rng(0)
    x = rng.normal(size=N)
    x32 = x.astype(np.float32)
    out32 = np.empty_like(x32)
    c0 = time.process_time()
    exp_pass(x, x.max())
    exp_f32(x32, out32)
    compile_cpu = time.process_time() - c0
    asm = "".join(exp_pass.inspect_asm().values())
    res = {"fix": fix, "compile_cpu": round(compile_cpu, 3), **_target_info(),
           "asm": {r: asm.count(r) for r in ("xmm", "ymm", "zmm")}}
    for name, fn, args in (("exp_pass_f64_ms", exp_pass, (x, 0.0)),
                           ("exp_f32_ms", exp_f32, (x32, out32))):
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            fn(*args)
            best = min(best, time.perf_counter() - t0)
        res[name] = round(best * 1e3, 2)
    print(json.dumps(res))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    # one setting's process; --numbax: after host_isa.apply() and `import numbax`
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--numbax", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.numbax)
        return
    import llvmlite.binding as ll

    print(f"cpu_isa_probe | {time.strftime('%Y-%m-%d %H:%M')} | {os.cpu_count()} cores | "
          f"python {sys.version.split()[0]}")
    model = ""
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                head, _, body = line.partition(":")
                if head.strip() == "model name" and not model:
                    model = body.strip()
                if head.strip() == "flags" and not flags:
                    flags = set(body.split())
    except OSError:
        pass
    print(f"/proc/cpuinfo: {model!r}; flags avx/avx2/avx512f: "
          f"{[f in flags for f in ('avx', 'avx2', 'avx512f')]} ({len(flags)} flags)")
    print("env:", {k: v for k, v in os.environ.items() if k.startswith(("NUMBA_", "OPENBLAS"))})
    import numpy as np

    x = np.random.default_rng(0).normal(size=N)
    out = np.empty_like(x)
    ref = {}
    for label, fn in (("np.exp", lambda: np.exp(x, out=out)), ("np.copyto", lambda: np.copyto(
            out, x)), ("np.sum", lambda: x.sum())):
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        ref[label] = round(best * 1e3, 2)
    print(f"numpy reference at 1e7 f64 (ms, best of 5): {ref}")
    host_name = ll.get_host_cpu_name()
    host_features = ll.get_host_cpu_features().flatten()
    settings = [
        ("numba default", {}, []),
        ("NUMBA_CPU_NAME=generic", {"NUMBA_CPU_NAME": "generic"}, []),
        ("NUMBA_ENABLE_AVX=1", {"NUMBA_ENABLE_AVX": "1"}, []),
        ("host name+features", {"NUMBA_CPU_NAME": host_name,
                                "NUMBA_CPU_FEATURES": host_features}, []),
        ("x86-64-v3", {"NUMBA_CPU_NAME": "x86-64-v3"}, []),
        ("x86-64-v4+host feat.", {"NUMBA_CPU_NAME": "x86-64-v4",
                                  "NUMBA_CPU_FEATURES": host_features}, []),
        ("host_isa.apply()", {}, ["--numbax"]),
    ]
    for label, env, extra in settings:
        base = {k: v for k, v in os.environ.items()
                if k not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_ENABLE_AVX")}
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", *extra],
                              env={**base, **env}, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(f"{label}: FAILED {proc.stderr.strip().splitlines()[-1:]}")
            continue
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        if label == "numba default":
            print({k: res[k] for k in ("numba", "llvmlite", "llvm", "host_cpu", "host_isa")})
        print(f"{label:<22} tm_cpu={res['tm_cpu']!s:<16} CPU_NAME={res['CPU_NAME']!s:<12} "
              f"ENABLE_AVX={res['ENABLE_AVX']!s:<5} tm_isa={res['tm_isa']} asm={res['asm']} "
              f"exp_pass_f64 {res['exp_pass_f64_ms']} ms, exp_f32 {res['exp_f32_ms']} ms, "
              f"compile {res['compile_cpu']} s cpu, fix={res['fix']}")


if __name__ == "__main__":
    main()
