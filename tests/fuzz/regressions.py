"""Programs on which the fuzzer found a mismatch, minimal as hypothesis shrank them; each is
fixed and runs in CI (test_fuzz.py). The comment says what was wrong."""
from __future__ import annotations

from tests.fuzz.programs import Input, Node, Program

REGRESSIONS: dict[str, Program] = {
    # compiler/passes.py folded x / (1+0j) to x: numpy's complex division turns a nan or inf
    # part into nan+nanj (jit gave nan-2.38j, eager nan+nanj)
    "complex-div-by-one": Program(inputs=(Input(shape=(), dtype='int64', fill='special', layout='F', seed=471), Input(shape=(), dtype='complex64', fill='special', layout='reversed', seed=570)), nodes=(Node(op='fori', args=(1,), params=(('hi', 3), ('lo', 2)), bodies=((Node(op='flip', args=(0,), params=(('axis', None),), bodies=()), Node(op='flip', args=(0,), params=(('axis', None),), bodies=())),)), Node(op='mean', args=(2,), params=(('axis', None), ('keepdims', False)), bodies=())), outputs=(3, 0), transform='vmap', batch=2, in_axes=(None, 0)),  # noqa: E501
    # add_any's batching left an unbatched 0-d cotangent beside a batched one: tracing
    # jit(vmap(grad)) through a cond with a batched predicate raised IndexError
    "vmap-grad-cond-add-any": Program(inputs=(Input(shape=(), dtype='float64', fill='smooth', layout='strided', seed=637), Input(shape=(), dtype='bool', fill='index', layout='readonly', seed=1)), nodes=(Node(op='reshape', args=(0,), params=(('shape', (1,)),), bodies=()), Node(op='mean', args=(0,), params=(('axis', None), ('keepdims', True)), bodies=()), Node(op='cond', args=(1, 0), params=(), bodies=((), (Node(op='flip', args=(0,), params=(('axis', None),), bodies=()), Node(op='flip', args=(1,), params=(('axis', None),), bodies=()), Node(op='square', args=(1,), params=(), bodies=()))))), outputs=(4, 0), transform='vmap_grad', batch=1, in_axes=(0, 0)),  # noqa: E501
    # cpu/runtime/kernels.py made library results C-contiguous with np.ascontiguousarray,
    # which turns 0-d into shape (1,): jit(dynamic_slice) of a scalar returned f64[1]
    "zero-d-dynamic-slice": Program(inputs=(Input(shape=(), dtype='float64', fill='normal', layout='C', seed=0),), nodes=(Node(op='dynamic_slice', args=(0,), params=(('sizes', ()), ('starts', ())), bodies=()),), outputs=(1,), transform='jit', batch=0, in_axes=()),  # noqa: E501
    # numpy.remainder gives a zero remainder the divisor's sign (npy_divmod) and floor_divide
    # snaps (a - fmod(a, b)) / b, not floor(a / b); numbax gave +0.0 and 10.0 for 1.0 // 0.1
    "remainder-signed-zero": Program(inputs=(Input(shape=(), dtype='float64', fill='normal', layout='C', seed=0), Input(shape=(3,), dtype='float64', fill='normal', layout='C', seed=0), Input(shape=(3,), dtype='float64', fill='special', layout='C', seed=0)), nodes=(Node(op='remainder', args=(1, 2), params=(), bodies=()),), outputs=(3,), transform='jit', batch=0, in_axes=()),  # noqa: E501
    # Numba's cmath: tanh(inf + tiny j) gave nan+nanj under jit, numpy 1+0j (C99 rules);
    # complex transcendental functions now run numpy's implementation on the CPU
    "complex-tanh-inf": Program(inputs=(Input(shape=(), dtype='complex64', fill='special', layout='C', seed=377), Input(shape=(), dtype='int64', fill='normal', layout='C', seed=0)), nodes=(Node(op='tanh', args=(0,), params=(), bodies=()),), outputs=(2,), transform='jit', batch=0, in_axes=()),  # noqa: E501
    # Numba's complex log overflowed inside: log of a complex64 near float32's largest value
    # gave inf under jit, numpy 89.07; complex log/sqrt/expm1/log1p now run numpy's
    "complex-log-overflow": Program(inputs=(Input(shape=(), dtype='float64', fill='normal', layout='C', seed=0), Input(shape=(), dtype='complex64', fill='special', layout='C', seed=80)), nodes=(Node(op='log', args=(1,), params=(), bodies=()),), outputs=(2,), transform='jit', batch=0, in_axes=()),  # noqa: E501
    # Documented, not fixed (sharp_bits.md): a complex product that overflows is non-finite
    # both ways, but numpy's FMA loop gave -inf+infj where compiled code gave nan+infj; the
    # oracle now checks only that both are non-finite there (found by the 16-core soak)
    "complex-square-overflow": Program(inputs=(Input(shape=(), dtype='float64', fill='normal', layout='C', seed=0), Input(shape=(2, 3), dtype='complex64', fill='special', layout='C', seed=0), Input(shape=(), dtype='bool', fill='index', layout='C', seed=0)), nodes=(Node(op='cond', args=(2, 1), params=(), bodies=((), (Node(op='negative', args=(0,), params=(), bodies=()), Node(op='negative', args=(0,), params=(), bodies=()), Node(op='multiply', args=(0, 0), params=(), bodies=())))),), outputs=(3,), transform='vmap', batch=3, in_axes=(0, 0, 0)),  # noqa: E501
    # the fuzzer's astype ran numpy's own cast on a numpy input (no numbax involved), and
    # numpy's vectorised float64 -> uint32 loop gives 2**31 for -inf where its scalar path
    # (and numbax) give 0: the harness casts through jnp, the reference as numpy's scalar path
    "astype-uint32-of-minus-inf": Program(inputs=(Input(shape=(1, 3, 3), dtype='float64', fill='special', layout='C', seed=0),), nodes=(Node(op='astype', args=(0,), params=(('dtype', 'uint32'),), bodies=()),), outputs=(1,), transform='jit', batch=0, in_axes=()),  # noqa: E501
    # The harness's reference, not numbax, was wrong: numpy gives 0 for an integer divided
    # by zero where JAX (and numbax) give XLA's -2 or -1 (docs/sharp_bits.md), and numpy's
    # cumsum widens int8 to int64 where JAX keeps int8, and its mean of int32 is float64 where
    # JAX's is float32 (found by a soak with seed 4117)
    "floor-divide-int-by-zero": Program(inputs=(Input(shape=(1,), dtype='int64', fill='normal', layout='C', seed=0), Input(shape=(), dtype='int64', fill='normal', layout='C', seed=0)), nodes=(Node(op='scan', args=(1, 0), params=(('out', 'ys'), ('reverse', False)), bodies=((Node(op='negative', args=(0,), params=(), bodies=()), Node(op='floor_divide', args=(0,), params=(('lit', 0),), bodies=())),)),), outputs=(2,), transform='jit', batch=0, in_axes=()),  # noqa: E501
    "cumsum-int8-keeps-dtype": Program(inputs=(Input(shape=(), dtype='int8', fill='normal', layout='C', seed=0), Input(shape=(), dtype='float64', fill='normal', layout='C', seed=0)), nodes=(Node(op='cumsum', args=(0,), params=(('axis', None),), bodies=()),), outputs=(2,), transform='jit', batch=0, in_axes=()),  # noqa: E501
    "mean-int32-is-float32": Program(inputs=(Input(shape=(), dtype='int32', fill='normal', layout='C', seed=0), Input(shape=(), dtype='float64', fill='normal', layout='C', seed=0)), nodes=(Node(op='mean', args=(0,), params=(('axis', None), ('keepdims', False)), bodies=()),), outputs=(2,), transform='jit', batch=0, in_axes=()),  # noqa: E501
    # The harness took the mean of integers as exact: int64's extremes cancel in its float64
    # sum, whose order (jit's blocks, eager's pairwise, vmap's) moves the result by units; its
    # tolerance is now that of a reordered sum (found by a soak with seed 4243)
    "mean-int64-extremes-cancel": Program(inputs=(Input(shape=(3, 3, 3), dtype='int64', fill='special', layout='F', seed=5), Input(shape=(), dtype='float64', fill='normal', layout='C', seed=0)), nodes=(Node(op='mean', args=(0,), params=(('axis', None), ('keepdims', False)), bodies=()),), outputs=(2,), transform='vmap', batch=2, in_axes=(0, 0)),  # noqa: E501
    # cpu/loops._narrow_columns wrote a leading-axis reduction of rows holding no element out
    # element by element: no line, and the kernel did not parse (IndentationError)
    "grad-column-reduction-of-empty-rows": Program(inputs=(Input(shape=(), dtype='float64', fill='smooth', layout='C', seed=0), Input(shape=(1, 0), dtype='float64', fill='smooth', layout='C', seed=0), Input(shape=(), dtype='float64', fill='smooth', layout='C', seed=0), Input(shape=(), dtype='float64', fill='smooth', layout='C', seed=0), Input(shape=(0,), dtype='float64', fill='smooth', layout='C', seed=0)), nodes=(Node(op='square', args=(0,), params=(), bodies=()), Node(op='add', args=(0, 2), params=(), bodies=()), Node(op='square', args=(0,), params=(), bodies=()), Node(op='add', args=(0, 3), params=(), bodies=()), Node(op='add', args=(1, 4), params=(), bodies=())), outputs=(9,), transform='grad', batch=0, in_axes=()),  # noqa: E501
    # passes.expand_small_dots wrote a batched product over an empty contraction as a sum of
    # no terms (IndexError)
    "vmap-dot-of-empty-contraction": Program(inputs=(Input(shape=(1, 0), dtype='float64', fill='normal', layout='C', seed=0), Input(shape=(0,), dtype='float64', fill='normal', layout='C', seed=0)), nodes=(Node(op='dot', args=(0, 1), params=(('batch', False), ('form', 'dot'), ('k', 0)), bodies=()),), outputs=(2,), transform='vmap', batch=1, in_axes=(0, 0)),  # noqa: E501
    # cpu/pool_tasks.chunk_layout took the largest rank of a nest's arrays, and a nest of the
    # gradient of sum(flip(x)) had none (max() of an empty sequence; found by a soak with
    # seed 4120)
    "grad-sum-flip-nest-without-arrays": Program(inputs=(Input(shape=(), dtype='float64', fill='smooth', layout='C', seed=0), Input(shape=(2, 1), dtype='float64', fill='smooth', layout='C', seed=0)), nodes=(Node(op='flip', args=(1,), params=(('axis', 0),), bodies=()), Node(op='sum', args=(2,), params=(('axis', None), ('keepdims', False)), bodies=())), outputs=(3,), transform='grad', batch=0, in_axes=()),  # noqa: E501
    # The harness's reference cast a scatter's float updates into uint8 with numpy's cast
    # (-1.3 wraps to 255) where JAX's `.at[]` saturates (0), as numbax does (seed 4120)
    "scatter-float-into-uint8-saturates": Program(inputs=(Input(shape=(3,), dtype='uint8', fill='normal', layout='C', seed=0), Input(shape=(), dtype='uint8', fill='normal', layout='C', seed=0), Input(shape=(2,), dtype='float64', fill='normal', layout='C', seed=2)), nodes=(Node(op='scatter', args=(0, 2), params=(('idx', (0, 1)), ('mode', 'set')), bodies=()),), outputs=(3,), transform='jit', batch=0, in_axes=()),  # noqa: E501
    # cpu/runtime/gemm_operands.flat3 reshaped a batch of 0 matrices to (0, -1), which numpy cannot
    # infer: the gradient of a batched product with an empty batch raised ValueError under
    # jit (a soak with --parallel-arms prange, seed 17; it fails without them too)
    "grad-batched-product-of-no-matrices": Program(inputs=(Input(shape=(0, 1, 1), dtype='float64', fill='smooth', layout='C', seed=0), Input(shape=(0, 1, 0), dtype='float64', fill='smooth', layout='C', seed=0)), nodes=(Node(op='negative', args=(0,), params=(), bodies=()), Node(op='negative', args=(0,), params=(), bodies=()), Node(op='dot', args=(0, 1), params=(('batch', True), ('form', 'matmul'), ('k', 0)), bodies=())), outputs=(4,), transform='grad', batch=0, in_axes=()),  # noqa: E501
    # The harness's reference took np.maximum, which gives -0.0 for maximum(0, -0.0) by the
    # operands' order; JAX (and numbax) give +0.0 either way (seed 17)
    "maximum-of-signed-zeros": Program(inputs=(Input(shape=(), dtype='int64', fill='normal', layout='C', seed=1), Input(shape=(), dtype='float64', fill='normal', layout='C', seed=0), Input(shape=(), dtype='float64', fill='normal', layout='C', seed=0), Input(shape=(), dtype='float64', fill='special', layout='C', seed=9)), nodes=(Node(op='absolute', args=(0,), params=(), bodies=()), Node(op='absolute', args=(0,), params=(), bodies=()), Node(op='add', args=(0, 2), params=(), bodies=()), Node(op='maximum', args=(0, 3), params=(), bodies=())), outputs=(7,), transform='jit', batch=0, in_axes=()),  # noqa: E501
}
