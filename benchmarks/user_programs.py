"""Training programs users bring beyond the issue's rows, numbax's jit against jax.jit: a
transformer block, an LSTM through scan, an MLP epoch inside scan, attention heads under vmap,
gradient descent in fori_loop, a VAE, a Gaussian process's marginal likelihood, an n-body
integration, an embedding-bag classifier, a Metropolis sampler in scan, a separable blur,
vmapped interpolation into a histogram, a quaternion rotation of 1e6 points, a gamma curve
over an image's grey, vmapped 3x3 matrix-vector products, a bounding box and homogeneous
coordinates of 1e6 points, a polynomial, a channels-first CNN's training step and log-domain
Sinkhorn iterations (all float32, written as a JAX user writes them).

    JAX_PLATFORMS=cpu python benchmarks/user_programs.py [--only lstm,gp] [--calls 10]

Each library runs in a fresh process of its own (their thread pools never share the cores);
the table gives each program's median and fastest call and numbax / jax.jit of the medians.
A program's first call (compile) is printed too; WARM_S seconds of untimed calls follow it.
No asserts; both libraries' results are printed to the sixth digit so a difference shows.

Written for JAX's default float32: constants are Python floats (weak), and initial states
say float32, since numbax's defaults follow numpy (docs/sharp_bits.md: `jnp.zeros(n)` is
float64 there, and would make an LSTM's scan run in float64)."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
from settle import settled

WARM_S = 3.0  # seconds of untimed calls after the first

def _programs(jax, jnp):  # noqa: C901  (one builder per program, in order)
    """name -> zero-argument callable running one step of that program."""
    rng = np.random.default_rng(0)
    f32 = jnp.float32

    def param(*shape):
        return jnp.asarray((rng.standard_normal(shape) * 0.05).astype(np.float32))

    def sgd(loss):
        @jax.jit
        def step(p, *args):
            value, grads = jax.value_and_grad(loss)(p, *args)
            return jax.tree_util.tree_map(lambda w, d: w - 0.01 * d, p, grads), value
        return step

    progs = {}

    # a pre-norm transformer block, batch 16 x 128 tokens, width 256, 4 heads, causal
    def layernorm(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b

    def block_loss(p, x, y):
        b, t, d = x.shape
        h = layernorm(x, p["g1"], p["b1"])
        q, k, v = ((h @ p[w]).reshape(b, t, 4, d // 4) for w in ("wq", "wk", "wv"))
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / 8.0
        s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, -1e9)
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v).reshape(b, t, d)
        x = x + o @ p["wo"]
        h = layernorm(x, p["g2"], p["b2"])
        return jnp.mean((x + jax.nn.gelu(h @ p["w1"] + p["c1"]) @ p["w2"] - y) ** 2)

    d = 256
    block = dict(g1=jnp.ones(d, f32), b1=jnp.zeros(d, f32), g2=jnp.ones(d, f32),
                 b2=jnp.zeros(d, f32), wq=param(d, d), wk=param(d, d), wv=param(d, d),
                 wo=param(d, d), w1=param(d, 4 * d), c1=jnp.zeros(4 * d, f32),
                 w2=param(4 * d, d))
    step, bx, by = sgd(block_loss), param(16, 128, d), param(16, 128, d)
    progs["transformer block"] = lambda: step(block, bx, by)

    # an LSTM over 50 steps, batch 64, hidden 256
    def lstm_loss(p, xs, y):
        def cell(carry, x):
            h, c = carry
            i, f, g, o = jnp.split(x @ p["wx"] + h @ p["wh"] + p["b"], 4, -1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h
        zeros = jnp.zeros((xs.shape[1], 256), f32)
        (h, _), _ = jax.lax.scan(cell, (zeros, zeros), xs)
        return jnp.mean((h @ p["wy"] - y) ** 2)

    lstm = dict(wx=param(64, 1024), wh=param(256, 1024), b=jnp.zeros(1024, f32),
                wy=param(256, 10))
    lstep, lx, ly = sgd(lstm_loss), param(50, 64, 64), param(64, 10)
    progs["lstm scan"] = lambda: lstep(lstm, lx, ly)

    # an epoch of 20 MLP steps (784-512-512-10, batch 128) inside one scan
    mlp = [(param(a, b), jnp.zeros(b, f32)) for a, b in ((784, 512), (512, 512), (512, 10))]

    def mlp_loss(p, x, y):
        for w, b in p[:-1]:
            x = jax.nn.relu(x @ w + b)
        logits = x @ p[-1][0] + p[-1][1]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, -1))

    def mlp_step(p, batch):
        value, grads = jax.value_and_grad(mlp_loss)(p, *batch)
        return jax.tree_util.tree_map(lambda w, d: w - 0.01 * d, p, grads), value

    epoch = jax.jit(lambda p, xs, ys: jax.lax.scan(mlp_step, p, (xs, ys)))
    ex = param(20, 128, 784)
    ey = jax.nn.one_hot(jnp.asarray(rng.integers(0, 10, (20, 128))), 10, dtype=f32)
    progs["mlp epoch in scan"] = lambda: epoch(mlp, ex, ey)

    # attention heads under vmap, gradient with respect to the projections
    def attention(x, wq, wk, wv):
        def head(q, k, v):
            return jax.nn.softmax(q @ k.T / 8.0, -1) @ v
        split = [(x @ w).reshape(x.shape[0], 8, 64).transpose(1, 0, 2) for w in (wq, wk, wv)]
        return jax.vmap(head)(*split).sum()

    heads = jax.jit(jax.grad(attention, (1, 2, 3)))
    ax, aw = param(512, 512), [param(512, 512) for _ in range(3)]
    progs["attention heads vmap"] = lambda: heads(ax, *aw)

    # 200 steps of gradient descent on least squares in fori_loop
    ga, gb = param(1000, 200), param(1000)

    @jax.jit
    def descend(x0):
        def body(i, x):
            return x - 0.1 * jax.grad(lambda x: jnp.sum((ga @ x - gb) ** 2))(x)
        return jax.lax.fori_loop(0, 200, body, x0)

    progs["fori_loop descent"] = lambda: descend(jnp.zeros(200, f32))

    # a VAE step, batch 256
    vae = dict(w1=param(784, 400), b1=jnp.zeros(400, f32), wm=param(400, 20),
               wv=param(400, 20), d1=param(20, 400), db=jnp.zeros(400, f32), d2=param(400, 784))

    def vae_loss(p, x, key):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        mu, logv = h @ p["wm"], h @ p["wv"]
        z = mu + jnp.exp(0.5 * logv) * jax.random.normal(key, mu.shape, f32)
        logits = jnp.tanh(z @ p["d1"] + p["db"]) @ p["d2"]
        kl = -0.5 * jnp.sum(1 + logv - mu ** 2 - jnp.exp(logv))
        return (jnp.sum(jax.nn.softplus(logits) - x * logits) + kl) / x.shape[0]

    vstep = jax.jit(jax.value_and_grad(vae_loss))
    vx = jnp.asarray((rng.random((256, 784)) > 0.5).astype(np.float32))
    key = jax.random.PRNGKey(0)
    progs["vae"] = lambda: vstep(vae, vx, key)

    # a Gaussian process's negative log marginal likelihood and its gradient, 500 points
    px = jnp.asarray(rng.standard_normal((500, 3)).astype(np.float32))
    py = jnp.asarray(rng.standard_normal(500).astype(np.float32))

    def gp_nll(theta):
        ls, amp, noise = jnp.exp(theta[0]), jnp.exp(theta[1]), jnp.exp(theta[2])
        d2 = jnp.sum((px[:, None, :] - px[None, :, :]) ** 2, -1)
        k = amp * jnp.exp(-0.5 * d2 / ls ** 2) + (noise + 1e-3) * jnp.eye(500, dtype=f32)
        chol = jnp.linalg.cholesky(k)
        alpha = jax.scipy.linalg.cho_solve((chol, True), py)
        return 0.5 * py @ alpha + jnp.sum(jnp.log(jnp.diag(chol)))

    gp = jax.jit(jax.value_and_grad(gp_nll))
    theta = jnp.zeros(3, f32)
    progs["gp"] = lambda: gp(theta)

    # 50 steps of 256 bodies under gravity in fori_loop
    pos, vel = param(256, 3) * 20, param(256, 3)

    @jax.jit
    def nbody(pos, vel):
        def accel(p):
            d = p[None, :, :] - p[:, None, :]
            r2 = jnp.sum(d * d, -1) + 0.01
            return jnp.sum(d * (r2 ** -1.5)[:, :, None], 1)

        def step(i, state):
            p, v = state
            v = v + 0.001 * accel(p)
            return p + 0.001 * v, v
        return jax.lax.fori_loop(0, 50, step, (pos, vel))

    progs["nbody"] = lambda: nbody(pos, vel)

    # an embedding-bag classifier: 512 bags of 64 ids into a 20000 x 128 table
    emb = dict(e=param(20000, 128), w=param(128, 50), b=jnp.zeros(50, f32))
    ids = jnp.asarray(rng.integers(0, 20000, (512, 64)))
    labels = jnp.asarray(rng.integers(0, 50, 512))

    def emb_loss(p, ids, labels):
        logits = jnp.mean(p["e"][ids], 1) @ p["w"] + p["b"]
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], 1))

    estep = jax.jit(jax.value_and_grad(emb_loss))
    progs["embedding bag"] = lambda: estep(emb, ids, labels)

    # random-walk Metropolis: 1024 chains, 500 steps, normal proposals and uniform draws
    def log_p(x):
        return -0.5 * (x[..., 0] ** 2 + 4 * (x[..., 1] - x[..., 0] ** 2) ** 2)

    @jax.jit
    def metropolis(key, x0):
        def step(carry, k):
            x, lp = carry
            k1, k2 = jax.random.split(k)
            prop = x + 0.3 * jax.random.normal(k1, x.shape, f32)
            lpp = log_p(prop)
            accept = jnp.log(jax.random.uniform(k2, lp.shape, f32)) < lpp - lp
            x = jnp.where(accept[:, None], prop, x)
            return (x, jnp.where(accept, lpp, lp)), x[:, 0].mean()
        return jax.lax.scan(step, (x0, log_p(x0)), jax.random.split(key, 500))[1]

    chains0, key = param(1024, 2) * 20, jax.random.PRNGKey(0)
    progs["metropolis"] = lambda: metropolis(key, chains0)

    # a separable Gaussian blur of a 512 x 512 image: a convolution of each row, then column
    image = param(512, 512)
    taps = jnp.asarray(np.exp(-np.linspace(-2, 2, 9) ** 2).astype(np.float32))

    @jax.jit
    def blur(im):
        rows = jax.vmap(lambda r: jnp.convolve(r, taps, mode="same"))(im)
        return jax.vmap(lambda c: jnp.convolve(c, taps, mode="same"), in_axes=1,
                        out_axes=1)(rows)

    progs["separable blur"] = lambda: blur(image)

    # per-row interpolation into tables, then a histogram of the results
    xp = jnp.asarray(np.sort(rng.uniform(0, 10, (512, 200)), 1).astype(np.float32))
    fp, xq = param(512, 200) * 20, jnp.asarray(rng.uniform(0, 10, (512, 1000)).astype(np.float32))

    @jax.jit
    def interp_hist(xq, xp, fp):
        values = jax.vmap(jnp.interp)(xq, xp, fp)
        return jnp.histogram(values, bins=100, range=(-4.0, 4.0))[0]

    progs["interp histogram"] = lambda: interp_hist(xq, xp, fp)

    # points and images: arrays of short trailing axes (docs/architecture.md, short tails)
    points, quats = param(1_000_000, 3), param(1_000_000, 4)
    quats = quats / jnp.linalg.norm(quats, axis=1, keepdims=True)

    @jax.jit
    def rotate(q, x):  # a unit quaternion per point
        w, u = q[:, :1], q[:, 1:]
        t = 2 * jnp.cross(u, x)
        return x + w * t + jnp.cross(u, t)

    progs["quaternion rotate"] = lambda: rotate(quats, points)
    photo = jnp.asarray(rng.random((1024, 1024, 3)).astype(np.float32))

    @jax.jit
    def gamma_gray(im):
        return (im[..., 0] * 0.299 + im[..., 1] * 0.587 + im[..., 2] * 0.114) ** (1 / 2.2)

    progs["image gray gamma"] = lambda: gamma_gray(photo)
    frames, vectors = param(250_000, 3, 3), param(250_000, 3)
    matvec = jax.jit(jax.vmap(lambda m, v: m @ v))
    progs["vmap 3x3 matvec"] = lambda: matvec(frames, vectors)

    @jax.jit
    def box_and_homogeneous(x):  # a bounding box, then points in homogeneous coordinates
        lo, hi = x.min(0), x.max(0)
        unit = (x - lo) / (hi - lo)
        return jnp.concatenate([unit[:, ::-1], jnp.ones((x.shape[0], 1), x.dtype)], axis=1)

    progs["box + homogeneous"] = lambda: box_and_homogeneous(points)
    coefficients, samples = param(8), param(1_000_000)
    polyval = jax.jit(jnp.polyval)
    progs["polyval 8 coeffs"] = lambda: polyval(coefficients, samples)

    # a small channels-first CNN's training step (lax.conv's default NCHW layout): 3x3
    # convolutions 1 -> 16 -> 32 channels, 2x2 average pooling, a dense layer; batch 64
    images, digits = param(64, 1, 28, 28) * 20, jnp.asarray(rng.integers(0, 10, 64))
    cnn = {"k1": param(16, 1, 3, 3) * 6, "k2": param(32, 16, 3, 3) * 2, "w": param(1568, 10)}

    def pool(h):
        return jax.lax.reduce_window(h, 0.0, jax.lax.add, (1, 1, 2, 2), (1, 1, 2, 2),
                                     "VALID") / 4

    def cnn_loss(p, x, y):
        h = pool(jax.nn.relu(jax.lax.conv_general_dilated(x, p["k1"], (1, 1), "SAME")))
        h = pool(jax.nn.relu(jax.lax.conv_general_dilated(h, p["k2"], (1, 1), "SAME")))
        logits = h.reshape(h.shape[0], -1) @ p["w"]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1))

    cnn_step = sgd(cnn_loss)
    progs["cnn step (NCHW)"] = lambda: cnn_step(cnn, images, digits)

    # log-domain Sinkhorn: 50 iterations of a logsumexp over rows, then over columns
    cost = jnp.abs(param(512, 512) * 20)

    @jax.jit
    def sinkhorn(c):
        def body(i, fg):
            f, g = fg
            f = -0.1 * jax.nn.logsumexp((g[None, :] - c) / 0.1, axis=1)
            g = -0.1 * jax.nn.logsumexp((f[:, None] - c) / 0.1, axis=0)
            return f, g
        zeros = jnp.zeros(512, f32)
        f, g = jax.lax.fori_loop(0, 50, body, (zeros, zeros))
        return jnp.sum(jnp.exp((f[:, None] + g[None, :] - c) / 0.1) * c)

    progs["sinkhorn 512"] = lambda: sinkhorn(cost)
    return progs


def _run(lib: str, only: list[str], calls: int) -> None:
    if lib == "jax":
        import jax
        import jax.numpy as jnp
    else:
        import numbax as jax
        import numbax.numpy as jnp
    for name, fn in _programs(jax, jnp).items():
        if only and not any(o in name for o in only):
            continue
        start = time.perf_counter()
        out = jax.block_until_ready(fn())
        first = time.perf_counter() - start
        # steady state: a kernel's prange variant compiles only after ~20 ms of its serial
        # work (runtime/threads.py), which takes a few calls of these programs
        # (and numbax compiles them in a helper process meanwhile: settle.py)
        def run_once(fn=fn):
            jax.block_until_ready(fn())

        def timed():
            times = []
            for _ in range(calls):
                start = time.perf_counter()
                run_once()
                times.append(time.perf_counter() - start)
            return times

        for _ in range(3):
            run_once()
        times = settled(timed, run_once, (), WARM_S)
        check = float(np.sum(np.asarray(jax.tree_util.tree_leaves(out)[-1], np.float64)))
        print(json.dumps({"name": name, "median": statistics.median(times), "min": min(times),
                          "first": first, "check": check}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated parts of program names")
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--lib", choices=["numbax", "jax"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    only = [o for o in args.only.split(",") if o]
    if args.lib:
        _run(args.lib, only, args.calls)
        return
    results = {}
    for lib in ("numbax", "jax"):
        env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"))
        proc = subprocess.run([sys.executable, __file__, "--lib", lib, "--only", args.only,
                               "--calls", str(args.calls)], env=env, capture_output=True,
                              text=True)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if proc.returncode and not lines:
            print(f"{lib} failed:\n{proc.stderr[-2000:]}")
        results[lib] = {r["name"]: r for r in map(json.loads, lines)}
    print(f"user_programs | {time.strftime('%Y-%m-%d %H:%M')} | {os.cpu_count()} cores")
    print(f"{'program':24s} {'numbax ms':>18s} {'jax ms':>18s} {'nbx/jax':>8s} "
          f"{'first s (nbx, jax)':>19s}  check (nbx, jax)")
    for name, mine in results["numbax"].items():
        peer = results["jax"].get(name)
        ratio = f"{mine['median'] / peer['median']:8.2f}" if peer else f"{'-':>8s}"
        theirs = (f"{peer['median'] * 1e3:8.2f} ({peer['min'] * 1e3:7.2f})" if peer
                  else f"{'-':>18s}")
        firsts = f"{mine['first']:6.1f}, {peer['first'] if peer else float('nan'):5.1f}"
        checks = f"{mine['check']:.6g}, {peer['check'] if peer else float('nan'):.6g}"
        print(f"{name:24s} {mine['median'] * 1e3:8.2f} ({mine['min'] * 1e3:7.2f}) {theirs} "
              f"{ratio} {firsts:>19s}  {checks}")


if __name__ == "__main__":
    main()
