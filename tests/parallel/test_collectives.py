"""collectives.Comm's large reductions without worker processes: each device is a thread,
the parent's barrier a threading.Barrier, and the operands, slots, notes and arena lie in one
block of a real shared-memory segment that the threads share through one shm.Attachments. So
one group can mix operands read in place with staged ones (through the public API every device
gets the same kind), checked bit for bit against the group-order reduction."""
import gc
import pickle
import threading

import numpy as np
import pytest

from numbax._src.parallel import collectives, shm

UFUNCS = {"sum": np.add, "max": np.maximum, "min": np.minimum}


class _Parent:
    """A Comm's conn: each send is an arrival at the group's barrier, answered "go"."""

    def __init__(self, n: int) -> None:
        self.barrier = threading.Barrier(n, timeout=30)

    def send_bytes(self, data: bytes) -> None:  # (parallel.send_plain's messages)
        msg = pickle.loads(data)
        assert msg[0] == "barrier" and msg[2] is None
        self.barrier.wait()

    def recv(self) -> tuple:
        return ("go",)


def _run_group(region, operands, op, slot_bytes, arena_bytes, calls):
    """Each rank's results of `calls` reductions of its operand (threads), and the notes."""
    n = len(operands)
    scratch = region[:n * slot_bytes].reshape(n, slot_bytes)
    at = n * slot_bytes
    notes = region[at:at + n * collectives.NOTE_BYTES].reshape(n, collectives.NOTE_BYTES)
    at += n * collectives.NOTE_BYTES
    arena = region[at:at + arena_bytes]
    parent, attachments = _Parent(n), _ATTACHMENTS
    results, errors = [None] * n, []

    def device(rank: int) -> None:
        comm = collectives.Comm(parent, ("i",), (n,), rank, tuple(range(n)), scratch, arena,
                                notes, attachments)
        try:
            results[rank] = [comm.reduce_elementwise("psum", "i", [operands[rank]], op)[0]
                             for _ in range(calls)]
        except BaseException as err:  # noqa: BLE001 - re-raised in the test
            errors.append(err)
            parent.barrier.abort()

    threads = [threading.Thread(target=device, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results, [int(notes[r, :8].view(np.int64)[0]) for r in range(n)]


_ATTACHMENTS = shm.Attachments()


@pytest.mark.parametrize("dtype,op", [(np.float16, "sum"), (np.float32, "max"),
                                      (np.int8, "sum"), (np.float64, "min")])
def test_mixed_in_place_and_staged_operands_reduce_in_group_order(dtype, op):
    """Ranks 0 and 2 read in place (at unaligned offsets of an input area), rank 1 staged; an
    odd length; the arena holds one result, so the second call lands in the slots. Every rank
    gets the bits of ((p0 op p1) op p2), both times."""
    rng = np.random.default_rng(0)
    itemsize = np.dtype(dtype).itemsize
    size = collectives.CHUNKED_REDUCE_BYTES // itemsize + 7
    values = [(rng.normal(size=size) * 50).astype(dtype) for _ in range(3)]
    want = values[0].copy()
    for v in values[1:]:
        UFUNCS[op](want, v, out=want)
    slot_bytes = arena_bytes = shm.aligned(values[0].nbytes)
    inputs_at = 3 * slot_bytes + 3 * collectives.NOTE_BYTES + arena_bytes
    total = inputs_at + 2 * values[0].nbytes + 64 * itemsize
    heap = shm.heap()
    block = heap.alloc("test", total, "the test's buffers")
    region = shm.view(_ATTACHMENTS.get(block.segment), block.offset, (total,), np.uint8)
    offsets = [inputs_at + 8 * itemsize, None, inputs_at + (size + 24) * itemsize]
    operands = []
    for v, offset in zip(values, offsets, strict=True):
        if offset is None:
            operands.append(v.copy())
        else:
            operands.append(region[offset:offset + v.nbytes].view(dtype))
            operands[-1][...] = v
    results, notes = _run_group(region, operands, op, slot_bytes, arena_bytes, calls=2)
    assert notes == [block.offset + offsets[0], -1, block.offset + offsets[2]]
    for rank_results in results:
        for got in rank_results:
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    first = [r[0] for r in results]
    assert all(np.shares_memory(first[0], f) for f in first)  # one arena copy for all ranks
    assert not np.shares_memory(results[0][1], results[1][1])  # the slot path copies
    del results, first, operands, region, got, rank_results
    gc.collect()
    _ATTACHMENTS.forget([block.segment])
    assert not _ATTACHMENTS._stale  # every view of the segment is gone
    heap.release(block)
