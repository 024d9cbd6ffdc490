"""Runs the differential fuzzer (tests/fuzz) over many programs and prints every mismatch with a
hypothesis-shrunk reproducer.

    python benchmarks/fuzz_soak.py                       # 10,000 programs, CPU
    python benchmarks/fuzz_soak.py --programs 2000 --transform vmap
    python benchmarks/fuzz_soak.py --programs 1000 --parallel-arms prange   # (or pool)
    python benchmarks/fuzz_soak.py --programs 500 --large-shapes --parallel-arms pool
    NUMBA_ENABLE_CUDASIM=1 python benchmarks/fuzz_soak.py --backend gpu --programs 1000

Programs run in chunks, each in a fresh worker process (compiled kernels accumulate in a
process). Inside a worker, hypothesis generates programs; the first mismatch not explained by an
earlier one stops generation, hypothesis shrinks it to a minimal program, and generation
resumes with a new seed. A mismatch counts as explained when an earlier minimal reproducer of
the same oracle used a subset of its ops. Output: one block per minimal reproducer (the oracle,
what differs, the program listing and `repr(program)`, which rebuilds it), then the totals.
Timings are not the point; nothing is asserted."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _ops(program) -> set[str]:
    names = set()
    stack = list(program.nodes)
    while stack:
        node = stack.pop()
        names.add(node.op)
        for body in node.bodies:
            stack.extend(body)
    return names


def _explained(mismatch, program, known: list[dict]) -> bool:
    ops = _ops(program)
    return any(k["oracle"] == mismatch.oracle and set(k["ops"]) <= ops for k in known)


def _search(args: argparse.Namespace, current: int, remaining: int, known: list[dict],
            seen: set, counts: dict) -> dict:
    """One hypothesis run from seed `current`: generates up to `remaining` new programs and stops
    at the first unexplained mismatch, shrunk. Returns {"new": programs generated, "last":
    (minimal program, its mismatches) or None, "error": a hypothesis failure of its own}."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from tests.fuzz.oracles import Mismatch, Skip, check
    from tests.fuzz.strategies import programs

    state: dict = {"failing": False, "last": None, "new": 0, "error": None}

    @seed(current)
    @settings(max_examples=remaining, database=None, deadline=None,
              phases=[Phase.generate, Phase.shrink], report_multiple_bugs=False,
              suppress_health_check=list(HealthCheck))
    @given(programs(transform=args.transform, max_nodes=args.max_nodes))
    def body(program):
        if not state["failing"]:
            if program in seen:
                return
            seen.add(program)
            state["new"] += 1
        counts["checks"] += 1
        try:
            found = check(program, args.backend)
        except Skip:
            counts["skipped"] += 0 if state["failing"] else 1
            return
        except Exception:  # noqa: BLE001 - a fault of the harness itself, shrunk too
            found = [Mismatch("harness", traceback.format_exc()[-1500:])]
        new = [m for m in found if not _explained(m, program, known)]
        if new:
            state["failing"] = True
            state["last"] = (program, new)
            raise AssertionError(str(new[0]))

    try:
        body()
    except Exception:  # noqa: BLE001 - the shrunk mismatch (state["last"]) or hypothesis' own
        if state["last"] is None:
            state["error"] = traceback.format_exc()[-1500:]
    return state


def force_parallel_arms(arm: str) -> None:
    """Every fused kernel of the programs gets a parallel arm and runs it on 2 threads in up to
    3 chunks, whatever its size (`arm`: "prange", Numba's OpenMP arm, or "pool", the native
    pool's tasks that a busy machine runs): the fuzzer's small arrays otherwise never leave the
    serial variant. The worker runs under NUMBA_BOUNDSCHECK=1, so a chunk reading or writing
    outside its arrays raises there."""
    import time as _time

    import numbax
    from numbax._src.compiler.cpu.runtime import busy_sites
    from numbax._src.compiler.cpu.runtime import threads as th

    th.PARALLEL_MIN_NS = 0
    th.chunks = lambda size, minimum, n: max(1, min(size, 3))
    th.parallel_ready = lambda kernel, work_ns, tier_ns=0: True
    numbax.config.update("cpu_threads", 2)
    if arm == "pool":
        th.busy = lambda: True

        def parallel(site, busy=True):
            site.started = _time.perf_counter()
            return busy_sites.PARALLEL
        busy_sites.Site.choose = parallel


