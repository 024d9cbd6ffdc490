"""Checks of CUDA-graph replay (cuda/runtime/graphs.py). On a card the driver's own capture and
replay run (counted); under the simulator, which has no graphs, the binding boundary
(stream.capture / launch / copy) is answered by a model: capture runs the driver once, noting
the buffers it was handed, and a replay reruns it with exactly those buffers, so what is tested
is the bookkeeping around the graph: graph-owned input and temporary buffers, fresh outputs,
fallbacks. numpy is the truth."""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cuda.runtime import graphs, stream
from numbax._src.compiler.cuda.runtime import memory as cuda_runtime
from tests.compiler.cuda.sim_checks import check, gjit

RNG = np.random.default_rng(53)


class Counts:
    def __init__(self) -> None:
        self.captures = 0
        self.launches = 0
        self.kept: list = []  # buffers handed to captured drivers


def _model_capture(counts: Counts, record):
    inner = cuda_runtime._TLS.hold  # the replayer's hold, set around the capture

    def noted(key):
        buf = inner(key)
        counts.kept.append(buf)
        return buf

    cuda_runtime._TLS.hold = noted
    stream._TLS.capture = stream.work_stream()  # launch sites take the capture path
    try:
        result = record()
    finally:
        stream._TLS.capture = None
        cuda_runtime._TLS.hold = inner
    return (record, list(counts.kept), result), result


def _model_launch(graph) -> None:
    record, handed, result = graph
    it = iter(handed)

    def same(key):
        buf = next(it)
        assert (buf.size, buf.dtype.str) == key[1:], ("replay allocates differently", key)
        return buf

    stream._TLS.capture = stream.work_stream()  # as during the capture: nested replayers
    try:                                         # inside run their drivers
        with cuda_runtime.holding(same):
            outs = record()
    finally:
        stream._TLS.capture = None
    assert all(o is r for o, r in zip(outs, result, strict=True)), "replay moved an output"


@contextlib.contextmanager
def replay_everything() -> Iterator[Counts]:
    """Every program worth a graph; captures and replays counted (modelled in the simulator)."""
    counts = Counts()
    saved = {name: getattr(stream, name) for name in ("capture", "launch", "release", "copy",
                                                      "work_stream")}
    saved_worth = graphs.worth
    graphs.worth = lambda *a: True
    if cuda_runtime.simulator_enabled():
        from numba import cuda

        fake = cuda.stream()
        stream.work_stream = lambda: fake
        stream.release = lambda graph: None
        stream.copy = lambda dst, src: dst.copy_to_device(src) if src.size else None

        def capture(record):
            counts.captures += 1
            counts.kept.clear()
            return _model_capture(counts, record)

        stream.capture = capture
        stream.launch = _model_launch
    else:
        def capture(record):
            counts.captures += 1
            return saved["capture"](record)

        stream.capture = capture
    real_launch = stream.launch

    def launch(graph):
        counts.launches += 1
        real_launch(graph)

    stream.launch = launch
    try:
        yield counts
    finally:
        graphs.worth = saved_worth
        for name, fn in saved.items():
            setattr(stream, name, fn)


def _mlp_step(params, x, y):
    def loss(p):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        logits = h @ p["w2"] + p["b2"]
        return -jnp.mean(jnp.sum(numbax.nn.log_softmax(logits) * y, axis=1))

    g = numbax.grad(loss)(params)
    return {k: params[k] - 0.1 * g[k] for k in params}, loss(params)


def _mlp_reference(params, x, y):
    """The same step in float64 numpy, gradients written out by hand."""
    w1, b1, w2, b2 = (params[k].astype(np.float64) for k in ("w1", "b1", "w2", "b2"))
    h = np.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    n = x.shape[0]
    loss = -np.mean(np.sum(logp * y, axis=1))
    dz = (np.exp(logp) * y.sum(axis=1, keepdims=True) - y) / n
    dw2, db2 = h.T @ dz, dz.sum(0)
    dh = dz @ w2.T * (1 - h ** 2)
    dw1, db1 = x.T @ dh, dh.sum(0)
    new = {"w1": w1 - 0.1 * dw1, "b1": b1 - 0.1 * db1, "w2": w2 - 0.1 * dw2,
           "b2": b2 - 0.1 * db2}
    return new, loss


