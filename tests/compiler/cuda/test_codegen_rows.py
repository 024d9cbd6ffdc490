"""Generated CUDA source of row groups, float32 logistic and literal shifts (issue 10's speed
targets), rendered without a GPU: partition a traced jaxpr the way the CUDA backend does and
render each loop nest. The values these kernels compute are checked in sim_checks_rows.py
(simulator) and on a real card (benchmarks/bench_cuda.py --check)."""
import re

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler import fusion, ir, pipeline, registry
from numbax._src.compiler.cuda import driver
from numbax._src.compiler.cuda.config import Config

REAL = Config(sim=False)
SIM = Config(sim=True)


def _render(f, *args, cfg=REAL):
    """(source, launches) of each loop nest of `f`'s program on the CUDA backend."""
    closed = numbax.make_jaxpr(f)(*args)
    jaxpr = pipeline.prepare(closed.jaxpr)
    nests = [n for n in fusion.partition(jaxpr, lambda e: registry.fusible(e, "cuda"))
             if isinstance(n, ir.LoopNest)]
    kernels = [driver.render_nest(n, cfg) for n in nests]
    return [(k.source, [(s.function, s.blocks, s.threads) for s in k.launches])
            for k in kernels]


def _softmax_src(shape, dtype=np.float32, cfg=REAL):
    (src, launch), = _render(lambda x: numbax.nn.softmax(x, axis=-1),
                             np.ones(shape, dtype), cfg=cfg)
    return src, launch


def _kernel(src):
    return src[src.index("def kernel"):]


def test_narrow_rows_use_a_warp_per_row_and_read_the_row_once():
    src, launch = _softmax_src((524288, 128))
    body = _kernel(src)
    assert launch == [("kernel", 65536, 256)]  # 8 rows of 32 lanes per block
    assert "cuda.shared.array" not in body and "cuda.syncthreads" not in body
    # max: 5 butterfly steps and the leader's broadcast; sum: 5 butterfly steps
    assert body.count("cuda.shfl_xor_sync(0xffffffff") == 10
    assert body.count("cuda.shfl_sync(0xffffffff") == 1
    # the row is loaded once (4 elements per lane) and kept in registers for all 3 passes
    assert len(re.findall(r"= a0\[", body)) == 4
    assert body.count("math.exp(") == 4  # exp(x - max) is not recomputed for the division
    assert "while q <" not in body
    assert "np.float64(0.0)" in body  # the float32 sum still accumulates in float64


def test_small_widths_use_fewer_lanes_and_guard_the_padding():
    src, launch = _softmax_src((100, 50))
    body = _kernel(src)
    assert "ln = tid % 16" in body and launch == [("kernel", 7, 256)]
    assert "v3 = ln + 48 < 50" in body and "min(ln + 48, 49)" in body
    assert "if rv and v3: o0[np.uint64(f3)]" in body  # unsigned: no wraparound code
    # a row of one element is no reduction at all (passes: a reshape, + 0.0 for a float sum)
    (src1, _), = _render(lambda x: jnp.sum(x, axis=-1), np.ones((10, 1), np.float32))
    assert "shfl" not in _kernel(src1) and "ln = tid" not in src1 and " + c0" in src1


def test_wide_rows_use_one_block_and_one_shared_slot_per_warp():
    src, launch = _softmax_src((16384, 4096))
    body = _kernel(src)
    assert launch == [("kernel", 16384, 256)]  # 8 warps of 16 elements each
    assert "sm0 = cuda.shared.array(8, np.float32)" in body
    assert "sm1 = cuda.shared.array(8, np.float64)" in body
    assert body.count("cuda.syncthreads()") == 2  # one per reduction, no log2(T) tree
    assert body.count("cuda.shfl_xor_sync") == 10
    assert len(re.findall(r"= a0\[np.uint64\(f", body)) == 16  # 16 per thread, read once
    assert "while q <" not in body


def test_rows_too_wide_for_registers_loop_and_reread():
    src, launch = _softmax_src((4, 100000))
    body = _kernel(src)
    assert launch == [("kernel", 4, 256)]
    assert body.count("while q < 100000:") == 3
    assert "cuda.shared.array(8," in body


def test_simulator_config_exchanges_through_shared_memory():
    body = _kernel(_softmax_src((6, 50), cfg=SIM)[0])
    assert "shfl" not in body
    assert "sx0[tid ^ 8]" in body and "sx0 = cuda.shared.array(64, np.float32)" in body


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.uint32, np.bool_])
def test_shuffled_accumulators_are_in_shuffle_types(dtype):
    x = np.ones((8, 64), dtype)
    f = (lambda a: jnp.any(a, axis=-1)) if dtype == np.bool_ else \
        (lambda a: jnp.max(a, axis=-1))
    (src, _), = _render(f, x)
    shuffles = re.findall(r"cuda\.shfl_xor_sync\(0xffffffff, ([^,]+),", src)
    assert shuffles
    want = {np.int32: "acc0", np.uint8: "np.int32(acc0)", np.uint32: "np.int32(acc0)",
            np.bool_: "np.int32(acc0)"}[dtype]
    assert set(shuffles) == {want}


def test_float32_logistic_has_no_ieee_division_and_no_float64():
    (src, _), = _render(numbax.nn.sigmoid, np.ones(1000, np.float32))
    body = _kernel(src)
    assert "sc.logistic_f32(x0_0)" in body
    assert "float64" not in body and " / " not in body
    (src64, _), = _render(numbax.nn.sigmoid, np.ones(1000, np.float64))
    assert "np.float64(1.0) / (np.float64(1.0) + math.exp(-x0_0))" in src64


def test_literal_shifts_are_plain_operators():
    from numbax import random

    def rotate(x):  # threefry's rotation (its own shifts are inside sc.threefry_word now)
        return numbax.lax.shift_left(x, np.uint32(13)) | numbax.lax.shift_right_logical(
            x, np.uint32(19))

    with _X64Off():
        srcs = _render(lambda k: rotate(random.bits(k, (1000,))), random.PRNGKey(0))
    text = "\n".join(s for s, _ in srcs)
    assert "sc.shift_left" not in text and "sc.shift_right_logical" not in text
    assert re.search(r"np\.uint32\(\(t\d+ << c\d+\)\)", text)
    assert re.search(r"np\.uint32\(\(np\.uint32\(t\d+\) >> np\.uint32\(c\d+\)\)\)", text)
    # amounts that are not literals, or over-wide literals, keep the defined semantics
    x = np.ones(8, np.int32)
    (src, _), = _render(numbax.lax.shift_left, x, x)
    assert "sc.shift_left(x0_0, x1_0, 32)" in src
    (src, _), = _render(lambda a: numbax.lax.shift_right_arithmetic(a, np.int32(40)), x)
    assert "sc.shift_right_arithmetic(" in src


class _X64Off:
    def __enter__(self):
        numbax.config.update("jax_enable_x64", False)

    def __exit__(self, *exc):
        numbax.config.update("jax_enable_x64", True)
