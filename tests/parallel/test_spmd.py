"""What the SPMD engine keeps between calls to make a small call cheap (issue 22): the plans
of calls (per program, mesh, shapes and layouts), jit's entry per sharded argument, the
workers' views of shared-memory blocks, result blocks viewed through a segment's lasting
mapping, and exchanges that put their closing barrier off to the next collective. Each test
would catch a stale or unbounded cache: same shapes over another mesh, device order, layout or
dtype; many shapes; a killed worker; unlinked segments; results of earlier calls; threads."""
import ctypes
import gc
import os
import pickle
import signal
import threading
import time
from functools import partial

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.parallel import collectives, pool, shm, spmd
from numbax._src.parallel import shard_map as sm
from numbax.sharding import Mesh, NamedSharding
from numbax.sharding import PartitionSpec as P
from tests.virtual_devices import cpu_devices

N = 4


four_devices = cpu_devices(N)


def _mesh(order=None, shape=(N,), names=("i",)):
    devices = numbax.devices()[:N] if order is None else [numbax.devices()[k] for k in order]
    return Mesh(np.array(devices).reshape(shape), names)


def _plus_position(mesh, in_spec, out_spec):
    """v + 10 * (the device's position on the mesh axis): its numbers show which device
    wrote which block, so a plan kept for another mesh or layout gives wrong ones (a
    replicated result is the first device's)."""
    @partial(numbax.shard_map, mesh=mesh, in_specs=in_spec, out_specs=out_spec,
             check_vma=out_spec != P())
    def body(v):
        return v + 10 * lax.axis_index("i").astype(v.dtype)
    return body


def _want_plus_position(x, split):
    """What _plus_position gives for x split over the mesh (True) or replicated (False):
    each device's block plus 10 times its position; replicated, device 0's value."""
    if not split:
        return x
    blocks = np.split(x, N)
    return np.concatenate([b + 10 * k for k, b in enumerate(blocks)]).astype(x.dtype)


def _live_blocks() -> int:
    gc.collect()
    heap = shm.heap()
    with heap._lock:
        heap._drain()
        return sum(seg.live for seg in heap.segments.values())


# ----------------------------------------------------------------------------- plans


def test_same_shapes_over_other_meshes_layouts_and_dtypes_use_their_own_plans():
    x = np.arange(16.0)
    for order in (None, [3, 2, 1, 0], [1, 0, 3, 2]):
        mesh = _mesh(order)
        split = numbax.jit(_plus_position(mesh, P("i"), P("i")))
        for dtype in (np.float32, np.float64, np.int32, jnp.bfloat16):
            xd = x.astype(dtype)
            got = split(numbax.device_put(xd, NamedSharding(mesh, P("i"))))
            assert np.asarray(got).dtype == dtype
            np.testing.assert_array_equal(np.asarray(got), _want_plus_position(xd, True))
        # the same shapes replicated: every device adds its own position, device 0 writes
        replicated = numbax.jit(_plus_position(mesh, P(), P()))
        got = replicated(numbax.device_put(x, NamedSharding(mesh, P())))
        np.testing.assert_array_equal(np.asarray(got), x)


def test_messages_name_dtypes_by_strings_only_where_the_string_names_them_again():
    """The workers' messages carry dtypes as strings (cheaper to pickle); bfloat16's string
    ('<V2') would come back as raw bytes, so it travels as itself."""
    for dtype in (np.float32, np.dtype(">f8"), np.int8, np.bool_, np.complex64, np.uint64,
                  jnp.bfloat16):
        wired = spmd.wire_dtype(dtype)
        assert np.dtype(wired) == np.dtype(dtype)
        assert isinstance(wired, str) == (np.dtype(dtype) != np.dtype(jnp.bfloat16))


def test_one_jitted_function_over_arguments_of_one_shape_laid_out_differently():
    """jit's entry is found by each argument's sharding: the results' layouts follow the
    argument's mesh (device order included) and spec (three rounds: the third call of each
    takes jit's quick path for ShardedArrays, sharded_jit.quick_call)."""
    f = numbax.jit(lambda v: (v * 2 + 1, jnp.sum(v, axis=0)))
    x = np.arange(32.0).reshape(8, 4)
    for _ in range(3):
        for order, spec in ((None, P("i")), ([3, 2, 1, 0], P("i")), (None, P()),
                            ([1, 0, 3, 2], P(None, "i")), (None, P("i"))):
            sharding = NamedSharding(_mesh(order), spec)
            doubled, total = f(numbax.device_put(x, sharding))
            np.testing.assert_array_equal(np.asarray(doubled), x * 2 + 1)
            np.testing.assert_array_equal(np.asarray(total), x.sum(0))
            assert doubled.sharding == sharding
            assert [s.device for s in doubled.addressable_shards] == \
                list(sharding.mesh.devices.flat)


