"""The card's time per kernel of a jitted GPU program, through CUPTI as torch.profiler exposes
it (it records every kernel of the process, numbax's and cuBLAS's included): the MLP SGD step
(784-512-512-10, float32) at a batch size, run with CUDA graphs off so each kernel appears by
its name. Needs PyTorch with CUDA (the GPU machine has it). No asserts.

    PYTHONPATH=. python benchmarks/gpu_kernel_profile.py [--batch 4096] [--steps 20]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_cpu  # noqa: E402

import numbax  # noqa: E402
import numbax.numpy as jnp  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    from torch.profiler import ProfilerActivity, profile

    numbax.config.update("cuda_graphs", False)
    gpu = numbax.devices("gpu")[0]
    rng = np.random.default_rng(0)
    sizes = [784, 512, 512, 10]
    params = [(rng.normal(size=(a, b)).astype(np.float32) * 0.05, np.zeros(b, np.float32))
              for a, b in zip(sizes[:-1], sizes[1:])]
    x = rng.normal(size=(args.batch, 784)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, args.batch)]
    params, x, y = numbax.device_put((params, x, y), gpu)
    step = bench_cpu.mlp_step(jnp, numbax.grad, lambda f: numbax.jit(f, backend="gpu"))
    for _ in range(3):
        numbax.block_until_ready(step(params, x, y))
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(args.steps):
            out = step(params, x, y)
        numbax.block_until_ready(out)
    per_kernel: dict[str, list[float]] = {}
    for event in prof.events():
        if event.device_type.name == "CUDA":
            per_kernel.setdefault(event.name[:90], []).append(event.device_time)  # µs
    total = sum(sum(ts) for ts in per_kernel.values()) / args.steps
    count = sum(len(ts) for ts in per_kernel.values()) / args.steps
    print(f"MLP step batch {args.batch}: {total:.1f} µs of kernels a step, {count:.0f} kernels")
    for name, ts in sorted(per_kernel.items(), key=lambda kv: -sum(kv[1]))[:25]:
        print(f"{sum(ts) / args.steps:8.1f} µs  x{len(ts) // args.steps:<3} {name}")


if __name__ == "__main__":
    main()