@check
def graphs_replay_a_training_loop():
    """Five steps of an MLP: the third call captures, later calls replay; every step matches
    numpy, and a result kept from one step is unchanged by the next replay."""
    params = {"w1": RNG.normal(size=(12, 16)) * 0.3, "b1": np.zeros(16),
              "w2": RNG.normal(size=(16, 5)) * 0.3, "b2": np.zeros(5)}
    params = {k: v.astype(np.float32) for k, v in params.items()}
    with replay_everything() as counts:
        step = gjit(_mlp_step)
        p = {k: numbax.device_put(v, numbax.devices("gpu")[0]) for k, v in params.items()}
        kept = []
        for _ in range(5):
            x = RNG.normal(size=(8, 12)).astype(np.float32)
            y = np.eye(5, dtype=np.float32)[RNG.integers(0, 5, 8)]
            want, want_loss = _mlp_reference({k: np.asarray(v) for k, v in p.items()}, x, y)
            p, got_loss = step(p, x, y)
            kept.append((p, want))
            np.testing.assert_allclose(float(got_loss), want_loss, rtol=1e-4)
            for k in want:
                np.testing.assert_allclose(np.asarray(p[k]), want[k], rtol=1e-4, atol=1e-5)
        for got, want in kept:  # earlier results survived later replays
            for k in want:
                np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=1e-4, atol=1e-5)
        assert counts.captures == 1 and counts.launches == 3, vars(counts)
        if cuda_runtime.simulator_enabled():
            pooled = {id(b) for bufs in cuda_runtime._POOL.values() for b in bufs}
            assert counts.kept and not any(id(b) in pooled for b in counts.kept), \
                "a graph's buffer is still in the pool"