def test_jits_quick_path_for_sharded_arguments(monkeypatch):
    """After two calls, a jitted shard_map over ShardedArrays of the same shapes, dtypes and
    shardings skips sharded_jit.call (same dtypes, weak types, shardings and numbers as the
    full path gave); a new shape, a trace or an override takes it."""
    from numbax._src.sharding import sharded_jit

    mesh = _mesh()
    f = numbax.jit(_plus_position(mesh, P("i"), P("i")))
    put = partial(numbax.device_put, device=NamedSharding(mesh, P("i")))
    x32, x64 = put(np.arange(8, dtype=np.float32)), put(np.arange(8.0))
    i32 = put(np.arange(8, dtype=np.int32))
    firsts = {}
    for name, x in (("x32", x32), ("x64", x64), ("i32", i32)):
        for _ in range(2):
            firsts[name] = f(x)
    full = sharded_jit.call
    taken = []
    monkeypatch.setattr(sharded_jit, "call", lambda *a: taken.append(1) or full(*a))
    for name, x in (("x32", x32), ("x64", x64), ("i32", i32)):
        got = f(x)
        assert got.dtype == firsts[name].dtype and got.sharding == firsts[name].sharding
        assert got.weak_type == firsts[name].weak_type
        np.testing.assert_array_equal(np.asarray(got),
                                      _want_plus_position(np.asarray(x), True))
    assert not taken
    np.testing.assert_array_equal(np.asarray(f(put(np.arange(16.0)))),
                                  _want_plus_position(np.arange(16.0), True))
    assert taken  # a new shape
    taken.clear()
    np.testing.assert_array_equal(np.asarray(numbax.jit(lambda v: f(v) * 2)(x64)),
                                  2 * _want_plus_position(np.arange(8.0), True))
    with numbax.config.override("jax_enable_x64", True):
        f(x64)
    assert taken  # inside a trace and under an override: the full path


def test_eager_shard_map_and_pmap_over_reordered_devices():
    x = np.arange(8.0)
    for order in (None, [2, 3, 0, 1]):
        mesh = _mesh(order)
        got = _plus_position(mesh, P("i"), P("i"))(x)
        np.testing.assert_array_equal(np.asarray(got), _want_plus_position(x, True))
    stacked = np.arange(8.0).reshape(N, 2)
    for devices in (numbax.devices()[:N], numbax.devices()[:N][::-1]):
        f = numbax.pmap(lambda v: v * 2 + lax.axis_index("i"), axis_name="i",
                        devices=devices)
        got = np.asarray(f(stacked))
        np.testing.assert_array_equal(got, stacked * 2 + np.arange(N)[:, None])


def test_many_shapes_keep_a_bounded_number_of_plans_and_no_blocks():
    mesh = _mesh()
    body = _plus_position(mesh, P("i"), P("i"))
    before = _live_blocks()
    with numbax.disable_jit():  # eager workers: no compile per shape
        for n in range(1, 41):
            x = np.arange(N * n, dtype=np.float64)
            np.testing.assert_array_equal(np.asarray(body(x)), _want_plus_position(x, True))
    programs = [p for _, p in sm._programs.values() if p is not None]
    assert programs and all(len(p._plans) <= p.MAX_PLANS for p in programs)
    assert _live_blocks() == before


def test_a_program_keeps_its_most_recent_plans():
    program = spmd.Program(-1, b"", [], 0, set(), [])
    made = []

    def make(k):
        made.append(k)
        return k

    for k in range(program.MAX_PLANS + 8):
        assert program.plan(k, lambda k=k: make(k)) == k
    assert len(program._plans) == program.MAX_PLANS
    assert program.plan(program.MAX_PLANS + 7, lambda: make(None)) == program.MAX_PLANS + 7
    assert program.plan(0, lambda: make("again")) == "again"  # dropped, so made again
    assert made[-1] == "again" and None not in made


# ----------------------------------------------------------------------------- results


def test_results_stay_valid_and_independent_across_calls():
    mesh = _mesh()
    f = numbax.jit(_plus_position(mesh, P("i"), P("i")))
    sharding = NamedSharding(mesh, P("i"))
    before = _live_blocks()
    xs = [np.arange(16.0) * k for k in range(1, 6)]
    outs = [f(numbax.device_put(x, sharding)) for x in xs]
    for out, x in zip(outs, xs, strict=True):
        np.testing.assert_array_equal(np.asarray(out), _want_plus_position(x, True))
    views = [np.asarray(o) for o in outs]
    assert not any(np.shares_memory(a, b) for k, a in enumerate(views) for b in views[k + 1:])
    again = f(outs[0])  # a result as the next call's argument, read where it lies
    np.testing.assert_array_equal(np.asarray(again),
                                  _want_plus_position(_want_plus_position(xs[0], True), True))
    del outs, views, again, out
    assert _live_blocks() == before


