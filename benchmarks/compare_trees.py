"""numbax's kernel speed from two source trees, measured alternately in fresh processes (so the
machine's drift hits both alike): a before/after check for a refactor.

    python benchmarks/compare_trees.py OLD_TREE NEW_TREE [--rounds 5]

Each tree is a directory holding a `numbax/` package (a `git worktree` of an older commit, for
instance). Every round runs one child per tree, in alternating order; a child times the rows
of bench_cpu.py (this tree's) with the numbax it finds first on its path, in its own disk
cache. Prints, per row, the median over rounds of each tree's per-round median, the min, and
new / old. Nothing is asserted."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(tree: str) -> None:
    sys.path.insert(0, tree)
    sys.path.insert(1, str(HERE))
    import bench_cpu
    import numpy as np

    import numbax
    import numbax.numpy as bnp

    assert numbax.__file__.startswith(tree), numbax.__file__
    rng = np.random.default_rng(0)
    x32 = rng.normal(size=10**6).astype(np.float32)
    y32 = rng.normal(size=10**6).astype(np.float32)
    x64 = rng.normal(size=10**6)
    big = rng.normal(size=10**7)
    sq = rng.normal(size=(1000, 1000))
    sq32 = sq.astype(np.float32)
    big32 = big.astype(np.float32)
    rows = [("sum 1e7 f32", "sum", (big32,)), ("logsumexp 1e7 f32", "logsumexp", (big32,)),
            ("logsumexp 1000^2 f32", "logsumexp", (sq32,)),
            ("softmax 1000^2 f32", "softmax", (sq32,)), ("selu 1e6 f32", "selu", (x32,)),
            ("sigmoid 1e6 f32", "sigmoid", (x32,)),
            ("add 1e6 f32", "add", (x32, y32)), ("selu 1e6 f64", "selu", (x64,)),
            ("sum 1e7 f64", "sum", (big,)), ("logsumexp 1e7 f64", "logsumexp", (big,)),
            ("sum 1000^2", "sum", (sq,)), ("logsumexp 1000^2", "logsumexp", (sq,)),
            ("softmax 1000^2", "softmax", (sq,)), ("matmul 1000^2 f32", "matmul", (sq32, sq32)),
            ("dispatch x+1", "dispatch", (np.arange(10.0),))]
    fns = bench_cpu.cases(bnp)
    out = {}
    for label, name, args in rows:
        f = numbax.jit(fns[name])
        out[label] = bench_cpu.median_time(f, *(bnp.asarray(a) for a in args), repeat=9)
    for name, label, f_nb, nb_args, _, _ in bench_cpu.training_cases(rng):
        out[f"{name} {label}"] = bench_cpu.median_time(f_nb, *nb_args, repeat=9)
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     usage="%(prog)s [-h] OLD_TREE NEW_TREE [--rounds ROUNDS]",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", nargs="?", metavar="OLD_TREE")
    parser.add_argument("new", nargs="?", metavar="NEW_TREE")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", metavar="TREE", help=argparse.SUPPRESS)  # one measurement
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
        return
    if args.new is None:
        parser.error("OLD_TREE and NEW_TREE are required")
    old, new = (str(Path(p).resolve()) for p in (args.old, args.new))
    rounds = args.rounds
    results: dict[str, dict[str, list[float]]] = {old: {}, new: {}}
    with tempfile.TemporaryDirectory() as caches:
        for r in range(rounds):
            for tree in ((old, new) if r % 2 == 0 else (new, old)):
                env = {**os.environ, "JAX_PLATFORMS": "cpu",
                       "NUMBAX_CACHE_DIR": os.path.join(caches, str(hash(tree)))}
                env.pop("PYTHONPATH", None)
                got = subprocess.run([sys.executable, __file__, "--child", tree], env=env,
                                     capture_output=True, text=True, check=True, cwd=caches)
                for label, t in json.loads(got.stdout.strip().splitlines()[-1]).items():
                    results[tree].setdefault(label, []).append(t)
            print(f"round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
    print(f"{'row':<34} {'old median | min':>20} {'new median | min':>20} {'new/old':>8}")
    for label, ts_old in results[old].items():
        ts_new = results[new][label]
        m_old, m_new = statistics.median(ts_old), statistics.median(ts_new)
        print(f"{label:<34} {m_old * 1e6:>10.1f} | {min(ts_old) * 1e6:<8.1f}"
              f"{m_new * 1e6:>10.1f} | {min(ts_new) * 1e6:<8.1f} {m_new / m_old:>8.2f}")


if __name__ == "__main__":
    main()