@check
def graphs_replay_a_scan():
    """A scan of 6 steps (carry and stacked outputs) replayed whole, against a Python loop."""
    def run(c0, xs):
        def body(c, x):
            c = jnp.tanh(c * 0.9 + x)
            return c, jnp.sum(c)
        return lax.scan(body, c0, xs)

    with replay_everything() as counts:
        f = gjit(run)
        for _ in range(4):
            c0 = RNG.normal(size=7).astype(np.float32)
            xs = RNG.normal(size=(6, 7)).astype(np.float32)
            c, ys = f(c0, xs)
            wc, wys = c0.astype(np.float64), []
            for x in xs:
                wc = np.tanh(wc * 0.9 + x)
                wys.append(wc.sum())
            np.testing.assert_allclose(np.asarray(c), wc, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(np.asarray(ys), wys, rtol=1e-5, atol=1e-5)
        assert counts.captures == 1 and counts.launches == 2, vars(counts)


@check
def graphs_replay_loop_bodies_not_the_loop():
    """A while_loop reads its predicate on the host every iteration: the program is never
    captured, its body is (one graph launch an iteration from the third on)."""
    def run(x, w):
        def body(c):
            v, n = c
            return jnp.tanh(v * w + 0.5) * 2.0 + 1.0, n + 1
        return lax.while_loop(lambda c: c[1] < 6, body, (x, 0))

    with replay_everything() as counts:
        f = gjit(run)
        for _ in range(3):
            x, w = RNG.normal(size=(2, 3)).astype(np.float32)
            want = x.astype(np.float64)
            for _ in range(6):
                want = np.tanh(want * w + 0.5) * 2.0 + 1.0
            v, n = f(x, w)
            np.testing.assert_allclose(np.asarray(v), want, rtol=1e-5)
            assert int(n) == 6
        # body (18 calls) and predicate (21 calls), each replayed after two warm-up calls
        # (here every program is worth a graph): 16 + 19 launches
        assert counts.captures == 2 and counts.launches == 35, vars(counts)


@check
def graphs_nest_a_loop_inside_a_replayed_program():
    """A fori_loop (a scan without outputs) inside a program that is itself replayed: the
    body's replayer runs its driver while the program is captured."""
    def run(x, w):
        return lax.fori_loop(0, 5, lambda i, c: jnp.sin(c * w) + c, x) * 2.0

    with replay_everything() as counts:
        f = gjit(run)
        for _ in range(4):
            x, w = RNG.normal(size=(2, 4)).astype(np.float32)
            want = x.astype(np.float64)
            for _ in range(5):
                want = np.sin(want * w) + want
            np.testing.assert_allclose(np.asarray(f(x, w)), want * 2.0, rtol=1e-5, atol=1e-6)
        assert counts.captures == 2, vars(counts)  # the body's (first call), the program's


@check
def graphs_fall_back_when_capture_fails_or_is_off():
    def run(x, y):
        return jnp.sin(x) * y + jnp.cos(y), jnp.sum(x * y)

    with replay_everything() as counts:
        def refuse(record):
            counts.captures += 1
            raise RuntimeError("CUDA driver call failed: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED")

        stream.capture = refuse
        f = gjit(run)
        for _ in range(4):
            x, y = RNG.normal(size=(2, 9)).astype(np.float32)
            a, b = f(x, y)
            want = np.sin(x.astype(np.float64)) * y + np.cos(y.astype(np.float64))
            np.testing.assert_allclose(np.asarray(a), want, rtol=1e-5, atol=1e-6)  # cancels
            np.testing.assert_allclose(float(b), np.sum(x.astype(np.float64) * y), rtol=1e-5)
        assert counts.captures == 1 and counts.launches == 0, vars(counts)
    with replay_everything() as counts, numbax.config.override("cuda_graphs", False):
        f = gjit(lambda x: jnp.exp(x) + 1.0)
        for _ in range(4):
            x = RNG.normal(size=5).astype(np.float32)
            np.testing.assert_allclose(np.asarray(f(x)), np.exp(x) + 1.0, rtol=1e-5)
        assert counts.captures == 0 and counts.launches == 0, vars(counts)


@check
def graphs_are_worth_it_only_with_many_steps():
    """The cost model: many steps over small arrays replay; one kernel over large ones not."""
    assert graphs.worth(40, 16 << 20)  # a training step: 40 steps, 16 MB of arguments
    assert not graphs.worth(1, 800 << 20)  # one kernel over 400 MB in and out
    assert not graphs.worth(2, 0)  # two small kernels: the copies cost as much


@check
def graphs_shared_by_threads():
    """A call finding the graph busy runs the driver itself. On a card: four threads call one
    replayed program at once; under the simulator (no concurrent kernels) the graph's lock is
    held while calling. Every result matches numpy."""
    def run(x, y):
        h = jnp.tanh(x * y + 1.0)
        return jnp.sum(h * h, axis=0), h - y

    def check_call(f, rng) -> None:
        x, y = rng.normal(size=(2, 5, 3)).astype(np.float32)
        s, d = f(x, y)
        h = np.tanh(x.astype(np.float64) * y + 1.0)
        np.testing.assert_allclose(np.asarray(s), np.sum(h * h, axis=0), rtol=1e-5)
        np.testing.assert_allclose(np.asarray(d), h - y, rtol=1e-5, atol=1e-6)

    errors: list = []
    with replay_everything() as counts:
        f = gjit(run)
        for _ in range(3):  # warm-up and capture on this thread
            check_call(f, RNG)
        assert counts.captures == 1 and counts.launches == 1, vars(counts)
        if cuda_runtime.simulator_enabled():
            (entry,) = f._cache.values()
            replay = entry.exe.driver
            assert isinstance(replay, graphs.GraphReplay), type(replay)
            with replay.lock:  # busy: the driver runs, the graph is not launched
                check_call(f, RNG)
            assert counts.launches == 1, vars(counts)
            check_call(f, RNG)
            assert counts.launches == 2, vars(counts)
            return

        def worker(seed: int) -> None:
            rng = np.random.default_rng(seed)
            try:
                for _ in range(4):
                    check_call(f, rng)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert counts.captures == 1 and counts.launches >= 2, vars(counts)


@check
def graphs_copies_every_buffer_whole():
    """The one-launch copy a replay uses for its inputs and outputs (graphs.Copies): buffers of
    several sizes and dtypes, an empty one skipped, each copied whole and nothing past it."""
    sizes = [1, 0, 300, 7, 1025]
    dtypes = [np.float32, np.float32, np.int64, np.uint8, np.float64]
    srcs = [(RNG.normal(size=n) * 100).astype(dt) for n, dt in zip(sizes, dtypes)]
    dst_host = [np.full(n + 3, 77, dt) for n, dt in zip(sizes, dtypes)]
    dsts = [cuda_runtime.to_device(d) for d in dst_host]
    graphs.Copies(sizes)([d[:n] for d, n in zip(dsts, sizes)],
                         [cuda_runtime.to_device(s) for s in srcs])
    for d, s, n in zip(dsts, srcs, sizes):
        got = cuda_runtime.to_host(d, (n + 3,))
        np.testing.assert_array_equal(got[:n], s)
        np.testing.assert_array_equal(got[n:], 77)  # past the copied size: untouched