def test_a_result_block_returns_to_the_heap_with_its_last_view():
    heap = shm.heap()
    before = _live_blocks()
    block, value = shm.alloc_array("test", (6, 4), np.float32, "a result")
    value[...] = np.arange(24.0).reshape(6, 4)
    assert heap.home(value[2:4]).offset == block.offset + 2 * 4 * 4
    row = value[5]
    del value
    assert _live_blocks() == before + 1  # the row keeps the block
    np.testing.assert_array_equal(row, [20, 21, 22, 23])
    del row
    assert _live_blocks() == before


def test_small_blocks_take_whole_cache_lines_and_large_ones_whole_pages():
    """A loop that keeps its scalar results (a loss history) takes a cache line of
    /dev/shm for each, not a page; blocks never share a cache line (workers write them)."""
    heap = shm.heap()
    blocks = [heap.alloc("test", n, "a result") for n in (1, 8, 64, 65, shm.PAGE - 1)]
    large = heap.alloc("test", shm.PAGE + 1, "a result")
    try:
        assert [b.nbytes for b in blocks] == [64, 64, 64, 128, shm.PAGE]
        assert large.nbytes == 2 * shm.PAGE
        for b in [*blocks, large]:
            assert b.offset % 64 == 0
        spans = sorted((b.segment, b.offset, b.offset + b.nbytes) for b in [*blocks, large])
        for (seg, _, end), (next_seg, start, _) in zip(spans, spans[1:]):
            assert seg != next_seg or end <= start  # disjoint
    finally:
        for b in [*blocks, large]:
            heap.release(b)


def test_home_finds_a_view_among_many_live_blocks_and_none_of_freed_ones():
    """Heap.home searches the blocks' sorted addresses (pmap asks it for every argument of
    every call: a scan of 1000 live results cost 0.45 ms a call). Each live block's rows are
    found at their offsets; the bytes of a freed block and memory outside the heap are not;
    the freed blocks' entries are compacted away."""
    heap = shm.heap()
    arrays = [shm.alloc_array("test", (4, 8), np.float64, "a result") for _ in range(300)]
    freed = []
    for k in range(300):  # nine blocks in ten back to the heap
        if k % 10:
            freed.append(arrays[k][1].__array_interface__["data"][0])
            arrays[k] = None
    gc.collect()
    kept = [a for a in arrays if a is not None]
    for block, value in kept:
        found = heap.home(value[2:3])
        assert (found.segment, found.offset, found.nbytes) == \
            (block.segment, block.offset + 2 * 8 * 8, 8 * 8)
        assert heap.home(value[:, 1:3]) is None  # not C-contiguous
    assert len(heap._addresses) <= 2 * len(heap._homes) + 64  # compacted
    for address in freed:  # (nothing was allocated since: no live block holds these bytes)
        probe = np.ndarray((8,), np.float64, buffer=(ctypes.c_char * 64).from_address(address))
        assert heap.home(probe) is None
    assert heap.home(np.zeros(8)) is None


# ----------------------------------------------------------------------------- workers


def test_calls_after_the_heap_unlinks_its_segments_map_the_new_ones():
    mesh = _mesh()
    f = numbax.jit(_plus_position(mesh, P("i"), P("i")))
    sharding = NamedSharding(mesh, P("i"))
    x = np.arange(16.0)
    np.testing.assert_array_equal(np.asarray(f(numbax.device_put(x, sharding))),
                                  _want_plus_position(x, True))
    gc.collect()
    shm.heap().trim()  # the segments the workers hold views of are unlinked
    for k in range(3):
        y = x + k
        np.testing.assert_array_equal(np.asarray(f(numbax.device_put(y, sharding))),
                                      _want_plus_position(y, True))


def test_after_a_killed_worker_a_cached_call_raises_then_runs():
    mesh = _mesh()
    f = numbax.jit(partial(numbax.shard_map, mesh=mesh, in_specs=P("i"), out_specs=P())(
        lambda v: lax.psum(v.sum(keepdims=True), "i")))
    x = numbax.device_put(np.arange(16.0), NamedSharding(mesh, P("i")))
    np.testing.assert_array_equal(np.asarray(f(x)), [120.0])
    victim = pool._POOL.worker(1).proc
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=5)
    with pytest.raises(RuntimeError, match=r"CpuDevice\(id=1\) died"):
        f(x)
    np.testing.assert_array_equal(np.asarray(f(x)), [120.0])