def worker(args: argparse.Namespace) -> None:
    """Generates `args.programs` distinct programs (seed `args.seed`); prints JSON lines."""
    import warnings

    warnings.simplefilter("ignore")
    if args.parallel_arms:
        force_parallel_arms(args.parallel_arms)
    if args.large_shapes:
        from tests.fuzz import strategies

        strategies.DIMS = strategies.LARGE_DIMS
    known = json.loads(Path(args.known).read_text()) if args.known else []
    seen: set = set()
    counts = {"programs": 0, "skipped": 0, "checks": 0}
    remaining, current = args.programs, args.seed
    while remaining > 0:
        state = _search(args, current, remaining, known, seen, counts)
        counts["programs"] += state["new"]
        remaining -= state["new"]
        if state["last"] is not None:
            program, found = state["last"]
            for m in found:
                record = {"oracle": m.oracle, "detail": m.detail, "ops": sorted(_ops(program)),
                          "listing": program.listing(), "repr": repr(program)}
                known.append(record)
                print(json.dumps({"type": "mismatch", **record}), flush=True)
        elif state["error"] is not None:
            print(json.dumps({"type": "mismatch", "oracle": "hypothesis", "ops": [],
                              "detail": state["error"], "listing": "", "repr": ""}), flush=True)
            break
        elif state["new"] == 0:
            break  # hypothesis ran out of distinct programs
        current += 7919
    print(json.dumps({"type": "counts", **counts}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=10_000)
    parser.add_argument("--chunk", type=int, default=250, help="programs per worker process")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--transform", default=None,
                        help="jit, vmap, grad, jvp or vmap_grad (default: all, mixed)")
    parser.add_argument("--backend", default=None, help="gpu: compare jit on CUDA with the CPU")
    parser.add_argument("--max-nodes", type=int, default=5)
    parser.add_argument("--parallel-arms", default="", choices=["", "prange", "pool"],
                        help="run every kernel's parallel arm in chunks, bounds-checked")
    parser.add_argument("--large-shapes", action="store_true",
                        help="axes up to 257 long (tests/fuzz/strategies.LARGE_DIMS)")
    parser.add_argument("--known", default="", help="(worker) JSON file of known mismatches")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default="", help="also write the mismatches as JSON here")
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    known: list[dict] = []
    totals = {"programs": 0, "skipped": 0, "checks": 0}
    start = time.time()
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    if args.parallel_arms:
        env["NUMBA_BOUNDSCHECK"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        known_path = Path(tmp) / "known.json"
        k = 0
        while totals["programs"] < args.programs:
            known_path.write_text(json.dumps(known))
            n = min(args.chunk, args.programs - totals["programs"])
            cmd = [sys.executable, __file__, "--worker", "--programs", str(n), "--seed",
                   str(args.seed + 100_003 * k), "--known", str(known_path),
                   "--max-nodes", str(args.max_nodes)]
            cmd += ["--transform", args.transform] if args.transform else []
            cmd += ["--backend", args.backend] if args.backend else []
            cmd += ["--parallel-arms", args.parallel_arms] if args.parallel_arms else []
            cmd += ["--large-shapes"] if args.large_shapes else []
            k += 1
            try:
                out = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                     timeout=max(600, 20 * n), cwd=ROOT)
                lines, err = out.stdout.splitlines(), out.stderr[-2000:]
            except subprocess.TimeoutExpired as exc:
                lines = (exc.stdout or b"").decode().splitlines() if isinstance(
                    exc.stdout, bytes) else (exc.stdout or "").splitlines()
                err = "worker timed out"
            got = 0
            for line in lines:
                if not line.startswith("{"):
                    continue
                rec = json.loads(line)
                if rec.pop("type") == "counts":
                    got = rec["programs"]
                    for key in totals:
                        totals[key] += rec[key]
                else:
                    known.append(rec)
                    _print_mismatch(len(known), rec)
            if not got:
                print(f"worker {k} produced no count: {err}", flush=True)
                totals["programs"] += n  # do not loop forever on a crashing chunk
            rate = totals["programs"] / max(time.time() - start, 1e-9)
            print(f"# {totals['programs']} programs ({totals['skipped']} refused by numpy), "
                  f"{len(known)} mismatches, {rate:.2f} programs/s", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"totals": totals, "mismatches": known},
                                             indent=1))
    print(f"\nran {totals['programs']} distinct programs ({totals['checks']} checks with "
          f"shrinking, {totals['skipped']} refused by numpy) in {time.time() - start:.0f} s; "
          f"{len(known)} minimal mismatches")


def _print_mismatch(k: int, rec: dict) -> None:
    print(f"\n=== mismatch {k}: {rec['oracle']}: {rec['detail'][:600]}")
    if rec["listing"]:
        print(rec["listing"])
        print("reproducer:\n  from tests.fuzz.programs import Input, Node, Program\n"
              "  from tests.fuzz.oracles import check\n"
              f"  print(check({rec['repr']}))", flush=True)


if __name__ == "__main__":
    main()