def test_threads_calling_one_jitted_shard_map():
    mesh = _mesh()
    f = numbax.jit(_plus_position(mesh, P("i"), P("i")))
    sharding = NamedSharding(mesh, P("i"))
    f(numbax.device_put(np.zeros(8), sharding))
    errors = []

    def caller(seed: int) -> None:
        try:
            for k in range(30):
                x = np.arange(8.0) * seed + k
                got = np.asarray(f(numbax.device_put(x, sharding)))
                np.testing.assert_array_equal(got, _want_plus_position(x, True))
        except BaseException as err:  # noqa: BLE001 - re-raised below
            errors.append(err)

    threads = [threading.Thread(target=caller, args=(s,)) for s in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


# ----------------------------------------------------------------------------- exchanges


def test_collectives_in_a_row_over_one_and_two_axes():
    """Small psums, all_gathers and ppermutes in a row (each one barrier, the slots' halves
    alternating), over "x", then "y", then both, then a large psum (reduce-scatter, which
    settles the put-off barrier first), on a 2 x 2 mesh; against numpy."""
    mesh = _mesh(shape=(2, 2), names=("x", "y"))

    @numbax.jit
    @partial(numbax.shard_map, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))
    def body(v):
        a = lax.psum(v, "x")
        b = lax.psum(a * 2, "x")
        c = lax.psum(b + v, "y")
        d = lax.all_gather(c, "x", tiled=True)[:v.shape[0]]
        e = lax.ppermute(d, "y", perm=[(0, 1), (1, 0)])
        f = lax.psum(e, ("x", "y"))
        big = lax.psum(jnp.broadcast_to(f[:1, :1], (512, 512)), "x")  # 1 MiB of float32
        return f + big[:v.shape[0], :v.shape[1]]

    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    blocks = {(i, j): x[2 * i:2 * i + 2, 4 * j:4 * j + 4] for i in range(2) for j in range(2)}
    a = {k: blocks[(0, k[1])] + blocks[(1, k[1])] for k in blocks}
    b = {k: 2 * (a[(0, k[1])] + a[(1, k[1])]) for k in blocks}
    c = {k: b[(k[0], 0)] + blocks[(k[0], 0)] + b[(k[0], 1)] + blocks[(k[0], 1)]
         for k in blocks}
    d = {k: np.concatenate([c[(0, k[1])], c[(1, k[1])]])[:2] for k in blocks}
    e = {k: d[(k[0], 1 - k[1])] for k in blocks}
    f = {k: sum(e.values()) for k in blocks}
    want = np.block([[f[(i, j)] + 2 * f[(i, j)][0, 0] for j in range(2)] for i in range(2)])
    x_sharded = numbax.device_put(x, NamedSharding(mesh, P("x", "y")))
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(body(x_sharded)), want, rtol=1e-6)


class _Barriers:
    """A Comm's conn for threads: a threading.Barrier per group (by its members)."""

    def __init__(self) -> None:
        self.barriers: dict[tuple, threading.Barrier] = {}
        self.lock = threading.Lock()

    def send_bytes(self, data: bytes) -> None:  # (parallel.send_plain's messages)
        msg = pickle.loads(data)
        with self.lock:
            barrier = self.barriers.setdefault(msg[1], threading.Barrier(len(msg[1]),
                                                                         timeout=30))
        barrier.wait()

    def recv(self) -> tuple:
        return ("go",)


def test_a_slow_reader_never_sees_a_slot_written_again():
    """Four threads on a 2 x 2 mesh run exchanges in a row over "x", then "y", then "x"...;
    the reader in each group sleeps while reading, so a member that wrote its slot's half
    again before every reader of it was done would change the numbers."""
    n, slot_bytes = 4, collectives.slot_bytes(8 * 8)
    scratch = np.zeros((n, slot_bytes), np.uint8)
    conn = _Barriers()
    axes = ["x", "x", "y", "x", "y", "y", "x", ("x", "y"), "x"]
    results = [None] * n
    errors = []

    def device(rank: int) -> None:
        comm = collectives.Comm(conn, ("x", "y"), (2, 2), rank, tuple(range(n)), scratch)

        def combine(step):
            def total(parts):
                if rank == step % n:
                    time.sleep(0.05)  # the others go on meanwhile
                return sum(p.copy() for p in parts)
            return total

        try:
            results[rank] = [comm.exchange("psum", axis, np.full(8, 100.0 * k + rank),
                                           combine(k)) for k, axis in enumerate(axes)]
        except BaseException as err:  # noqa: BLE001 - re-raised in the test
            errors.append(err)
            for b in conn.barriers.values():
                b.abort()

    threads = [threading.Thread(target=device, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    for rank in range(n):
        coords = divmod(rank, 2)
        for k, axis in enumerate(axes):
            members = [r for r in range(n) if (axis == ("x", "y")) or
                       (axis == "x" and divmod(r, 2)[1] == coords[1]) or
                       (axis == "y" and divmod(r, 2)[0] == coords[0])]
            want = sum(100.0 * k + r for r in members)
            np.testing.assert_array_equal(results[rank][k], np.full(8, want))
